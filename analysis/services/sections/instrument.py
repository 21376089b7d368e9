"""The instrument card's linked parts (docs/design.md §5.5): reproducibility against a sibling rating
campaign over the same units, and resolution from a pairwise campaign over pairs of the items.

Precision (per-unit std, its middle-67% band, the crescent) and repeatability (α with its interval)
are already in the result's confusability and agreement sections; the card shows them from there.
Units of two campaigns are matched by external id; a pairwise unit's two items are matched to the
rating units of the same candidates (candidates judged in more than one unit are left out). Graders
excluded in a linked campaign are left out of its judgments here too.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import metrics as m
from analysis import selectors
from grading.models import Campaign
from grading.models.choices import Scheme

TOP_MOVED = 10
NUMBER_COLUMN = {Scheme.BROAD_FINE: "fine", Scheme.NUMERIC: "score"}


def _ratings(judgments: pd.DataFrame, scheme: str, keys: pd.DataFrame, by: str = "external_id") -> pd.DataFrame:
    """Long (unit, grader, value) of a rating campaign's numbers, the unit named by ``by``."""
    column = NUMBER_COLUMN[scheme]
    rows = judgments[["unit", "grader", column]].dropna()
    names = keys.set_index("unit")[by]
    return pd.DataFrame(
        {
            "unit": rows["unit"].map(names).to_numpy(),
            "grader": rows["grader"].to_numpy(),
            "value": rows[column].to_numpy(dtype=float),
        }
    ).dropna(subset=["unit"])


def _counted_judgments(campaign_id: int) -> pd.DataFrame:
    """A linked campaign's judgments without the graders excluded there (as its own analysis has them)."""
    return selectors.without_graders(
        selectors.judgments_frame(campaign_id=campaign_id), selectors.excluded_grader_ids(campaign_id=campaign_id)
    )


def _moved(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return frame.reset_index(names="unit").to_dict("records")


def reproducibility(*, campaign_id: int, scheme: str, judgments: pd.DataFrame, sibling_id: int) -> dict[str, Any]:
    sibling = Campaign.objects.get(pk=sibling_id)
    out: dict[str, Any] = {"sibling": sibling.name, "sibling_id": sibling.pk}
    if sibling.scheme != scheme:
        return {**out, "reason": f"the sibling is a {sibling.get_scheme_display()} campaign, this one is not"}
    first = _ratings(judgments, scheme, selectors.unit_keys_frame(campaign_id=campaign_id))
    second = _ratings(_counted_judgments(sibling_id), scheme, selectors.unit_keys_frame(campaign_id=sibling_id))
    if first.empty or second.empty:
        return {**out, "reason": "one of the two campaigns has no judgments yet"}
    try:
        result = m.reproducibility(first, second, top=TOP_MOVED)
    except ValueError as exc:
        return {**out, "reason": str(exc)}
    return {
        **out,
        **{k: v for k, v in result.items() if not k.startswith("moved_")},
        "moved_mean": _moved(result["moved_mean"]),
        "moved_std": _moved(result["moved_std"]),
    }


def resolution(*, campaign_id: int, scheme: str, judgments: pd.DataFrame, pairwise_id: int) -> dict[str, Any]:
    pairwise = Campaign.objects.get(pk=pairwise_id)
    out: dict[str, Any] = {"pairwise": pairwise.name, "pairwise_id": pairwise.pk}
    keys = selectors.unit_keys_frame(campaign_id=campaign_id)
    single = keys[~keys["candidate"].duplicated(keep=False)]
    ratings = _ratings(judgments, scheme, single, by="candidate")
    pair_keys = selectors.unit_keys_frame(campaign_id=pairwise_id).set_index("unit")
    verdicts = _counted_judgments(pairwise_id)[["unit", "grader", "verdict"]].dropna()
    if ratings.empty or verdicts.empty:
        return {**out, "reason": "one of the two campaigns has no judgments yet"}
    pairs = pd.DataFrame(
        {
            "unit_a": verdicts["unit"].map(pair_keys["candidate"]).to_numpy(),
            "unit_b": verdicts["unit"].map(pair_keys["candidate_b"]).to_numpy(),
            "grader": verdicts["grader"].to_numpy(),
            "verdict": verdicts["verdict"].to_numpy(),
        }
    )
    try:
        result = m.resolution(ratings, pairs.dropna())
    except ValueError as exc:
        return {**out, "reason": str(exc)}
    return {
        **out,
        "resolution": result["resolution"],
        "n_pairs": result["n_pairs"],
        "curve": result["curve"].to_dict("records"),
    }


def instrument_section(*, campaign_id: int, scheme: str, judgments: pd.DataFrame) -> dict[str, Any] | None:
    """The linked parts of the instrument card, or None for campaigns that are not rated on a number."""
    if scheme not in NUMBER_COLUMN:
        return None
    sibling_id, pairwise_id = selectors.campaign_links(campaign_id=campaign_id)
    return {
        "reproducibility": reproducibility(
            campaign_id=campaign_id, scheme=scheme, judgments=judgments, sibling_id=sibling_id
        )
        if sibling_id
        else None,
        "resolution": resolution(campaign_id=campaign_id, scheme=scheme, judgments=judgments, pairwise_id=pairwise_id)
        if pairwise_id
        else None,
    }
