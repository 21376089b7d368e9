"""Reads for the organizer's adjudication page (docs/design.md §5.6): the units the graders could not
settle, most confusable or most uncertain first, each with its content and any verdict already given.

A unit disagrees when it has two judgments or more and their spread (entropy in bits of the distinct
answers; for numbers the range) exceeds the policy's `threshold` (default 0). The allocation state
keeps that per unit; when the state is not current (never built, or built under other settings) the
units are read from the judgments instead, so that looking at the page never rebuilds anything.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from grading.models import Adjudication, Campaign, CampaignAllocation, Judgment, Unit, UnitAllocation
from grading.models.choices import Scheme
from grading.services.allocation_state import categories_of, settings_key, spread
from grading.services.grader_model import posterior_entropy
from grading.services.payloads import VALUE_FIELD
from grading.services.policy_params import policy_param

PAGE = 30
SORTS = {"confusability": "Most confusable first", "uncertainty": "Most uncertain first (model)"}


@dataclass(frozen=True)
class Dispute:
    """One unit whose judgments disagree: its spread and its judgments as (grader id, value)."""

    unit_id: int
    spread: float
    judged: list[tuple[int, Any]]


def adjudication_choices(*, campaign: Campaign) -> list[str]:
    """The values an organizer may record (none to choose from on a numeric scale)."""
    return [] if campaign.scheme == Scheme.NUMERIC else categories_of(campaign)


def units_in_dispute(*, campaign: Campaign, sort: str) -> list[dict[str, Any]]:
    """The page's rows, in the chosen order (`SORTS`): unit, answers, spread, uncertainty, verdict."""
    state = CampaignAllocation.objects.filter(campaign=campaign).first()
    current = state is not None and state.settings_key == settings_key(campaign)
    disputes = _from_state(campaign) if current else _from_judgments(campaign)
    model = (state.model if state is not None else None) or {}
    numeric = campaign.scheme == Scheme.NUMERIC
    categories = categories_of(campaign)
    rows = [
        {
            "spread": d.spread,
            "unit_id": d.unit_id,
            "values": sorted(str(v) for _, v in d.judged),
            "uncertainty": None if numeric else posterior_entropy(model, d.judged, categories=categories),
        }
        for d in disputes
    ]
    if sort == "uncertainty" and not numeric:
        rows.sort(key=lambda r: (-r["uncertainty"], r["unit_id"]))
    rows = rows[:PAGE]
    units = Unit.objects.filter(pk__in=[r["unit_id"] for r in rows]).select_related("candidate", "candidate_b", "query")
    by_id = {u.pk: u for u in units}
    done = {a.unit_id: a for a in Adjudication.objects.filter(unit_id__in=by_id)}
    for row in rows:
        row["unit"], row["adjudication"] = by_id[row["unit_id"]], done.get(row["unit_id"])
    return rows


def _judged(campaign: Campaign, unit_ids: list[int] | None = None) -> dict[int, list[tuple[int, Any]]]:
    field = VALUE_FIELD[campaign.scheme]
    judgments = Judgment.objects.filter(campaign=campaign, **{f"{field}__isnull": False})
    if unit_ids is not None:
        judgments = judgments.filter(unit_id__in=unit_ids)
    judged: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    for unit_id, grader_id, value in judgments.values_list("unit_id", "grader_id", field):
        judged[unit_id].append((grader_id, value))
    return judged


def _from_state(campaign: Campaign) -> list[Dispute]:
    """The stored state's disagreeing units (the first ten pages of them), most spread first."""
    states = UnitAllocation.objects.filter(campaign=campaign, disagree=True).order_by("-spread", "unit_id")
    spreads = list(states.values_list("unit_id", "spread")[: 10 * PAGE])
    judged = _judged(campaign, [unit_id for unit_id, _ in spreads])
    return [Dispute(unit_id, value, judged.get(unit_id, [])) for unit_id, value in spreads]


def _from_judgments(campaign: Campaign) -> list[Dispute]:
    """The same list computed from the judgments, as the allocation state would hold it."""
    numeric = campaign.scheme == Scheme.NUMERIC
    threshold = float(policy_param(campaign=campaign, name="threshold", default=0))
    disputes = []
    for unit_id, judged in _judged(campaign).items():
        values = [v for _, v in judged]
        if len(values) >= 2 and (s := spread(values, numeric=numeric)) > threshold:
            disputes.append(Dispute(unit_id, s, judged))
    disputes.sort(key=lambda d: (-d.spread, d.unit_id))
    return disputes[: 10 * PAGE]
