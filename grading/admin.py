from django.contrib import admin
from django.http import HttpRequest

from grading.models import (
    Assignment,
    Campaign,
    CampaignRole,
    Candidate,
    CandidateProvenance,
    GradingEvent,
    GuidelinesVersion,
    Judgment,
    Ordering,
    Query,
    System,
    SystemOutput,
    Unit,
)


class GuidelinesInline(admin.StackedInline):
    model = GuidelinesVersion
    extra = 0
    readonly_fields = ("version", "created_at")


class RoleInline(admin.TabularInline):
    model = CampaignRole
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "scheme", "status", "policy", "initial_overlap", "max_overlap", "guidelines_version")
    list_filter = ("scheme", "status", "policy")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ("guidelines_version", "created_at", "updated_at")
    inlines = [GuidelinesInline, RoleInline]


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ("external_id", "title", "campaign", "kind", "public_id")
    list_filter = ("campaign", "kind")
    search_fields = ("external_id", "title", "public_id")


class ProvenanceInline(admin.TabularInline):
    model = CandidateProvenance
    extra = 0


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ("external_id", "campaign", "kind", "public_id")
    list_filter = ("campaign", "kind")
    search_fields = ("external_id", "public_id")
    inlines = [ProvenanceInline]


@admin.register(Unit)
class UnitAdmin(admin.ModelAdmin):
    list_display = ("external_id", "campaign", "query", "candidate", "candidate_b")
    list_filter = ("campaign",)
    search_fields = ("external_id",)
    raw_id_fields = ("query", "candidate", "candidate_b")


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ("name", "campaign")
    list_filter = ("campaign",)


@admin.register(SystemOutput)
class SystemOutputAdmin(admin.ModelAdmin):
    list_display = ("system", "unit", "query", "score")
    list_filter = ("system__campaign",)
    raw_id_fields = ("unit", "query")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("grader", "campaign", "unit", "query", "status", "source", "created_at", "completed_at")
    list_filter = ("campaign", "status", "source")
    raw_id_fields = ("unit", "query", "grader")


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    """Judgments change only through grading events; the admin shows them."""

    list_display = ("grader", "unit", "broad", "fine", "score", "label", "verdict", "guidelines_version", "updated_at")
    list_filter = ("campaign", "broad")
    raw_id_fields = ("unit", "grader", "last_event")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Ordering)
class OrderingAdmin(JudgmentAdmin):
    list_display = ("grader", "query", "items", "guidelines_version", "submitted_at")
    list_filter = ("campaign",)
    raw_id_fields = ("query", "grader", "last_event")


@admin.register(GradingEvent)
class GradingEventAdmin(admin.ModelAdmin):
    """The event log is append-only: read-only here, never deleted."""

    list_display = ("server_ts", "type", "campaign", "grader", "unit", "query", "seq")
    list_filter = ("campaign", "type")
    date_hierarchy = "server_ts"
    search_fields = ("id", "session_id")
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]
