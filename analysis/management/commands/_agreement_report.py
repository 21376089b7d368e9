"""The agreement report of a ratings file: the ``agreement`` command's side of the one builder.

A ratings file (``unit,grader,value`` or ``unit,grader,broad,fine``, optional ``query``) becomes the
same long judgment frame and the same ``ValueSpec`` an analysis run builds from the database, and
both go through ``analysis.services.sections.agreement.agreement_report``. So a campaign's judgments exported
to a file give the command every figure the app shows, under the same keys (docs/design.md §6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.metrics.krippendorff import LEVELS
from analysis.reports.serialize import jsonable
from analysis.selectors import JUDGMENT_COLUMNS
from analysis.services.sections.agreement import agreement_report
from analysis.services.sections.model import model_truth
from analysis.services.values import BROAD, BROAD_COLLAPSE, MAX_NUMERIC_CATEGORIES, ValueSpec, with_values
from grading.models.choices import Scheme as CampaignScheme

Scheme = Literal["categorical", "numeric", "broad_fine"]
SCHEMES = ("categorical", "numeric", "broad_fine")
# The file's value column -> the judgment column the campaign of that scheme fills.
VALUE_COLUMN = {"categorical": "label", "numeric": "score"}


def build_agreement_report(
    frame: pd.DataFrame,
    *,
    scheme: Scheme = "categorical",
    level: str | None = None,
    categories: Sequence[Any] | None = None,
    collapse: Mapping[Any, Any] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The agreement, confusability and FINE-within-BROAD report of a ratings frame, as JSON types.

    Parameters
    ----------
    frame : long DataFrame, columns ``unit``, ``grader``, ``value`` (``broad`` and ``fine`` instead of
        ``value`` for the ``broad_fine`` scheme), optionally ``query``; one row per (unit, grader).
    scheme : "categorical" (labels, ordered by ``categories`` or sorted), "numeric" (numbers; the scale
        points, ``categories`` or else the values seen, are also categories for kappa and patterns when
        there are at most 11, as in a numeric campaign) or "broad_fine".
    level : Krippendorff's alpha level; default: ordinal for categorical data with ``categories``
        given, nominal without, interval for numbers and FINE.
    categories : category order (numeric: the scale points); broad_fine defaults to NS, SS, VS.
    collapse : category merge map such as {"VS": "S", "SS": "S"}; broad_fine collapses so by default.
    n_boot, confidence, seed : the bootstrap intervals, seeded as an analysis run seeds them.

    Returns
    -------
    dict: scheme, seed, parameters, n_units, n_graders, n_judgments, and the sections ``agreement``,
    ``confusability``, ``fine_within_broad`` and ``units`` with the keys of an analysis run's result.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"`scheme` must be one of {', '.join(map(repr, SCHEMES))}; got {scheme!r}")
    if level is not None and level not in LEVELS:
        raise ValueError(f"`level` must be one of {', '.join(map(repr, LEVELS))}; got {level!r}")
    judgments = ratings_judgments(frame, scheme=scheme)
    spec = ratings_spec(judgments, scheme=scheme, level=level, categories=categories, collapse=collapse)
    judgments = with_values(judgments, spec)  # once, as an analysis run does where it loads a campaign
    sections, units = agreement_report(judgments, spec, n_boot=n_boot, confidence=confidence, seed=seed)
    # Model-based truth per unit, as an analysis run adds it (docs/design.md §5.6).
    model, model_units = model_truth(judgments, spec, {})
    if not model_units.empty and not units.empty:
        units = units.merge(model_units, on="unit", how="left")
    report = {
        "scheme": scheme,
        "seed": seed,
        "parameters": {"n_boot": n_boot, "confidence": confidence},
        "n_units": int(frame["unit"].nunique()),
        "n_graders": int(frame["grader"].nunique()),
        "n_judgments": len(frame),
        **sections,
        "model": model,
        "units": units.to_dict("records"),
    }
    return jsonable(report)


def ratings_judgments(frame: pd.DataFrame, *, scheme: Scheme) -> pd.DataFrame:
    """A ratings frame as the long judgment frame of ``analysis.selectors.judgments_frame``."""
    out = pd.DataFrame({column: [None] * len(frame) for column in JUDGMENT_COLUMNS}, dtype=object)
    out["unit"], out["grader"] = _ids(frame["unit"]), _ids(frame["grader"])
    if "query" in frame.columns:
        out["query"] = _ids(frame["query"])
    if scheme == "broad_fine":
        out["broad"], out["fine"] = frame["broad"].to_numpy(), frame["fine"].to_numpy(dtype=float)
    else:
        values = frame["value"].to_numpy(dtype=float if scheme == "numeric" else object)
        out[VALUE_COLUMN[scheme]] = values
    for column in ("fine", "score"):
        out[column] = pd.to_numeric(out[column], errors="coerce").astype(float)
    return out.sort_values(["unit", "grader"], kind="stable", ignore_index=True)


def _ids(values: pd.Series) -> np.ndarray:
    """Ids that are all integers become numbers, so unit 10 sorts after unit 9 as in the database."""
    text = values.astype(str)
    if text.str.fullmatch(r"-?\d{1,18}").all():
        return text.astype(np.int64).to_numpy()
    return values.to_numpy(dtype=object)


def _number(category: Any) -> float:
    try:
        return round(float(category), 10)
    except ValueError:
        raise ValueError(f"the categories of a numeric scale must be numbers; got {category!r}") from None


def ratings_spec(
    judgments: pd.DataFrame,
    *,
    scheme: Scheme,
    level: str | None,
    categories: Sequence[Any] | None,
    collapse: Mapping[Any, Any] | None,
) -> ValueSpec:
    """How to read a ratings file: the ``ValueSpec`` a campaign of that scheme would have."""
    collapse = dict(collapse) if collapse else None
    if scheme == "broad_fine":
        return ValueSpec(
            CampaignScheme.BROAD_FINE,
            "broad",
            list(categories or BROAD),
            BROAD_COLLAPSE if collapse is None else collapse,
            "fine",
            "FINE",
            level or "interval",
        )
    if scheme == "numeric":  # the scale points (given, else those seen) are categories when ≤ 11
        given = None if categories is None else [_number(c) for c in categories]
        values = given if given is not None else sorted(judgments["score"].round(10).unique())
        grid = values if len(values) <= MAX_NUMERIC_CATEGORIES else []
        return ValueSpec(
            CampaignScheme.NUMERIC, "score" if grid else None, grid, collapse, "score", "score", level or "interval"
        )
    ordered = categories is not None
    labels = list(categories) if ordered else sorted(judgments["label"].unique())
    return ValueSpec(
        CampaignScheme.CATEGORICAL,
        "label",
        labels,
        collapse,
        "label_position",
        "label position",
        level or ("ordinal" if ordered else "nominal"),
        ordered,
    )
