from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest

from grading import schemes
from grading.errors import GradingError
from grading.models import (
    Assignment,
    AuditEntry,
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
from grading.services import lifecycle, members
from grading.services.policy_params import policy_params_clean

# The admin is no back door: changes go through the same services, and respect the same locks,
# as the organizer pages (grading.services.lifecycle, members, campaigns).


class GuidelinesInline(admin.StackedInline):
    """Versions are history: read-only. A new version comes from the campaign form's field."""

    model = GuidelinesVersion
    extra = 0
    readonly_fields = ("version", "text", "created_at")
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class RoleInline(admin.TabularInline):
    model = CampaignRole
    extra = 0
    autocomplete_fields = ("user",)
    readonly_fields = ("pseudonym",)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class CampaignAdminForm(forms.ModelForm):
    new_guidelines = forms.CharField(
        widget=forms.Textarea,
        required=False,
        label="New guidelines version",
        help_text="Text for a new version of the guidelines; leave empty to keep the current one.",
    )

    class Meta:
        model = Campaign
        fields = (
            "name",
            "slug",
            "description",
            "scheme",
            "scheme_params",
            "status",
            "initial_overlap",
            "max_overlap",
            "budget",
            "policy",
            "policy_params",
            "created_by",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        campaign = self.instance
        try:
            if "scheme_params" in data and data.get("scheme"):
                data["scheme_params"] = schemes.normalise_params(data["scheme"], data["scheme_params"])
            if "policy_params" in data:
                data["policy_params"] = policy_params_clean(
                    params=data["policy_params"], scheme=data.get("scheme") or campaign.scheme or None
                )
            if campaign.pk:
                for name in lifecycle.LOCKED_FIELDS:
                    if name in self.changed_data:
                        lifecycle.campaign_lock_check(campaign=campaign, what=name)
                old = Campaign.objects.get(pk=campaign.pk).status
                if "status" in self.changed_data and data.get("status") not in lifecycle.TRANSITIONS.get(old, ()):
                    raise GradingError(f"a {old} campaign cannot become {data.get('status')}.", field="status")
        except GradingError as exc:
            # "policy_params.repeat_share" is shown next to the policy_params field
            name = (exc.field or "").split(".")[0]
            raise ValidationError({name if name in self.fields else None: exc.message}) from None
        return data


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    form = CampaignAdminForm
    list_display = (
        "name",
        "slug",
        "scheme",
        "status",
        "policy",
        "initial_overlap",
        "max_overlap",
        "guidelines_version",
    )
    list_filter = ("scheme", "status", "policy")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [GuidelinesInline, RoleInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Campaign | None = None) -> tuple[str, ...]:
        fixed = ("guidelines_version", "created_at", "updated_at")
        if obj is not None and lifecycle.grading_started(obj):
            return (*fixed, *lifecycle.LOCKED_FIELDS)
        return fixed

    def save_model(self, request: HttpRequest, obj: Campaign, form: CampaignAdminForm, change: bool) -> None:
        data = form.cleaned_data
        text = data.get("new_guidelines") or ""
        if not change:
            fields = {
                k: data[k]
                for k in (
                    "name",
                    "slug",
                    "scheme",
                    "scheme_params",
                    "description",
                    "status",
                    "initial_overlap",
                    "max_overlap",
                    "budget",
                    "policy",
                    "policy_params",
                )
            }
            created = lifecycle.campaign_admin_create(**fields, guidelines=text, actor=request.user)
            obj.pk = created.pk
            obj._state.adding = False
            obj.refresh_from_db()
            return
        # `obj` already holds the form's values; the service compares them with the stored campaign.
        changed = {k: data[k] for k in form.changed_data if k in data and k != "new_guidelines"}
        if text:
            changed["guidelines"] = text
        lifecycle.campaign_admin_update(campaign=obj, actor=request.user, **changed)
        obj.refresh_from_db()

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not CampaignRole:
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)
        campaign = form.instance
        for role in formset.deleted_objects:
            members.member_remove(campaign=campaign, user_id=role.user_id, role=role.role, actor=request.user)
        for role in formset.new_objects:
            members.member_grant(campaign=campaign, user=role.user, role=role.role, actor=request.user)

    def delete_model(self, request: HttpRequest, obj: Campaign) -> None:
        lifecycle.campaign_admin_delete(campaign=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for campaign in queryset:
            lifecycle.campaign_admin_delete(campaign=campaign, actor=request.user)


class ItemsLockedAdmin(admin.ModelAdmin):
    """Items of a campaign that has started grading can be looked at, not changed."""

    # A media URL typed without a scheme is taken as https (Django 6's default, chosen now).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def _started(self, obj: Any) -> bool:
        campaign = getattr(obj, "campaign", None) or getattr(getattr(obj, "candidate", None), "campaign", None)
        return campaign is not None and lifecycle.grading_started(campaign)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and not (obj is not None and self._started(obj))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and not (obj is not None and self._started(obj))

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        base = super().get_form(request, obj, change=change, **kwargs)

        class LockedItemForm(base):
            def clean(self) -> dict[str, Any]:
                data = super().clean()
                campaign = data.get("campaign")
                if campaign is not None and lifecycle.grading_started(campaign):
                    raise ValidationError(f"items cannot change: {lifecycle.LOCK_REASON}.")
                return data

        return LockedItemForm


@admin.register(Query)
class QueryAdmin(ItemsLockedAdmin):
    list_display = ("external_id", "title", "campaign", "kind", "public_id")
    list_filter = ("campaign", "kind")
    search_fields = ("external_id", "title", "public_id")


class ProvenanceInline(admin.TabularInline):
    model = CandidateProvenance
    extra = 0

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not (obj is not None and lifecycle.grading_started(obj.campaign))

    has_add_permission = has_delete_permission = has_change_permission


@admin.register(Candidate)
class CandidateAdmin(ItemsLockedAdmin):
    list_display = ("external_id", "campaign", "kind", "public_id")
    list_filter = ("campaign", "kind")
    search_fields = ("external_id", "public_id")
    inlines = [ProvenanceInline]


@admin.register(Unit)
class UnitAdmin(ItemsLockedAdmin):
    list_display = ("external_id", "campaign", "query", "candidate", "candidate_b")
    list_filter = ("campaign",)
    search_fields = ("external_id",)
    raw_id_fields = ("query", "candidate", "candidate_b")


@admin.register(System)
class SystemAdmin(ItemsLockedAdmin):
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


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The audit trail is append-only: read here, written only by the services that make the changes."""

    list_display = ("at", "actor_name", "campaign_name", "action", "target")
    list_filter = ("action",)
    search_fields = ("actor_name", "campaign_name", "action", "target")
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]
