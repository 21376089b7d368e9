"""The grader's "next" assignment, and adaptive allocation of extra judgments (docs/design.md §5.6).

Order of service: the grader's own open assignments first; then an adaptive slot another grader
left unjudged past its lease; then a new extra assignment on a unit the campaign's policy says needs
one more judgment. Never a unit the grader already has, never one slot to two graders: candidate
rows are locked with SELECT ... FOR UPDATE SKIP LOCKED (PostgreSQL; SQLite serialises writers anyway)
and the overlap is recounted under the lock.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from grading.errors import CampaignClosed
from grading.models import Assignment, Campaign, Judgment, Unit
from grading.models.choices import AssignmentSource, AssignmentStatus, Policy, Scheme
from grading.services.payloads import VALUE_FIELD

LEASE = timedelta(minutes=30)


@transaction.atomic
def assignment_next(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """The assignment the grader should work on next, leased to them; None when nothing is left."""
    if not campaign.is_open:
        raise CampaignClosed(f"campaign {campaign.pk} is {campaign.status}: it takes no judgments.", field="campaign", value=campaign.pk)
    now = timezone.now()
    assignment = (
        Assignment.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN)
        .order_by("position", "pk").first()
    )
    if assignment is None:
        assignment = _reclaim_expired(grader, campaign, now) or _extra(grader, campaign)
    if assignment is not None:
        assignment.lease_expires_at = now + LEASE
        assignment.save(update_fields=["lease_expires_at"])
    return assignment


@transaction.atomic
def assignment_extra(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """One more unit for a grader who asks for more work: like assignment_next without the grader's
    own open assignments, so that repeated calls hand out a batch. None when nothing is left."""
    if not campaign.is_open:
        raise CampaignClosed(f"campaign {campaign.pk} is {campaign.status}: it takes no judgments.", field="campaign", value=campaign.pk)
    now = timezone.now()
    assignment = _reclaim_expired(grader, campaign, now) or _extra(grader, campaign)
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
    slot = (
        Assignment.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(campaign=campaign, source=AssignmentSource.ADAPTIVE, status=AssignmentStatus.OPEN,
                lease_expires_at__lt=now, unit__isnull=False)
        .exclude(grader=grader).exclude(unit__in=_mine(grader, campaign))
        .exclude(Exists(judged))
        .order_by("lease_expires_at", "pk").first()
    )
    if slot is None:
        return None
    slot.grader = grader
    slot.position = _next_position(grader, campaign)
    slot.save(update_fields=["grader", "position"])
    return slot


def _extra(grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    if campaign.policy == Policy.FIXED or campaign.scheme not in VALUE_FIELD:
        return None
    if campaign.budget is not None and Assignment.objects.filter(campaign=campaign).count() >= campaign.budget:
        return None
    wanted = [u for u in units_wanting_more(campaign) if u not in set(_mine(grader, campaign).values_list("unit_id", flat=True))]
    for unit_id in wanted:
        unit = Unit.objects.select_for_update(skip_locked=True, of=("self",)).filter(pk=unit_id).order_by().first()
        if unit is None:
            continue  # another grader is taking this slot right now
        if Assignment.objects.filter(unit=unit).count() >= campaign.max_overlap:
            continue
        return Assignment.objects.create(
            campaign=campaign, grader=grader, unit=unit, query_id=unit.query_id, source=AssignmentSource.ADAPTIVE,
            position=_next_position(grader, campaign),
        )
    return None


def units_wanting_more(campaign: Campaign) -> list[int]:
    """Unit ids that the campaign's policy would give one more grader, most wanted first.

    Only units whose current assignments are all finished and that are below the maximum overlap
    qualify. `consensus`: the judgments disagree (categorical: not all equal; numeric: range above
    policy_params.threshold). `confusability`: the most disagreeing first (entropy or std).
    `query_deviation`: disagreeing units of queries whose disagreement rate deviates from the
    campaign's by more than policy_params.tolerance (default 0.2).
    """
    values, counts, busy = _unit_values(campaign)
    numeric = campaign.scheme == Scheme.NUMERIC
    threshold = float((campaign.policy_params or {}).get("threshold", 0))
    spread = {u: _spread(v, numeric) for u, v in values.items() if len(v) >= 2}
    disagree = {u for u, s in spread.items() if s > threshold}
    eligible = [u for u in spread if counts[u] < campaign.max_overlap and u not in busy]
    if campaign.policy == Policy.CONFUSABILITY:
        return sorted((u for u in eligible if spread[u] > 0), key=lambda u: (-spread[u], u))
    if campaign.policy == Policy.QUERY_DEVIATION:
        return _query_deviation(campaign, spread, disagree, eligible)
    return sorted(u for u in eligible if u in disagree)


def _unit_values(campaign: Campaign) -> tuple[dict[int, list[Any]], Counter, set[int]]:
    field = VALUE_FIELD[campaign.scheme]
    values: dict[int, list[Any]] = defaultdict(list)
    for unit_id, value in Judgment.objects.filter(campaign=campaign, **{f"{field}__isnull": False}).values_list("unit_id", field):
        values[unit_id].append(value)
    counts: Counter = Counter()
    busy: set[int] = set()
    for unit_id, status in Assignment.objects.filter(campaign=campaign, unit__isnull=False).values_list("unit_id", "status"):
        counts[unit_id] += 1
        if status == AssignmentStatus.OPEN:
            busy.add(unit_id)
    return values, counts, busy


def _spread(values: list[Any], numeric: bool) -> float:
    if numeric:
        return max(values) - min(values) if len(values) > 1 else 0.0
    n = len(values)
    return -sum(c / n * math.log2(c / n) for c in Counter(values).values()) + 0.0


def _query_deviation(campaign: Campaign, spread: dict[int, float], disagree: set[int], eligible: list[int]) -> list[int]:
    if not spread:
        return []
    tolerance = float((campaign.policy_params or {}).get("tolerance", 0.2))
    query_of = dict(Unit.objects.filter(pk__in=list(spread)).values_list("pk", "query_id"))
    per_query: dict[Any, list[int]] = defaultdict(list)
    for u in spread:
        per_query[query_of[u]].append(u)
    expected = float((campaign.policy_params or {}).get("expected_rate", len(disagree) / len(spread)))
    rates = {q: sum(u in disagree for u in us) / len(us) for q, us in per_query.items()}
    deviating = {q for q, r in rates.items() if abs(r - expected) > tolerance}
    return sorted(u for u in eligible if u in disagree and query_of[u] in deviating)


__all__ = ["LEASE", "assignment_extra", "assignment_next", "units_wanting_more"]
