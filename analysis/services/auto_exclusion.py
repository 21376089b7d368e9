"""Automatic exclusion (docs/design.md §5.6, "Excluded graders"): an organizer may ask that a grader
whose gold accuracy, or whose reliability in the grader model, is below a threshold be excluded
from the analysis, as an organizer would exclude them by hand.

The thresholds are the campaign's ``policy_params`` ``exclude_gold_below``,
``exclude_reliability_below`` and ``exclude_min_judgments`` (default 5; fewer judgments are too
thin to judge anyone by). They are checked when an analysis run computes its report
(``analysis.services.report.report_compute``): gold accuracy before the judgments are loaded, the
model's reliability after a first fit; a grader newly below either is excluded through
``grading.services.exclusion.grader_exclude`` without an actor (automatic, audited), before any
figure of the run is computed, so the run's figures are those without them. A grader already
excluded, or one an organizer included again after an automatic exclusion, is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import selectors
from analysis.services.sections.hidden_units import gold_scores
from grading.models import Campaign, CampaignRole
from grading.models.choices import Role
from grading.services.exclusion import grader_exclude
from grading.services.payloads import VALUE_FIELD
from grading.services.policy_params import EXCLUSION_SCHEMES, policy_param

DEFAULT_MIN_JUDGMENTS = 5


@dataclass(frozen=True)
class Thresholds:
    gold_below: float | None
    reliability_below: float | None
    min_judgments: int

    @property
    def any(self) -> bool:
        return self.gold_below is not None or self.reliability_below is not None


def thresholds_of(campaign: Campaign) -> Thresholds:
    """The campaign's thresholds (None: not asked for; nothing applies to schemes without categories)."""
    usable = campaign.scheme in EXCLUSION_SCHEMES

    def read(name: str) -> float | None:
        value = policy_param(campaign=campaign, name=name, default=None)
        return float(value) if usable and value is not None else None

    return Thresholds(
        gold_below=read("exclude_gold_below"),
        reliability_below=read("exclude_reliability_below"),
        min_judgments=int(policy_param(campaign=campaign, name="exclude_min_judgments", default=DEFAULT_MIN_JUDGMENTS)),
    )


def _candidates(campaign_id: int) -> dict[int, CampaignRole]:
    """The graders a threshold may still exclude, by user id: included, and not kept by an organizer."""
    roles = CampaignRole.objects.filter(
        campaign_id=campaign_id, role=Role.GRADER, excluded_at__isnull=True, auto_exclusion_waived_at__isnull=True
    )
    return {role.user_id: role for role in roles}


def shown_below(value: float, threshold: float) -> str:
    """`value` with the fewest decimals (at least 2) that still read as below `threshold`: 0.5999
    below 0.6 is "0.5999", never "0.60"."""
    for places in range(2, 8):
        text = f"{value:.{places}f}"
        if float(text) < threshold:
            return text
    return repr(value)


def gold_exclusions_apply(*, campaign: Campaign, thresholds: Thresholds) -> list[CampaignRole]:
    """Exclude every candidate grader with at least ``min_judgments`` gold judgments whose accuracy on
    them is below ``gold_below`` (exactly at it is kept). Returns the roles excluded."""
    if thresholds.gold_below is None:
        return []
    gold = selectors.gold_judgments_frame(campaign_id=campaign.pk, field=VALUE_FIELD[campaign.scheme])
    if gold.empty:
        return []
    scores = gold_scores(gold, numeric=False)
    low = scores[(scores["n"] >= thresholds.min_judgments) & (scores["accuracy"] < thresholds.gold_below)]
    return _exclude(
        campaign,
        low,
        lambda r: (
            f"automatic: gold accuracy {shown_below(r['accuracy'], thresholds.gold_below)} below "
            f"{thresholds.gold_below:g} after {int(r['n'])} gold units ({round(r['accuracy'] * r['n'])} right)"
        ),
    )


def reliability_exclusions_apply(
    *, campaign: Campaign, thresholds: Thresholds, model: dict[str, Any]
) -> list[CampaignRole]:
    """Exclude every candidate grader with at least ``min_judgments`` judgments in the fitted
    Dawid–Skene model (`model`, the report's model section) whose accuracy there is below
    ``reliability_below`` (exactly at it is kept). Returns the roles excluded."""
    ds = (model or {}).get("dawid_skene")
    if thresholds.reliability_below is None or not ds:
        return []
    fitted = pd.DataFrame(ds["graders"], columns=["grader", "judgments", "accuracy"])
    low = fitted[
        (fitted["judgments"] >= thresholds.min_judgments) & (fitted["accuracy"] < thresholds.reliability_below)
    ]
    return _exclude(
        campaign,
        low,
        lambda r: (
            f"automatic: model reliability {shown_below(r['accuracy'], thresholds.reliability_below)} below "
            f"{thresholds.reliability_below:g} after {int(r['judgments'])} judgments"
        ),
    )


def _exclude(campaign: Campaign, low: pd.DataFrame, reason: Any) -> list[CampaignRole]:
    if low.empty:
        return []
    candidates = _candidates(campaign.pk)
    excluded = []
    for row in low.to_dict("records"):
        role = candidates.get(int(row["grader"]))
        if role is not None:
            excluded.append(grader_exclude(campaign=campaign, role=role, reason=reason(row), actor=None))
    return excluded
