from django.contrib import admin

from analysis.models import AnalysisRun


@admin.register(AnalysisRun)
class AnalysisRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "campaign",
        "kind",
        "trigger",
        "status",
        "progress",
        "stage",
        "attempts",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "trigger", "kind"]
    search_fields = ["campaign__name", "campaign__slug", "error"]
    readonly_fields = [
        "campaign",
        "kind",
        "parameters",
        "seed",
        "trigger",
        "status",
        "progress",
        "stage",
        "result",
        "error",
        "timings",
        "attempts",
        "task_id",
        "created_by",
        "created_at",
        "not_before",
        "started_at",
        "heartbeat_at",
        "finished_at",
        "shards_total",
        "shards_done",
        "shards_reused",
        "bootstrap_blocks",
        "bootstrap_blocks_reused",
        "slices_total",
        "slices_reused",
    ]
    date_hierarchy = "created_at"

    def has_add_permission(self, request) -> bool:
        return False  # runs start from the report page, the API or `manage.py run_analysis`
