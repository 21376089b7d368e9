"""Accounting of adaptive allocation for the report (docs/design.md §5.6): judgments spent against
the budget, extra assignments by reason, units settled and still open, and a simulated curve of
judgments against accuracy for a campaign like this one."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import Count

from analysis.metrics.allocation import compare_policies_long, simulate_judgments
from grading.models import Adjudication, Assignment, Campaign, Judgment, UnitAllocation
from grading.models.allocation import NeedReason
from grading.models.choices import AssignmentSource, Policy
from grading.services.payloads import VALUE_FIELD

SIM_UNITS = 1000
SIM_SEEDS = 2
OPEN_REASONS = {
    NeedReason.BUSY,
    NeedReason.DISAGREEMENT,
    NeedReason.CONFUSABLE,
    NeedReason.QUERY_DEVIATION,
    NeedReason.UNCERTAIN,
    NeedReason.UNJUDGED,
}


def accounting(*, campaign_id: int, model: dict[str, Any], valued: int | None = None) -> dict[str, Any]:
    """``valued``: the campaign's judgments with a value, as a run counted them when it planned its
    shards (``selectors.EventLog``); None counts them here (0.9 s at 10^7 judgments)."""
    campaign = Campaign.objects.get(pk=campaign_id)
    if campaign.scheme not in VALUE_FIELD:
        return {}
    field = VALUE_FIELD[campaign.scheme]
    extras = dict(
        Assignment.objects.filter(campaign=campaign, source=AssignmentSource.ADAPTIVE)
        .values_list("allocation_reason")
        .annotate(n=Count("pk"))
    )
    states = dict(UnitAllocation.objects.filter(campaign=campaign).values_list("reason").annotate(n=Count("pk")))
    labels = dict(NeedReason.choices)
    out: dict[str, Any] = {
        "policy": campaign.policy,
        "budget": campaign.budget,
        "judgments": (
            valued
            if valued is not None
            else Judgment.objects.filter(campaign=campaign, **{f"{field}__isnull": False}).count()
        ),
        "assignments": Assignment.objects.filter(campaign=campaign).count(),
        "extra_by_reason": [
            {"reason": labels.get(r, r or "not recorded"), "assignments": n} for r, n in sorted(extras.items())
        ],
        "units_settled": sum(n for r, n in states.items() if r not in OPEN_REASONS),
        "units_open": sum(n for r, n in states.items() if r in OPEN_REASONS),
        "units_adjudicated": Adjudication.objects.filter(campaign=campaign).count(),
        "units_by_state": [{"state": labels.get(r, r), "units": n} for r, n in sorted(states.items())],
    }
    ds = model.get("dawid_skene")
    if ds and len(ds["graders"]) >= campaign.max_overlap:
        out["simulated"] = _simulated(campaign, ds)
    return out


def _simulated(campaign: Campaign, ds: dict[str, Any]) -> list[dict[str, Any]]:
    """Judgments and accuracy by policy, simulated with this campaign's categories, overlaps and the
    graders' estimated accuracies (each grader's Dawid–Skene accuracy), on SIM_UNITS units."""
    accuracy = np.clip([g["accuracy"] for g in ds["graders"]], 0, 1)
    k = len(ds["categories"])
    sims = []
    for seed in range(SIM_SEEDS):
        rng = np.random.default_rng(seed)
        sims.append(
            simulate_judgments(
                rng.integers(0, k, SIM_UNITS), accuracy, max_overlap=campaign.max_overlap, n_categories=k, rng=rng
            )
        )
    policies = tuple(
        dict.fromkeys(
            ["fixed", str(campaign.policy) if campaign.policy != Policy.FIXED else "consensus", "uncertainty"]
        )
    )
    table = compare_policies_long(
        sims, initial_overlap=campaign.initial_overlap, max_overlap=campaign.max_overlap, policies=policies
    )
    return table.to_dict("records")
