from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from grading.models.choices import CampaignStatus, Policy, Role, Scheme


class Campaign(models.Model):
    """One evaluation task: a measuring instrument defined by its scheme, guidelines, items and policy."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    scheme = models.CharField(max_length=20, choices=Scheme.choices)
    # Scheme parameters, validated by grading.schemes: numeric {min, max, step}; categorical
    # {labels, ordered}; broad_fine {fine_bands}; pairwise {attribute}.
    scheme_params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=CampaignStatus.choices, default=CampaignStatus.DRAFT)
    guidelines_version = models.PositiveIntegerField(default=0, editable=False)
    initial_overlap = models.PositiveSmallIntegerField(default=2)
    max_overlap = models.PositiveSmallIntegerField(default=5)
    budget = models.PositiveIntegerField(null=True, blank=True, help_text="Total judgments allowed; empty = unlimited.")
    policy = models.CharField(max_length=20, choices=Policy.choices, default=Policy.FIXED)
    policy_params = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The campaign as an instrument (docs/design.md §5.5): a sibling rating campaign over the same
    # units (reproducibility) and a pairwise campaign over pairs of its items (resolution).
    sibling_campaign = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="A rating campaign over the same units, for reproducibility.",
    )
    pairwise_campaign = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="A pairwise campaign over pairs of these items, for resolution.",
    )

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(scheme__in=Scheme.values), name="campaign_scheme_valid"),
            models.CheckConstraint(condition=Q(status__in=CampaignStatus.values), name="campaign_status_valid"),
            models.CheckConstraint(condition=Q(policy__in=Policy.values), name="campaign_policy_valid"),
            models.CheckConstraint(condition=Q(initial_overlap__gte=1), name="campaign_initial_overlap_positive"),
            models.CheckConstraint(
                condition=Q(max_overlap__gte=F("initial_overlap")), name="campaign_max_overlap_ge_initial"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.status == CampaignStatus.OPEN


class GuidelinesVersion(models.Model):
    """A version of a campaign's guidelines. Changing the text makes a new version."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "version"], name="guidelines_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="guidelines_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign} guidelines v{self.version}"


class CampaignRole(models.Model):
    """A user's role in one campaign. Admins are staff users and need no role."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="roles")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="campaign_roles")
    role = models.CharField(max_length=10, choices=Role.choices)
    # How organizers see a grader: identities stay hidden from everyone but admins.
    pseudonym = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A grader excluded by an organizer (grading.services.exclusion): their judgments stay in the
    # event log but leave ground truth, agreement and the model (analysis.services.report). Null:
    # included. Only a grader's role carries these.
    excluded_at = models.DateTimeField(null=True, blank=True)
    exclusion_reason = models.CharField(max_length=500, blank=True)
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Excluded by a rule, not a person (a threshold of docs/design.md §5.6, or a qualification).
    exclusion_automatic = models.BooleanField(default=False)
    # When an organizer included the grader again after an automatic exclusion: the thresholds
    # leave them alone from then on (analysis.services.auto_exclusion).
    auto_exclusion_waived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_id", "role", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user", "role"], name="campaign_role_unique"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="campaign_role_valid"),
            models.UniqueConstraint(
                fields=["campaign", "pseudonym"], condition=~Q(pseudonym=""), name="campaign_pseudonym_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.campaign}"
