"""The grader's "next" assignment, and adaptive allocation of extra judgments (docs/design.md §5.6).

Order of service: the grader's own open assignments first; then an adaptive slot another grader
left unjudged past its lease; then a new extra assignment on a unit the campaign's policy says needs
one more judgment. Never a unit the grader already has, never one slot to two graders: the unit's
allocation-state row is locked with SELECT ... FOR UPDATE SKIP LOCKED (PostgreSQL; SQLite serialises
writers anyway) and its counts are current under that lock.

Every step is an indexed query over a bounded number of rows: the per-unit state
(grading.models.allocation) is kept current in the transaction that records a judgment, so the cost
of a request does not grow with the campaign.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Exists, F, Max, OuterRef, Q
from django.utils import timezone

from grading.errors import CampaignClosed
from grading.models import Assignment, Campaign, Judgment
from grading.models.allocation import CampaignAllocation, NeedReason, UnitAllocation
from grading.models.choices import AssignmentSource, AssignmentStatus, Policy, Scheme
from grading.services.allocation_state import allocation_state_get, categories_of
from grading.services.grader_model import expected_entropy_drop
from grading.services.payloads import VALUE_FIELD

LEASE = timedelta(minutes=30)
# `uncertainty`: the grader-specific expected entropy drop is computed for this many of the most
# uncertain units (by posterior entropy), so the cost stays bounded.
UNCERTAINTY_SHORTLIST = 40

# Why no unit can be given (reason codes for callers that explain it).
BUDGET_SPENT = "budget_spent"
MAX_OVERLAP_REACHED = "max_overlap_reached"
NOTHING_NEEDED = "nothing_needed"


@dataclass(frozen=True)
class NextResult:
    """The assignment served, or None with the reason nothing could be given."""

    assignment: Assignment | None
    reason: str | None = None


def assignment_next(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """The assignment the grader should work on next, leased to them; None when nothing is left."""
    return assignment_next_explained(grader=grader, campaign=campaign).assignment


@transaction.atomic
def assignment_next_explained(*, grader: AbstractBaseUser, campaign: Campaign) -> NextResult:
    """Like `assignment_next`, and when nothing can be given, why: BUDGET_SPENT, MAX_OVERLAP_REACHED
    (units still disagree but have all the graders they may have) or NOTHING_NEEDED."""
    if not campaign.is_open:
        raise CampaignClosed(
            f"campaign {campaign.pk} is {campaign.status}: it takes no judgments.", field="campaign", value=campaign.pk
        )
    now = timezone.now()
    assignment = (
        Assignment.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN)
        .order_by("position", "pk")
        .first()
    )
    reason = None
    if assignment is None:
        assignment = _reclaim_expired(grader, campaign, now)
    if assignment is None:
        assignment, reason = _extra(grader, campaign)
    if assignment is not None:
        assignment.lease_expires_at = now + LEASE
        assignment.save(update_fields=["lease_expires_at"])
    return NextResult(assignment, reason)


@transaction.atomic
def assignment_extra(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """One more unit for a grader who asks for more work: like assignment_next without the grader's
    own open assignments, so that repeated calls hand out a batch. None when nothing is left."""
    if not campaign.is_open:
        raise CampaignClosed(
            f"campaign {campaign.pk} is {campaign.status}: it takes no judgments.", field="campaign", value=campaign.pk
        )
    now = timezone.now()
    assignment = _reclaim_expired(grader, campaign, now)
    if assignment is None:
        assignment, _ = _extra(grader, campaign)  # why none: more_work.no_more_reason says it in words
    if assignment is not None:
        assignment.lease_expires_at = now + LEASE
        assignment.save(update_fields=["lease_expires_at"])
    return assignment


def _mine(grader: AbstractBaseUser, campaign: Campaign):
    return Assignment.objects.filter(campaign=campaign, grader=grader, unit__isnull=False).values("unit_id")


def _next_position(grader: AbstractBaseUser, campaign: Campaign) -> int:
    top = Assignment.objects.filter(campaign=campaign, grader=grader).aggregate(m=Max("position"))["m"]
    return (top or 0) + 1


def _reclaim_expired(grader: AbstractBaseUser, campaign: Campaign, now) -> Assignment | None:
    """An adaptive slot whose grader let the lease run out without judging: hand it over."""
    judged = Judgment.objects.filter(grader=OuterRef("grader"), unit=OuterRef("unit"))
    mine = Assignment.objects.filter(grader=grader, unit=OuterRef("unit"))
    slot = (
        Assignment.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(
            campaign=campaign,
            source=AssignmentSource.ADAPTIVE,
            status=AssignmentStatus.OPEN,
            lease_expires_at__lt=now,
            unit__isnull=False,
            repeat=False,
        )
        .exclude(grader=grader)
        .exclude(Exists(mine))
        .exclude(Exists(judged))
        .order_by("lease_expires_at", "pk")
        .first()
    )
    if slot is None:
        return None
    slot.grader = grader
    slot.position = _next_position(grader, campaign)
    slot.save(update_fields=["grader", "position"])
    return slot


def _extra(grader: AbstractBaseUser, campaign: Campaign) -> tuple[Assignment | None, str | None]:
    if campaign.policy == Policy.FIXED:
        return None, NOTHING_NEEDED
    if campaign.scheme == Scheme.ORDERING:
        return _ordering_extra(grader, campaign)
    if campaign.scheme not in VALUE_FIELD:
        return None, NOTHING_NEEDED
    state = allocation_state_get(campaign=campaign)
    if campaign.budget is not None and state.n_assignments >= campaign.budget:
        return None, BUDGET_SPENT
    row = _pick(grader, campaign, state)
    if row is None:
        return None, _why_none(campaign)
    # Take one unit of the budget atomically: two graders racing for the last one cannot both win.
    taken = CampaignAllocation.objects.filter(campaign=campaign)
    if campaign.budget is not None:
        taken = taken.filter(n_assignments__lt=campaign.budget)
    if not taken.update(n_assignments=F("n_assignments") + 1):
        return None, BUDGET_SPENT
    assignment = Assignment.objects.create(
        campaign=campaign,
        grader=grader,
        unit_id=row.unit_id,
        query_id=row.query_id,
        source=AssignmentSource.ADAPTIVE,
        position=_next_position(grader, campaign),
        allocation_reason=row.reason,
    )
    # The unit now has one more assignment, open: busy until it is judged (what units_changed would
    # compute, without reading the unit's rows again).
    row.n_assigned, row.n_open = row.n_assigned + 1, row.n_open + 1
    row.needs_more, row.reason, row.priority = False, NeedReason.BUSY, 0.0
    row.save(update_fields=["n_assigned", "n_open", "needs_more", "reason", "priority", "updated_at"])
    return assignment, None


def _ordering_extra(grader: AbstractBaseUser, campaign: Campaign) -> tuple[Assignment | None, str | None]:
    from grading.services.ordering_allocation import ordering_extra

    if campaign.budget is not None and Assignment.objects.filter(campaign=campaign).count() >= campaign.budget:
        return None, BUDGET_SPENT
    assignment = ordering_extra(grader, campaign, _next_position(grader, campaign))
    return (assignment, None) if assignment is not None else (None, NOTHING_NEEDED)


def _wanted(grader: AbstractBaseUser, campaign: Campaign):
    """The units that need more and that this grader has never had, most wanted first (an index scan)."""
    mine = Assignment.objects.filter(grader=grader, unit=OuterRef("unit"))
    rows = (
        UnitAllocation.objects.filter(campaign=campaign, needs_more=True)
        .exclude(Exists(mine))
        .order_by("-priority", "unit_id")
    )
    if campaign.policy == Policy.QUERY_DEVIATION:
        rows = rows.filter(_in_queries(_deviating_queries(campaign)))
    return rows


def _in_queries(query_ids: list[int | None]) -> Q:
    found = Q(query_id__in=[q for q in query_ids if q is not None])
    return found | Q(query_id__isnull=True) if None in query_ids else found


def _pick(grader: AbstractBaseUser, campaign: Campaign, state: CampaignAllocation) -> UnitAllocation | None:
    """Lock and return the unit this grader should get next."""
    rows = _wanted(grader, campaign).select_for_update(skip_locked=True, of=("self",))
    if campaign.policy != Policy.UNCERTAINTY:
        return rows.first()
    shortlist = list(rows[:UNCERTAINTY_SHORTLIST])
    if not shortlist:
        return None
    judged = _judged_by_unit([r.unit_id for r in shortlist], campaign)
    categories = categories_of(campaign)
    # Largest expected entropy drop by this grader; ties: fewer judgments, then lower unit id.
    return min(
        shortlist,
        key=lambda r: (
            -round(expected_entropy_drop(state.model, judged.get(r.unit_id, []), grader.pk, categories=categories), 12),
            r.n_judgments,
            r.unit_id,
        ),
    )


def _judged_by_unit(unit_ids: list[int], campaign: Campaign) -> dict[int, list[tuple[int, str]]]:
    field = VALUE_FIELD[campaign.scheme]
    judged: dict[int, list[tuple[int, str]]] = {}
    for unit_id, grader_id, value in Judgment.objects.filter(
        unit_id__in=unit_ids, **{f"{field}__isnull": False}
    ).values_list("unit_id", "grader_id", field):
        judged.setdefault(unit_id, []).append((grader_id, value))
    return judged


def _why_none(campaign: Campaign) -> str:
    capped = UnitAllocation.objects.filter(campaign=campaign, disagree=True, n_assigned__gte=campaign.max_overlap)
    return MAX_OVERLAP_REACHED if capped.exists() else NOTHING_NEEDED


def _deviating_queries(campaign: Campaign) -> list[int | None]:
    """Queries whose disagreement rate deviates from the campaign's (or policy_params.expected_rate)
    by more than policy_params.tolerance (default 0.2). One aggregate over the state table: its
    cost grows with the campaign, which only this policy pays."""
    params = campaign.policy_params or {}
    tolerance = float(params.get("tolerance", 0.2))
    per_query = list(
        UnitAllocation.objects.filter(campaign=campaign, n_judgments__gte=2)
        .values("query_id")
        .annotate(n=Count("pk"), bad=Count("pk", filter=Q(disagree=True)))
    )
    total = sum(q["n"] for q in per_query)
    if not total:
        return []
    expected = float(params.get("expected_rate", sum(q["bad"] for q in per_query) / total))
    return [q["query_id"] for q in per_query if abs(q["bad"] / q["n"] - expected) > tolerance]


def units_wanting_more(campaign: Campaign) -> list[int]:
    """Unit ids that the campaign's policy would give one more grader, most wanted first.

    Only units whose current assignments are all finished and that are below the maximum overlap
    qualify. `consensus`: the judgments disagree (categorical: not all equal; numeric: range above
    policy_params.threshold). `confusability`: the most disagreeing first (entropy or range).
    `query_deviation`: disagreeing units of queries whose disagreement rate deviates from the
    campaign's by more than policy_params.tolerance (default 0.2). `uncertainty`: units whose model
    posterior is uncertain, most uncertain first (which grader gets which is decided per grader).
    """
    if campaign.policy == Policy.FIXED:
        return []
    allocation_state_get(campaign=campaign)
    rows = UnitAllocation.objects.filter(campaign=campaign, needs_more=True).order_by("-priority", "unit_id")
    if campaign.policy == Policy.QUERY_DEVIATION:
        rows = rows.filter(_in_queries(_deviating_queries(campaign)))
    return list(rows.values_list("unit_id", flat=True))


__all__ = [
    "BUDGET_SPENT",
    "LEASE",
    "MAX_OVERLAP_REACHED",
    "NOTHING_NEEDED",
    "NeedReason",
    "NextResult",
    "assignment_extra",
    "assignment_next",
    "assignment_next_explained",
    "units_wanting_more",
]
