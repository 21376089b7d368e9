"""Allocation state: what adaptive allocation needs to know about each unit, kept current as
judgments arrive (docs/design.md §5.6, "Cost of next"), so that a grader's next unit is found by an
indexed query instead of by reading the whole campaign."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from grading.models.campaigns import Campaign
from grading.models.items import Unit
from grading.models.judgments import GradingEvent


class NeedReason(models.TextChoices):
    """Why a unit wants one more judgment, or why it does not."""

    DISAGREEMENT = "disagreement", "Judgments disagree"
    CONFUSABLE = "confusable", "Among the most confusable"
    QUERY_DEVIATION = "query_deviation", "Its query disagrees unusually"
    UNCERTAIN = "uncertain", "Model posterior uncertain"
    ORDERINGS_DISAGREE = "orderings_disagree", "Graders' orderings disagree"
    SETTLED = "settled", "Settled"
    BUSY = "busy", "Judgments still open"
    MAX_OVERLAP = "max_overlap", "Maximum overlap reached"
    UNJUDGED = "unjudged", "No judgments yet"


class UnitAllocation(models.Model):
    """Per unit: judgments so far, assignments and open leases, and whether it needs more (and why).

    Rewritten for a unit in the same transaction that records a judgment of it or gives it a new
    assignment; `priority` orders the units that need more (higher first).
    """

    unit = models.OneToOneField(Unit, primary_key=True, on_delete=models.CASCADE, related_name="allocation")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="unit_allocations")
    query_id = models.IntegerField(null=True, blank=True)
    n_judgments = models.PositiveSmallIntegerField(default=0)
    n_assigned = models.PositiveSmallIntegerField(default=0)
    n_open = models.PositiveSmallIntegerField(default=0)
    # Value -> number of judgments giving it (numbers as text keys).
    values = models.JSONField(default=dict, blank=True)
    spread = models.FloatField(default=0.0)  # entropy in bits (categorical) or range (numeric)
    disagree = models.BooleanField(default=False)
    needs_more = models.BooleanField(default=False)
    reason = models.CharField(max_length=20, choices=NeedReason.choices, default=NeedReason.UNJUDGED)
    priority = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["campaign", "-priority", "unit"], condition=Q(needs_more=True), name="unit_alloc_wanted"
            ),
            models.Index(fields=["campaign", "disagree", "n_assigned"], name="unit_alloc_disagree"),
        ]

    def __str__(self) -> str:
        return f"allocation of {self.unit_id}: {self.reason}"


class QueryAllocation(models.Model):
    """Per query, for the `query_deviation` policy: how many of its units have two judgments or more
    and how many of those disagree. Kept current with the units' state, so that the deviating queries
    are read from one row per query rather than counted over every unit."""

    NO_QUERY = 0  # `query_key` of the campaign's units that have no query

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="query_allocations")
    query_key = models.IntegerField()  # the query's id, or NO_QUERY
    n_rated = models.PositiveIntegerField(default=0)
    n_disagree = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "query_key"], name="query_alloc_unique"),
            models.CheckConstraint(condition=Q(n_disagree__lte=F("n_rated")), name="query_alloc_disagree_le_rated"),
        ]

    def __str__(self) -> str:
        return f"allocation of query {self.query_key}: {self.n_disagree}/{self.n_rated} disagree"


class CampaignAllocation(models.Model):
    """Per campaign: the assignments made so far (for the budget) and the fitted grader model used by
    the `uncertainty` policy."""

    campaign = models.OneToOneField(Campaign, primary_key=True, on_delete=models.CASCADE, related_name="allocation")
    n_assignments = models.PositiveIntegerField(default=0)
    n_judgments = models.PositiveIntegerField(default=0)
    # Dawid–Skene fit: {"categories": [...], "priors": [...], "theta": {grader_id: k×k}, "n_judgments": n}.
    model = models.JSONField(default=dict, blank=True)
    # The campaign settings the units' state was decided under (policy, overlaps, parameters): when
    # an organizer changes them, the state is rebuilt before the next unit is chosen.
    settings_key = models.CharField(max_length=64, blank=True, default="")
    built_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"allocation of campaign {self.campaign_id}"


class Adjudication(models.Model):
    """An organizer's value for a unit the graders could not settle, with a note. Ground truth takes
    it and flags it. Every adjudication is also an `adjudicated` GradingEvent (the last one counts)."""

    unit = models.OneToOneField(Unit, primary_key=True, on_delete=models.CASCADE, related_name="adjudication")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="adjudications")
    value = models.CharField(max_length=100)
    note = models.TextField(blank=True)
    organizer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    event = models.ForeignKey(GradingEvent, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"unit {self.unit_id} adjudicated {self.value}"


class GoldAnswer(models.Model):
    """A hidden gold unit (docs/design.md §5.6, "Hidden units"): the organizer's known answer for a unit
    that graders are served like any other. Their judgments of it measure each grader's accuracy and
    count toward neither ground truth nor agreement."""

    unit = models.OneToOneField(Unit, primary_key=True, on_delete=models.CASCADE, related_name="gold")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="gold_answers")
    value = models.CharField(max_length=100)
    organizer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"unit {self.unit_id} gold {self.value}"


class RepeatAnswer(models.Model):
    """A grader's answer on a hidden repeat (docs/design.md §5.6, "Hidden units"): the second judgment
    of a unit they already judged, kept apart from their Judgment (which it never changes) and from
    ground truth and agreement. Its events are ordinary GradingEvents; the fields mirror Judgment's."""

    assignment = models.OneToOneField(
        "grading.Assignment", primary_key=True, on_delete=models.CASCADE, related_name="repeat_answer"
    )
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="repeat_answers")
    grader = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="repeat_answers")
    broad = models.CharField(max_length=2, null=True, blank=True)
    fine = models.DecimalField(max_digits=3, decimal_places=1, null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    label = models.CharField(max_length=100, null=True, blank=True)
    verdict = models.CharField(max_length=5, null=True, blank=True)
    comment = models.TextField(blank=True)
    skipped = models.BooleanField(default=False)
    guidelines_version = models.PositiveIntegerField(default=0)
    last_event = models.ForeignKey(GradingEvent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    applied = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["campaign", "grader"])]

    def __str__(self) -> str:
        return f"repeat of unit {self.unit_id} by {self.grader_id}"
