"""The report's hidden units (docs/design.md §5.6, "Hidden units"): per grader, accuracy on gold
units (or mean absolute error on a numeric scale) and test–retest agreement on repeated units.

The pure functions take long frames and return per-grader frames; ``hidden_units_section`` reads the
database through the selectors and shapes the JSON section.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import selectors
from analysis.services.values import ANSWER_COLUMNS
from grading.models.choices import Scheme
from grading.services.gold import answer_scores
from grading.services.payloads import VALUE_FIELD


def gold_scores(frame: pd.DataFrame, *, numeric: bool) -> pd.DataFrame:
    """Per grader: ``n`` gold judgments and ``accuracy`` (share equal to the gold answer) or, when
    ``numeric``, ``mae`` (mean absolute error).

    Parameters
    ----------
    frame : long frame with columns grader, value (the grader's answer) and gold (the organizer's).
    """
    return _per_grader(frame["grader"], frame["value"], frame["gold"], numeric=numeric, names=("accuracy", "mae"))


def repeat_scores(frame: pd.DataFrame, *, numeric: bool) -> pd.DataFrame:
    """Per grader: ``n`` repeats and ``identical`` (share of repeats answered as the first time) or, when
    ``numeric``, ``mean_abs_diff`` (mean absolute difference between the two answers).

    Parameters
    ----------
    frame : long frame with columns grader, first (the original answer) and again (the repeat's).
    """
    return _per_grader(
        frame["grader"], frame["again"], frame["first"], numeric=numeric, names=("identical", "mean_abs_diff")
    )


def _per_grader(
    grader: pd.Series, answer: pd.Series, reference: pd.Series, *, numeric: bool, names: tuple[str, str]
) -> pd.DataFrame:
    score = answer_scores(answer.to_numpy(), reference.to_numpy(), numeric=numeric)
    name = names[1] if numeric else names[0]
    table = pd.DataFrame({"grader": grader.to_numpy(), name: score})
    grouped = table.groupby("grader", sort=True)[name]
    return pd.DataFrame({"n": grouped.size(), name: grouped.mean()}).reset_index()


def hidden_units_section(
    *, campaign_id: int, scheme: str, pseudonyms: dict[int, str], excluded: set[int] | frozenset[int] = frozenset()
) -> dict[str, Any]:
    """``gold``: per-grader scores on gold units; ``repeats``: per-grader test–retest agreement. Each is
    left out when there is nothing to show. The `excluded` graders' scores are kept, marked
    ``excluded`` (they are often why a grader was excluded)."""
    field = VALUE_FIELD.get(scheme)
    if field is None:
        return {}
    out: dict[str, Any] = {}
    gold = selectors.gold_judgments_frame(campaign_id=campaign_id, field=field)
    if not gold.empty:
        numeric = scheme == Scheme.NUMERIC
        scores = gold_scores(gold, numeric=numeric)
        out["gold"] = {
            "measure": "mae" if numeric else "accuracy",
            "units": int(gold["unit"].nunique()),
            "graders": _records(scores, pseudonyms, excluded),
        }
    repeats = _repeats(campaign_id, scheme, pseudonyms, excluded)
    if repeats:
        out["repeats"] = repeats
    return out


def _repeats(
    campaign_id: int, scheme: str, pseudonyms: dict[int, str], excluded: set[int] | frozenset[int]
) -> dict[str, Any]:
    categorical, numeric = ANSWER_COLUMNS.get(scheme, (None, None))  # compared as such
    fields = [f for f in (categorical, numeric) if f]
    if not fields:
        return {}
    pairs = selectors.repeat_pairs_frame(campaign_id=campaign_id, fields=fields)
    if pairs.empty:
        return {}
    parts = [
        repeat_scores(pairs.rename(columns={f"first_{f}": "first", f"again_{f}": "again"}), numeric=f == numeric)
        for f in fields
    ]
    scores = parts[0] if len(parts) == 1 else parts[0].merge(parts[1].drop(columns="n"), on="grader")
    return {
        "categorical": categorical is not None,
        "numeric": numeric is not None,
        "graders": _records(scores, pseudonyms, excluded),
    }


def _records(
    scores: pd.DataFrame, pseudonyms: dict[int, str], excluded: set[int] | frozenset[int]
) -> list[dict[str, Any]]:
    rows = []
    for row in scores.to_dict("records"):
        grader = int(row.pop("grader"))
        rows.append(
            {
                "grader": grader,
                "pseudonym": pseudonyms.get(grader, f"grader-{grader}"),
                **{k: (int(v) if k == "n" else float(v)) for k, v in row.items()},
                "excluded": grader in excluded,
            }
        )
    return rows


# --- the report's tables ----------------------------------------------------------------------------
