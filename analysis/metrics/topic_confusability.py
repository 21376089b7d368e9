"""Confusability-aware means of a retrieval measure over topics (docs/design.md §5.8).

The transfer of §5.3's four methods from a correlation over units to an IR measure's mean over
topics. A topic's confusability ``c_q`` is the mean confusability of the judged units the measure
read in the run's ranking for that topic; the measure's values ``x_q`` are then summarised as (1) the
mean per confusability band (tertiles of ``c_q``), (2) the mean over the low-confusability topics
(``c_q`` ≤ a threshold, default the median), (3) the mean beside the mean confusability of the
evaluated units, and (4) the weighted mean ``Σ w_q x_q / Σ w_q`` with
``w_q = 1 − (c_q − min c) / (max c − min c)`` (all weights 1 when max = min), caCorr's weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._checks import short
from .confusability import normalised_weights

DECIMALS = 12


def tertile_bands(conf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Band index of each topic and the cut points: the tertiles of ``conf`` (linear interpolation),
    repeated cuts merged and cuts at or below the smallest value dropped, so that no band lies below
    every topic and equal confusabilities make one band. Band b holds ``cut[b-1] ≤ c < cut[b]``."""
    cuts = np.unique(np.quantile(conf, [1 / 3, 2 / 3]))
    cuts = cuts[cuts > conf.min()]
    return np.searchsorted(cuts, conf, side="right"), cuts


def topics_by_confusability(
    values: pd.Series, units: pd.DataFrame, *, threshold: float | None = None
) -> dict[str, Any]:
    """The four confusability-aware summaries of one run's per-topic values of one measure.

    Parameters
    ----------
    values : the measure's value per topic (Series indexed by topic id).
    units : the evaluated units, one row per (topic, unit) the measure read, with columns ``topic``
        and ``confusability`` (no NaN: units without a confusability are left out by the caller).
    threshold : the low-confusability topics are those with ``c_q`` ≤ threshold (default: the median).

    Returns
    -------
    dict: ``n_topics`` (topics with a value and at least one evaluated unit), ``topics_left_out``
    (topics with a value but no evaluated unit, sorted), ``n_units``, ``mean`` (of the measure over
    the ``n_topics``), ``mean_confusability`` (over the evaluated units), ``bands`` (list: low, high,
    n, mean, mean_confusability), ``low_subset`` (threshold, n, mean, mean_confusability) and
    ``weighted_mean``. Means of no topic are None.
    """
    if not isinstance(values, pd.Series):
        raise ValueError(f"`values` must be a pandas Series indexed by topic, got {type(values).__name__}")
    missing = {"topic", "confusability"} - set(units.columns)
    if missing:
        raise ValueError(f"`units` lacks column(s) {sorted(missing)}; got {list(units.columns)}")
    conf_values = units["confusability"].to_numpy(dtype=float)
    if np.isnan(conf_values).any() or (conf_values < 0).any():
        raise ValueError(f"`units['confusability']` must be numbers ≥ 0; got {short(conf_values)}")
    kept = units.loc[units["topic"].isin(values.index), ["topic", "confusability"]].astype({"confusability": float})
    # Rounded so that topics of equal confusability compare equal whatever the summation order left
    # in the last bits (a spread of 1e-16 would otherwise make weights 0 and 1 and split the bands).
    per_topic = kept.groupby("topic")["confusability"].mean().round(DECIMALS)
    topics = per_topic.index
    x = values.loc[topics].to_numpy(dtype=float)
    c = per_topic.to_numpy(dtype=float)
    out: dict[str, Any] = {
        "n_topics": int(topics.size),
        "topics_left_out": sorted(str(t) for t in values.index.difference(topics)),
        "n_units": int(len(kept)),
        "mean": _mean(x),
        "mean_confusability": _mean(kept["confusability"].to_numpy(dtype=float)),
    }
    if not topics.size:
        return {**out, "bands": [], "low_subset": None, "weighted_mean": None}
    band, cuts = tertile_bands(c)
    edges = np.concatenate([[c.min()], cuts, [c.max()]])
    out["bands"] = [
        {
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "n": int((band == b).sum()),
            "mean": _mean(x[band == b]),
            "mean_confusability": _mean(c[band == b]),
        }
        for b in range(cuts.size + 1)
    ]
    limit = float(np.median(c)) if threshold is None else float(threshold)
    low = c <= limit
    out["low_subset"] = {
        "threshold": limit,
        "n": int(low.sum()),
        "mean": _mean(x[low]),
        "mean_confusability": _mean(c[low]),
    }
    weights = normalised_weights(c)
    out["weighted_mean"] = float(weights @ x / weights.sum())
    return out


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None
