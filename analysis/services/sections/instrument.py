"""The instrument card's linked parts (docs/design.md §5.5): reproducibility against a sibling rating
campaign over the same units, and resolution from a pairwise campaign over pairs of the items.

Precision (per-unit std, its middle-67% band, the crescent) and repeatability (α with its interval)
are already in the result's confusability and agreement sections; the card shows them from there.
Units of two campaigns are matched by external id; a pairwise unit's two items are matched to the
rating units of the same candidates (candidates judged in more than one unit are left out). Graders
excluded in a linked campaign are left out of its judgments here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from analysis import metrics as m
from analysis import selectors
from analysis.services.judgments import Judgments, judgments_of
from analysis.services.values import ANSWER_COLUMNS, ValueSpec, value_spec
from grading.models import Campaign
from grading.models.choices import Scheme

TOP_MOVED = 10
NUMBER_COLUMN = {Scheme.BROAD_FINE: "fine", Scheme.NUMERIC: "score"}


def slice_columns(spec: ValueSpec, *names: str) -> list[str]:
    """The columns to ask ``Judgments.chunks`` for to read ``names``: with unit and grader, and the
    scheme's own value columns, from which every slice derives ``cat`` and ``num`` (``values.with_values``)."""
    own = [c for c in ANSWER_COLUMNS.get(spec.scheme, ()) if c]
    return list(dict.fromkeys(["unit", "grader", *names, *own]))


def rows_among(pieces: Iterable[pd.DataFrame], among: Any | None) -> Iterator[pd.DataFrame]:
    """The rows of long frames (unit, grader, ...) whose unit is ``among`` (None: every row), in order.

    So that a figure reads the same graders and the same units' rows as from every row, each grader
    none of whose rows is among them keeps its first row (one row a grader, at the end): a figure over
    graders (``metrics.system_comparison``) then has the same graders, one over units (``metrics.resolution``)
    sees those rows only as units it leaves out anyway, and either is not handed nothing where it
    was handed something (its error is the same). The rows held are those of the units that matter,
    not every judgment."""
    if among is None:
        yield from pieces
        return
    graders_in: set[Any] = set()
    firsts: pd.DataFrame | None = None  # each grader's first row outside ``among``: O(graders)
    for piece in pieces:
        inside = piece["unit"].isin(among).to_numpy()
        if inside.any():
            kept = piece if inside.all() else piece[inside]
            graders_in.update(pd.unique(kept["grader"]))
            yield kept
        outside = piece[~inside].drop_duplicates("grader")
        if len(outside):
            firsts = outside if firsts is None else pd.concat([firsts, outside]).drop_duplicates("grader")
    if firsts is not None:
        firsts = firsts[~firsts["grader"].isin(graders_in).to_numpy()]
        if len(firsts):
            yield firsts


def joined(pieces: Iterable[pd.DataFrame]) -> pd.DataFrame | None:
    """The non-empty pieces as one frame (None: there is none)."""
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return None
    return pieces[0] if len(pieces) == 1 else pd.concat(pieces)


def _named(rows: pd.DataFrame, column: str, names: pd.Series) -> pd.DataFrame:
    """Long (unit, grader, value) of the rows with a number in ``column``, the unit named by ``names``
    (indexed by unit id); units without a name left out."""
    rows = rows[["unit", "grader", column]].dropna()
    return pd.DataFrame(
        {
            "unit": rows["unit"].map(names).to_numpy(),
            "grader": rows["grader"].to_numpy(),
            "value": rows[column].to_numpy(dtype=float),
        }
    ).dropna(subset=["unit"])


def _ratings(
    judgments: Judgments, scheme: str, keys: pd.DataFrame, by: str = "external_id", among: Any | None = None
) -> pd.DataFrame:
    """Long (unit, grader, value) of a rating campaign's numbers, the unit named by ``by``, read a slice
    at a time: of the units named ``among`` only (``rows_among``; None: every unit)."""
    column = NUMBER_COLUMN[scheme]
    names = keys.set_index("unit")[by]
    pieces = (_named(chunk, column, names) for chunk in judgments.chunks(slice_columns(judgments.spec, column)))
    ratings = joined(rows_among(pieces, among))
    if ratings is None:
        return pd.DataFrame({"unit": [], "grader": [], "value": []})
    return ratings.reset_index(drop=True)


def _counted_judgments(campaign_id: int) -> pd.DataFrame:
    """A linked campaign's judgments without the graders excluded there (as its own analysis has them):
    another campaign's, read whole as one frame."""
    return selectors.without_graders(
        selectors.judgments_frame(campaign_id=campaign_id), selectors.excluded_grader_ids(campaign_id=campaign_id)
    )


def _moved(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return frame.reset_index(names="unit").to_dict("records")


def reproducibility(*, campaign_id: int, scheme: str, judgments: Judgments, sibling_id: int) -> dict[str, Any]:
    """This campaign's numbers against its sibling's over the units of the same external id: α of
    each campaign reads every judgment, so every unit's rows are read here."""
    sibling = Campaign.objects.get(pk=sibling_id)
    out: dict[str, Any] = {"sibling": sibling.name, "sibling_id": sibling.pk}
    if sibling.scheme != scheme:
        return {**out, "reason": f"the sibling is a {sibling.get_scheme_display()} campaign, this one is not"}
    first = _ratings(judgments, scheme, selectors.unit_keys_frame(campaign_id=campaign_id))
    second = _ratings(
        judgments_of(_counted_judgments(sibling_id), judgments.spec),
        scheme,
        selectors.unit_keys_frame(campaign_id=sibling_id),
    )
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


def _pairs(pairwise_id: int) -> pd.DataFrame:
    """The pairwise campaign's verdicts: unit_a, unit_b (the candidates' external ids), grader, verdict."""
    pair_keys = selectors.unit_keys_frame(campaign_id=pairwise_id).set_index("unit")
    verdicts = _counted_judgments(pairwise_id)[["unit", "grader", "verdict"]].dropna()
    return pd.DataFrame(
        {
            "unit_a": verdicts["unit"].map(pair_keys["candidate"]).to_numpy(),
            "unit_b": verdicts["unit"].map(pair_keys["candidate_b"]).to_numpy(),
            "grader": verdicts["grader"].to_numpy(),
            "verdict": verdicts["verdict"].to_numpy(),
        }
    )


def resolution(*, campaign_id: int, scheme: str, judgments: Judgments, pairwise_id: int) -> dict[str, Any]:
    """The smallest difference in unit means the pairwise campaign confirms: only the means of the
    candidates it pairs count, so only their units' ratings are read (``rows_among``)."""
    pairwise = Campaign.objects.get(pk=pairwise_id)
    out: dict[str, Any] = {"pairwise": pairwise.name, "pairwise_id": pairwise.pk}
    keys = selectors.unit_keys_frame(campaign_id=campaign_id)
    single = keys[~keys["candidate"].duplicated(keep=False)]
    pairs = _pairs(pairwise_id)
    complete = pairs.dropna()
    paired = pd.unique(pd.concat([complete["unit_a"], complete["unit_b"]]))
    ratings = _ratings(judgments, scheme, single, by="candidate", among=paired)
    if ratings.empty or pairs.empty:
        return {**out, "reason": "one of the two campaigns has no judgments yet"}
    try:
        result = m.resolution(ratings, complete)
    except ValueError as exc:
        return {**out, "reason": str(exc)}
    return {
        **out,
        "resolution": result["resolution"],
        "n_pairs": result["n_pairs"],
        "curve": result["curve"].to_dict("records"),
    }


def instrument_section(
    *, campaign_id: int, scheme: str, judgments: pd.DataFrame | Judgments, spec: ValueSpec | None = None
) -> dict[str, Any] | None:
    """The linked parts of the instrument card, or None for campaigns that are not rated on a number.

    ``spec``: how the judgments are read, for a plain frame (None: the campaign's; ``values.value_spec``)."""
    if scheme not in NUMBER_COLUMN:
        return None
    if not isinstance(judgments, Judgments):
        judgments = judgments_of(judgments, spec or value_spec(Campaign.objects.get(pk=campaign_id)))
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
