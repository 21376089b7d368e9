"""Crowd studies (docs/design.md §2, "Join links"): a join link per recruitment, and the
participants who came through one, each a pseudonymous grader known to the platform by its id."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q

from grading.models.campaigns import Campaign
from grading.models.choices import CampaignStatus


class Platform(models.TextChoices):
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Mechanical Turk"
    GENERIC = "generic", "Other (pid)"


class JoinLink(models.Model):
    """A link an organizer pastes into a recruitment platform. Whoever opens it with a platform id
    joins the campaign as a pseudonymous grader, up to `max_participants`, until `expires_at`, unless
    it is paused."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="join_links")
    # The secret part of the link's address: unguessable, so a link cannot be found by trying.
    key = models.CharField(max_length=32, unique=True)
    label = models.CharField(max_length=100, blank=True)
    completion_code = models.CharField(max_length=64)
    # Where the participant goes back to when done, with {code} replaced by the completion code
    # (e.g. https://app.prolific.com/submissions/complete?cc={code}); empty: no return link.
    return_url = models.URLField(max_length=500, blank=True)
    max_participants = models.PositiveIntegerField()
    # Units (ordering campaigns: queries) each participant is given; null: all of them.
    units_per_participant = models.PositiveIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    consent_text = models.TextField(blank=True)
    # What a participant earns, from which the participants file computes `pay`: per unit rated and
    # per hour of active time (either, both or neither), in `currency` (a label, e.g. GBP).
    pay_per_unit = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    pay_per_hour = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    # The screening rule, checked by grading.services.qualification: {} (none), or {"units": n gold
    # units given first, "pass_mark": units right (categorical) or the largest mean absolute error
    # (numeric), "screen_out_code": shown to those below it (optional)}.
    qualification = models.JSONField(default=dict, blank=True)
    paused = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign_id", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(max_participants__gte=1), name="join_link_max_participants_positive"),
            models.CheckConstraint(
                condition=Q(units_per_participant__isnull=True) | Q(units_per_participant__gte=1),
                name="join_link_units_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"join link {self.pk} of {self.campaign}"

    def completion_url(self) -> str:
        """The platform's return address with the completion code in it ({code} replaced), or ''."""
        return self.return_url.replace("{code}", self.completion_code) if self.return_url else ""

    def screen_out_code(self) -> str:
        return str((self.qualification or {}).get("screen_out_code") or "")

    def screen_out_url(self) -> str:
        """The platform's return address with the screen-out code in it, or '' (no code or no address)."""
        code = self.screen_out_code()
        return self.return_url.replace("{code}", code) if self.return_url and code else ""

    def closed_reason(self, *, n_participants: int, now: datetime) -> str | None:
        """Why the link takes nobody new ("paused", "expired", "not_open", "full"), or None."""
        if self.paused:
            return "paused"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        if self.campaign.status != CampaignStatus.OPEN:
            return "not_open"
        if n_participants >= self.max_participants:
            return "full"
        return None


class Participant(models.Model):
    """A grader who joined through a link: their platform and platform id (seen by organizers only),
    the study and session ids the platform sent, and the account made for them (no password)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="participants")
    link = models.ForeignKey(JoinLink, on_delete=models.PROTECT, related_name="participants")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participant")
    platform = models.CharField(max_length=10, choices=Platform.choices)
    external_id = models.CharField(max_length=64)
    study_id = models.CharField(max_length=64, blank=True)
    session_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Screening (grading.services.qualification): the rule they were given when they joined (null: the
    # link had none), and its outcome, decided once, when the last qualification unit is rated. The
    # score is §5.6's gold measure: the share answered right, or the mean absolute error (numeric).
    qualification_units = models.PositiveSmallIntegerField(null=True, blank=True)
    qualification_pass_mark = models.FloatField(null=True, blank=True)
    qualification_score = models.FloatField(null=True, blank=True)
    qualified_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "platform", "external_id"], name="participant_unique_id"),
            models.CheckConstraint(condition=Q(platform__in=Platform.values), name="participant_platform_valid"),
            models.CheckConstraint(
                condition=Q(qualified_at__isnull=True) | Q(screened_out_at__isnull=True),
                name="participant_qualified_or_screened_out",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.platform} participant in {self.campaign}"

    @property
    def qualified(self) -> bool | None:
        """True: passed the link's qualification; False: screened out; None: no rule, or not decided yet."""
        if self.screened_out_at is not None:
            return False
        return True if self.qualified_at is not None else None
