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
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from grading.errors import CampaignClosed
from grading.models import Assignment, Campaign, Judgment, Participant
from grading.models.allocation import CampaignAllocation, NeedReason, UnitAllocation
from grading.models.choices import AssignmentSource, Policy, Scheme
from grading.selectors import assignment_list_for_grader, assignment_next_position, unit_with_items
from grading.services import allocation_queries as queries
from grading.services.allocation_state import allocation_state_ensure, categories_of
from grading.services.grader_model import expected_entropy_drop
from grading.services.ordering_allocation import ordering_extra
from grading.services.payloads import VALUE_FIELD
from grading.services.query_deviation import deviating_queries

LEASE = timedelta(minutes=30)
# `uncertainty`: the grader-specific expected entropy drop is computed for this many of the most
# uncertain units (by posterior entropy), so the cost stays bounded.
UNCERTAINTY_SHORTLIST = 40

# Why no unit can be given (reason codes for callers that explain it).
BUDGET_SPENT = "budget_spent"
ALREADY_JUDGED = "already_judged"  # the units that need more have all had this grader already
OTHERS_JUDGING = "others_judging"  # none needs more yet, but units are still being judged by others
MAX_OVERLAP_REACHED = "max_overlap_reached"
NOTHING_NEEDED = "nothing_needed"
SCREENED_OUT = "screened_out"  # a crowd participant below their link's qualification pass mark
REASONS = (BUDGET_SPENT, ALREADY_JUDGED, OTHERS_JUDGING, MAX_OVERLAP_REACHED, NOTHING_NEEDED, SCREENED_OUT)

Served = tuple[Assignment | None, str | None]  # an assignment, or None and the reason


@dataclass(frozen=True)
class NextResult:
    """The assignment served, or None with the reason nothing could be given. `new`: the assignment
    was just made or handed over, so the grader has no judgment of its unit yet."""

    assignment: Assignment | None
    reason: str | None = None
    new: bool = False


def assignment_next(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """The assignment the grader should work on next, leased to them; None when nothing is left."""
    return assignment_next_explained(grader=grader, campaign=campaign).assignment


@transaction.atomic
def assignment_next_explained(*, grader: AbstractBaseUser, campaign: Campaign) -> NextResult:
    """Like `assignment_next`, and when nothing can be given, why: BUDGET_SPENT, ALREADY_JUDGED (the
    units that need more have all had this grader), OTHERS_JUDGING (none needs more until other
    graders' open work is in), MAX_OVERLAP_REACHED (units still disagree but have all the graders
    they may have) or NOTHING_NEEDED.

    The assignment comes with its unit, candidates and query, as the grader's assignment list reads
    them, so that serving it needs no further read."""
    _check_open(campaign)
    now = timezone.now()
    own = queries.own_open_take(grader_id=grader.pk, campaign_id=campaign.pk, lease_expires_at=now + LEASE)
    if own is not None:
        return NextResult(_loaded(grader, campaign, own))
    assignment, reason = _handed_over_or_extra(grader, campaign, now)
    return NextResult(assignment, reason, new=assignment is not None)


def assignment_extra(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """One more unit for a grader who asks for more work: like assignment_next without the grader's
    own open assignments, so that repeated calls hand out a batch. None when nothing is left."""
    return assignment_extra_explained(grader=grader, campaign=campaign).assignment


@transaction.atomic
def assignment_extra_explained(*, grader: AbstractBaseUser, campaign: Campaign) -> NextResult:
    """Like `assignment_extra`, and when nothing can be given, why (the codes of
    `assignment_next_explained`)."""
    _check_open(campaign)
    assignment, reason = _handed_over_or_extra(grader, campaign, timezone.now())
    return NextResult(assignment, reason, new=assignment is not None)


def _check_open(campaign: Campaign) -> None:
    if not campaign.is_open:
        raise CampaignClosed(
            f"campaign {campaign.pk} is {campaign.status}: it takes no judgments.", field="campaign", value=campaign.pk
        )


def _handed_over_or_extra(grader: AbstractBaseUser, campaign: Campaign, now: datetime) -> Served:
    """A slot another grader let expire, else a new extra assignment; either leased from `now`. None
    for a participant screened out by a qualification rule (their open work was returned already)."""
    if _screened_out(grader, campaign):
        return None, SCREENED_OUT
    slot = queries.expired_slot_take(
        grader_id=grader.pk, campaign_id=campaign.pk, now=now, lease_expires_at=now + LEASE
    )
    if slot is not None:
        return _loaded(grader, campaign, slot), None
    return _extra(grader, campaign, now)


def _screened_out(grader: AbstractBaseUser, campaign: Campaign) -> bool:
    """Read with the campaign by selectors.campaign_get_for_grader; asked here when it was not."""
    known = getattr(campaign, "grader_screened_out", None)
    if known is not None:
        return bool(known)
    return Participant.objects.filter(campaign=campaign, user=grader.pk, screened_out_at__isnull=False).exists()


def _loaded(grader: AbstractBaseUser, campaign: Campaign, assignment_id: int) -> Assignment:
    return assignment_list_for_grader(grader=grader, campaign=campaign).get(pk=assignment_id)


def _extra(grader: AbstractBaseUser, campaign: Campaign, now: datetime) -> Served:
    if campaign.policy == Policy.FIXED:
        return None, NOTHING_NEEDED
    if campaign.scheme == Scheme.ORDERING:
        return _ordering_extra(grader, campaign, now)
    if campaign.scheme not in VALUE_FIELD:
        return None, NOTHING_NEEDED
    state = allocation_state_ensure(campaign=campaign)
    if campaign.budget is not None and state.n_assignments >= campaign.budget:
        return None, BUDGET_SPENT
    query_ids = deviating_queries(campaign) if campaign.policy == Policy.QUERY_DEVIATION else None
    row = _pick(grader, campaign, state, query_ids)
    if row is None:
        return None, _why_none(campaign, query_ids)
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
        position=row.next_position,
        lease_expires_at=now + LEASE,
        allocation_reason=row.reason,
    )
    # Served with its unit's content: one read of the unit (the new row itself is known).
    assignment.unit = unit_with_items(unit_id=row.unit_id)
    assignment.query = assignment.unit.query
    # The unit now has one more assignment, open: busy until it is judged (what units_changed would
    # compute, without reading the unit's rows again).
    UnitAllocation.objects.filter(pk=row.unit_id).update(
        n_assigned=row.n_assigned + 1,
        n_open=row.n_open + 1,
        needs_more=False,
        reason=NeedReason.BUSY,
        priority=0.0,
        updated_at=now,
    )
    return assignment, None


def _ordering_extra(grader: AbstractBaseUser, campaign: Campaign, now: datetime) -> Served:
    if campaign.budget is not None and Assignment.objects.filter(campaign=campaign).count() >= campaign.budget:
        return None, BUDGET_SPENT
    position = assignment_next_position(grader=grader, campaign=campaign)
    assignment = ordering_extra(grader, campaign, position, lease_expires_at=now + LEASE)
    return (assignment, None) if assignment is not None else (None, NOTHING_NEEDED)


def _in_queries(query_ids: list[int | None]) -> Q:
    found = Q(query_id__in=[q for q in query_ids if q is not None])
    return found | Q(query_id__isnull=True) if None in query_ids else found


def _pick(
    grader: AbstractBaseUser, campaign: Campaign, state: CampaignAllocation, query_ids: list[int | None] | None
) -> queries.Wanted | None:
    """Lock and return the unit this grader should get next."""
    uncertainty = campaign.policy == Policy.UNCERTAINTY
    shortlist = queries.wanted_take(
        grader_id=grader.pk,
        campaign_id=campaign.pk,
        limit=UNCERTAINTY_SHORTLIST if uncertainty else 1,
        query_ids=query_ids,
    )
    if not uncertainty or not shortlist:
        return shortlist[0] if shortlist else None
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


def _why_none(campaign: Campaign, query_ids: list[int | None] | None) -> str:
    """Why no unit could be given to this grader (only asked when none could: a few indexed reads)."""
    units = UnitAllocation.objects.filter(campaign=campaign)
    wanted = units.filter(needs_more=True)
    if query_ids is not None:
        wanted = wanted.filter(_in_queries(query_ids))
    if wanted.exists():
        return ALREADY_JUDGED
    if units.filter(n_open__gt=0).exists():
        return OTHERS_JUDGING
    capped = units.filter(disagree=True, n_assigned__gte=campaign.max_overlap)
    return MAX_OVERLAP_REACHED if capped.exists() else NOTHING_NEEDED


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
    allocation_state_ensure(campaign=campaign)
    rows = UnitAllocation.objects.filter(campaign=campaign, needs_more=True).order_by("-priority", "unit_id")
    if campaign.policy == Policy.QUERY_DEVIATION:
        rows = rows.filter(_in_queries(deviating_queries(campaign)))
    return list(rows.values_list("unit_id", flat=True))


__all__ = [
    "ALREADY_JUDGED",
    "BUDGET_SPENT",
    "LEASE",
    "MAX_OVERLAP_REACHED",
    "NOTHING_NEEDED",
    "OTHERS_JUDGING",
    "REASONS",
    "NeedReason",
    "NextResult",
    "assignment_extra",
    "assignment_extra_explained",
    "assignment_next",
    "assignment_next_explained",
    "units_wanting_more",
]
