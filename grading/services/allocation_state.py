"""Keeping adaptive allocation's per-unit state current (docs/design.md §5.6, "Cost of next").

`units_changed` runs inside the transaction that records judgments (or creates assignments): it
locks the units' state rows, recounts their judgments and assignments (a handful of rows per unit,
read by index) and decides, under the campaign's policy, whether each unit needs one more judgment
and why. `allocation_state_build` computes the state of a whole campaign at once (when allocation is
first asked for, and after assignments are created in bulk).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from grading.models import Assignment, Campaign, Judgment, Unit
from grading.models.allocation import CampaignAllocation, NeedReason, UnitAllocation
from grading.models.choices import AssignmentStatus, Broad, PairwiseVerdict, Policy, Scheme
from grading.services.grader_model import posterior_entropy
from grading.services.payloads import VALUE_FIELD
from grading.services.policy_params import policy_param
from grading.services.query_deviation import counted, query_counts_apply, query_counts_rebuild
from grading.services.sql_rows import connection_for, update_sql

STATE_FIELDS = [
    "campaign",
    "query_id",
    "n_judgments",
    "n_assigned",
    "n_open",
    "values",
    "spread",
    "disagree",
    "needs_more",
    "reason",
    "priority",
]
STATE_COLUMNS = [*STATE_FIELDS[1:], "updated_at"]  # what a unit's change rewrites


@dataclass
class _Tally:
    """What is known of one unit: its judgments (grader, value) and its assignments."""

    judged: list[tuple[int, Any]]
    n_assigned: int = 0
    n_open: int = 0


def units_changed(*, unit_ids: Iterable[int | None]) -> None:
    """Recompute the allocation state of these units (call inside the writing transaction).

    A unit without a state row gets one. Every writer of a unit's state goes through its row: a
    concurrent writer (another judgment, an extra assignment, a whole-campaign build) has either
    committed before we count, or waits for us. (Recording events takes a faster road to the same
    result for units that have a row: `unit_states_decide` on rows it locked with the assignments.)
    """
    ids = sorted({u for u in unit_ids if u is not None})
    if not ids:
        return
    rows = _locked(ids)
    if len(rows) < len(ids):
        _rows_ensure(Unit.objects.filter(pk__in=ids))
        rows = _locked(ids)
    before = {row.unit_id: counted(row) for row in rows}
    by_campaign: dict[int, list[UnitAllocation]] = defaultdict(list)
    for row in rows:
        by_campaign[row.campaign_id].append(row)
    for group in by_campaign.values():
        tallies = _tallies([r.unit_id for r in group], group[0].campaign)
        for row in group:
            _decide(row, row.campaign, tallies[row.unit_id])
    unit_states_write(rows=rows)
    query_counts_apply(before=before, rows=rows)


Tallies = dict[int, tuple[list[tuple[int, Any]], list[str]]]  # unit -> ((grader, value), statuses)


def unit_states_decide(*, rows: list[UnitAllocation], tallies: Tallies) -> None:
    """Decide each locked state row (with its campaign) from its unit's judgments, as (grader, value)
    in grader order, and the statuses of its non-repeat assignments; written by the caller."""
    for row in rows:
        judged, statuses = tallies[row.unit_id]
        tally = _Tally(judged=judged, n_assigned=len(statuses))
        tally.n_open = sum(status == AssignmentStatus.OPEN for status in statuses)
        _decide(row, row.campaign, tally)


def unit_states_write(*, rows: list[UnitAllocation]) -> None:
    """Write decided state rows: one UPDATE ... FROM (VALUES ...) for all of them."""
    if rows:
        connection = connection_for(UnitAllocation)
        sql, params = update_sql(UnitAllocation, rows, STATE_COLUMNS, connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


@transaction.atomic
def allocation_state_build(*, campaign: Campaign, only_if_missing: bool = False) -> CampaignAllocation:
    """Compute every unit's allocation state and the campaign's assignment count from scratch.

    The units' state rows are locked first (in unit order, as `units_changed` and the next-unit
    request lock them), then the campaign's row, so a rebuild never deadlocks with them and never
    overwrites a newer count with an older one. Units without a row get one, and those rows are
    locked too, before anything is counted: a judgment being recorded meanwhile has either
    committed by then (and is counted) or waits for the rebuild (and then recounts its unit).
    """
    _lock_campaign_rows(campaign)
    state, created = CampaignAllocation.objects.select_for_update().get_or_create(campaign=campaign)
    if only_if_missing and not created:
        return state  # another request built it meanwhile
    if _rows_ensure(Unit.objects.filter(campaign=campaign)):
        _lock_campaign_rows(campaign)
    units = list(Unit.objects.filter(campaign=campaign).values_list("pk", "query_id"))
    tallies = _tallies([u for u, _ in units], campaign, whole_campaign=True)
    rows = []
    for unit_id, query_id in units:
        row = UnitAllocation(unit_id=unit_id, campaign=campaign, query_id=query_id)
        _decide(row, campaign, tallies[unit_id], model=state.model)
        rows.append(row)
    UnitAllocation.objects.bulk_create(
        rows, batch_size=2000, update_conflicts=True, unique_fields=["unit"], update_fields=STATE_FIELDS
    )
    query_counts_rebuild(campaign=campaign, rows=rows)
    state.n_assignments = Assignment.objects.filter(campaign=campaign).count()
    state.settings_key = settings_key(campaign)
    state.save(update_fields=["n_assignments", "settings_key"])
    return state


def _lock_campaign_rows(campaign: Campaign) -> None:
    """Lock every state row of the campaign, in unit order (the order every writer locks them in)."""
    list(UnitAllocation.objects.select_for_update().filter(campaign=campaign).order_by("unit_id").values_list("pk"))


def _locked(unit_ids: list[int]) -> list[UnitAllocation]:
    """The units' state rows, locked in unit order, with their campaigns."""
    return list(
        UnitAllocation.objects.select_for_update(of=("self",))
        .filter(unit_id__in=unit_ids)
        .order_by("unit_id")
        .select_related("campaign", "campaign__allocation")
    )


def _rows_ensure(units: QuerySet[Unit]) -> bool:
    """Give the units that have none an empty state row, in unit order; True if any was made. A row
    another transaction is making at the same moment is waited for, never made twice."""
    missing = units.filter(allocation__isnull=True).order_by("pk").values_list("pk", "campaign_id", "query_id")
    rows = [UnitAllocation(unit_id=u, campaign_id=c, query_id=q) for u, c, q in missing]
    UnitAllocation.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return bool(rows)


# Raised when what the state holds changes, so that every campaign's state is rebuilt on first use
# (2: the per-query counts of `query_deviation`).
STATE_VERSION = 2


def settings_key(campaign: Campaign) -> str:
    """A digest of the settings that decide whether a unit needs more judgments."""
    settings = [
        STATE_VERSION,
        campaign.scheme,
        campaign.policy,
        campaign.initial_overlap,
        campaign.max_overlap,
        campaign.policy_params or {},
    ]
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def allocation_state_ensure(*, campaign: Campaign) -> CampaignAllocation:
    """The campaign's allocation state, built or rebuilt first when it is not current: it is built
    when assignments are created; a campaign from before allocation state existed has it built here,
    on first use, and a campaign whose organizer changed its policy, overlaps or parameters has it
    rebuilt here. A write: call it from requests that take work, never from a page view."""
    state = CampaignAllocation.objects.filter(campaign=campaign).first()
    if state is None:
        return allocation_state_build(campaign=campaign, only_if_missing=True)
    if state.settings_key != settings_key(campaign):
        return allocation_state_build(campaign=campaign)
    return state


def assignments_added(*, campaign: Campaign) -> None:
    """Assignments were created in bulk (initial overlap, organizer): rebuild the campaign's state."""
    if campaign.scheme in VALUE_FIELD:
        allocation_state_build(campaign=campaign)


def allocation_model_set(
    *, campaign_id: int, categories: list[str], priors: list[float], confusion_by_grader: dict[int, list[list[float]]]
) -> None:
    """Store a fitted Dawid–Skene grader model for the `uncertainty` policy (an analysis run fits it
    and hands it over once its result is stored). One row's write: under that policy every unit's
    posterior entropy depends on the model, so the state is marked for a rebuild, which
    `allocation_state_ensure` makes where work is next taken, never here."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if (
        campaign is None
        or campaign.scheme not in VALUE_FIELD
        or [str(c) for c in categories] != categories_of(campaign)
    ):
        return
    model = {
        "categories": list(categories),
        "priors": list(priors),
        "theta": {str(g): m for g, m in confusion_by_grader.items()},
    }
    changes: dict[str, Any] = {"model": model}
    if campaign.policy == Policy.UNCERTAINTY:
        changes["settings_key"] = ""  # decided under the old model: rebuilt before the next unit is chosen
    with transaction.atomic():
        if not CampaignAllocation.objects.filter(campaign=campaign).update(**changes):
            # No state yet: it is built (with this model) where work is first taken.
            CampaignAllocation.objects.get_or_create(campaign=campaign, defaults={"model": model, "settings_key": ""})


def _tallies(unit_ids: list[int], campaign: Campaign, *, whole_campaign: bool = False) -> dict[int, _Tally]:
    field = VALUE_FIELD.get(campaign.scheme)
    tallies: dict[int, _Tally] = defaultdict(lambda: _Tally(judged=[]))
    judgments = (
        Judgment.objects.filter(campaign=campaign) if whole_campaign else Judgment.objects.filter(unit_id__in=unit_ids)
    )
    assignments = (
        Assignment.objects.filter(campaign=campaign, unit__isnull=False)
        if whole_campaign
        else Assignment.objects.filter(unit_id__in=unit_ids)
    )
    assignments = assignments.filter(repeat=False)  # a hidden repeat is no extra grader of the unit (§5.6)
    if field is not None:
        for unit_id, grader_id, value in judgments.filter(**{f"{field}__isnull": False}).values_list(
            "unit_id", "grader_id", field
        ):
            tallies[unit_id].judged.append((grader_id, value))
    for unit_id, status in assignments.values_list("unit_id", "status"):
        tallies[unit_id].n_assigned += 1
        tallies[unit_id].n_open += status == AssignmentStatus.OPEN
    return tallies


def _decide(row: UnitAllocation, campaign: Campaign, tally: _Tally, model: dict | None = None) -> None:
    """Fill a state row from the unit's tally under the campaign's policy."""
    numeric = campaign.scheme == Scheme.NUMERIC
    values = [v for _, v in tally.judged]
    row.n_judgments, row.n_assigned, row.n_open = len(values), tally.n_assigned, tally.n_open
    row.values = dict(Counter(str(v) for v in values))
    row.spread = spread(values, numeric=numeric) if len(values) >= 2 else 0.0
    threshold = float(policy_param(campaign=campaign, name="threshold", default=0))
    row.disagree = len(values) >= 2 and row.spread > threshold
    row.needs_more, row.priority = False, 0.0
    if tally.n_open:
        row.reason = NeedReason.BUSY
    elif not values:
        row.reason = NeedReason.UNJUDGED
    elif tally.n_assigned >= campaign.max_overlap:
        row.reason = NeedReason.MAX_OVERLAP
    else:
        row.reason = NeedReason.SETTLED
        _apply_policy(row, campaign, tally, model)


def _apply_policy(row: UnitAllocation, campaign: Campaign, tally: _Tally, model: dict | None) -> None:
    policy = campaign.policy
    if policy == Policy.CONSENSUS and row.disagree:
        row.needs_more, row.reason = True, NeedReason.DISAGREEMENT
    elif policy == Policy.CONFUSABILITY and row.spread > 0:
        row.needs_more, row.reason, row.priority = True, NeedReason.CONFUSABLE, row.spread
    elif policy == Policy.QUERY_DEVIATION and row.disagree:
        row.needs_more, row.reason = True, NeedReason.QUERY_DEVIATION
    elif policy == getattr(Policy, "UNCERTAINTY", None) and campaign.scheme != Scheme.NUMERIC:
        if model is None:
            model = getattr(getattr(campaign, "allocation", None), "model", None) or {}
        entropy = posterior_entropy(model, tally.judged, categories=categories_of(campaign))
        if entropy > float(policy_param(campaign=campaign, name="min_entropy", default=0.05)):
            row.needs_more, row.reason, row.priority = True, NeedReason.UNCERTAIN, entropy


def categories_of(campaign: Campaign) -> list[str]:
    if campaign.scheme == Scheme.CATEGORICAL:
        return list((campaign.scheme_params or {}).get("labels", []))
    return list(Broad.values if campaign.scheme == Scheme.BROAD_FINE else PairwiseVerdict.values)


def spread(values: list[Any], *, numeric: bool) -> float:
    """Range (numeric) or entropy in bits of the distinct values (categorical)."""
    if numeric:
        return float(max(values) - min(values)) if len(values) > 1 else 0.0
    n = len(values)
    return -sum(c / n * math.log2(c / n) for c in Counter(values).values()) + 0.0


__all__ = [
    "allocation_model_set",
    "allocation_state_build",
    "allocation_state_ensure",
    "assignments_added",
    "categories_of",
    "spread",
    "unit_states_decide",
    "unit_states_write",
    "units_changed",
]
