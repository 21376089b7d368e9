"""Uploaded per-unit system scores against the ground truth, confusability-aware (docs/design.md §5.3, §5.7).

For one system's scores ``x_u`` and the ground truth ``g_u`` (mean, median or majority of the unit's
judgments): Pearson and Spearman with bootstrap intervals over units, and the four methods of §5.3:
(1) the metrics per confusability band (tertiles of the measure, or given cut points), (2) the metrics
on the low-confusability subset (measure ≤ a threshold, default the median), (3) the mean
confusability of the evaluated set beside the metrics, (4) caCorr, the Pearson correlation weighted
by ``w_u = 1 − (c_u − min c) / (max c − min c)``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from ._checks import as_positive_int, as_rng, choice, short
from .bootstrap import MAX_CELLS, Estimate, percentile_interval
from .confusability import ca_corr

Metric = Literal["pearson", "spearman"]
METRICS: tuple[Metric, ...] = ("pearson", "spearman")
MEASURES = {"std": "std", "dif": "dif", "entropy": "entropy"}
AGGREGATES = {"mean": "mean", "median": "median", "majority": "majority"}


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``x`` with the same row of ``y`` (NaN where a row is constant)."""
    dx, dy = x - x.mean(axis=-1, keepdims=True), y - y.mean(axis=-1, keepdims=True)
    denom = np.sqrt((dx**2).sum(axis=-1) * (dy**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (dx * dy).sum(axis=-1) / np.where(denom > 0, denom, 1.0), np.nan)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks (1 = smallest; ties share their average rank) along the last axis.

    What ``scipy.stats.rankdata(values, axis=-1)`` gives, from one sort: a tied run's first and last
    positions are spread over it with running maximum / minimum, so there is no loop over rows.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[-1]
    order = np.argsort(values, axis=-1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=-1)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    ends = np.ones(ordered.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    position = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[..., ::-1], axis=-1)[..., ::-1]
    ranks = np.empty(ordered.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=-1)
    return ranks


def correlation(x: np.ndarray, y: np.ndarray, method: Metric) -> np.ndarray:
    """Pearson or Spearman correlation along the last axis (rows of a 2-D array are separate samples)."""
    choice(method, {m: m for m in METRICS}, name="method")
    if method == "spearman":
        x, y = average_ranks(x), average_ranks(y)
    return _rowwise_pearson(np.asarray(x, dtype=float), np.asarray(y, dtype=float))


def correlation_ci(
    x: np.ndarray, y: np.ndarray, method: Metric, *, rng: np.random.Generator, n_boot: int, confidence: float = 0.95
) -> Estimate:
    """A correlation with its percentile bootstrap interval, resampling units (pairs (x_u, y_u)).

    A resample is a row of unit weights (how often each unit was drawn), so no resampled array is
    built and nothing is sorted per resample: Pearson is a weighted Pearson, and Spearman's average
    ranks follow from the weights of the units below each distinct value (cumulative sums).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.size
    if n < 3:
        nan = float("nan")
        return Estimate(nan, nan, nan, f"{n} units; a correlation needs at least 3")
    value = float(correlation(x, y, method))
    rng, n_boot = as_rng(rng), as_positive_int(n_boot, name="n_boot")
    block = max(1, MAX_CELLS // n)  # resamples at once: the arrays stay small enough for the cache
    replicates = [
        _weighted_correlation(x, y, _weights(rng, n, min(block, n_boot - start)), method)
        for start in range(0, n_boot, block)
    ]
    low, high = percentile_interval(np.concatenate(replicates), confidence)
    reason = None if np.isfinite(value) else "the scores or the ground truth are constant"
    return Estimate(value, low, high, reason)


def _weights(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """(size, n) draw counts of ``size`` resamples of n units."""
    draws = rng.integers(0, n, size=(size, n)) + np.arange(size)[:, None] * n
    return np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(float)


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(b, n) average rank of each unit within each weighted resample (ties: the average)."""
    distinct, group = np.unique(values, return_inverse=True)
    per_group = np.zeros((weights.shape[0], distinct.size))
    for_groups = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(group[for_groups]) != 0])
    per_group[:, group[for_groups][bounds]] = np.add.reduceat(weights[:, for_groups], bounds, axis=1)
    below = np.cumsum(per_group, axis=1) - per_group
    return (below + (per_group + 1) / 2)[:, group]


def _weighted_correlation(x: np.ndarray, y: np.ndarray, w: np.ndarray, method: Metric) -> np.ndarray:
    """Correlation of x and y in each weighted resample (rows of ``w``)."""
    if method == "spearman":
        x, y = _weighted_ranks(x, w), _weighted_ranks(y, w)
    else:
        x, y = np.broadcast_to(x, w.shape), np.broadcast_to(y, w.shape)
    total = w.sum(axis=1, keepdims=True)
    dx = x - (w * x).sum(axis=1, keepdims=True) / total
    dy = y - (w * y).sum(axis=1, keepdims=True) / total
    cov, vx, vy = (w * dx * dy).sum(axis=1), (w * dx**2).sum(axis=1), (w * dy**2).sum(axis=1)
    denom = np.sqrt(vx * vy)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 1e-12 * total[:, 0] ** 2, cov / np.where(denom > 0, denom, 1.0), np.nan)


def _metrics(x: np.ndarray, g: np.ndarray) -> dict[str, float]:
    return {m: float(correlation(x, g, m)) if x.size >= 3 else float("nan") for m in METRICS}


def _bands(conf: np.ndarray, cuts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Band index of each unit and the cut points: tertiles unless ``cuts`` are given."""
    if cuts is None:
        cuts = np.unique(np.quantile(conf, [1 / 3, 2 / 3]))
    cuts = np.asarray(cuts, dtype=float)
    if cuts.ndim != 1 or (np.diff(cuts) <= 0).any():
        raise ValueError(f"`cuts` must be an increasing 1-D array, got {short(cuts)}")
    return np.searchsorted(cuts, conf, side="right"), cuts


def evaluate_scores(
    scores: pd.Series,
    units: pd.DataFrame,
    *,
    aggregate: str = "mean",
    measure: str = "std",
    threshold: float | None = None,
    cuts: np.ndarray | None = None,
    rng: np.random.Generator,
    n_boot: int = 1000,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """One system's per-unit scores evaluated against the ground truth, confusability-aware.

    Parameters
    ----------
    scores : the system's score per unit (Series indexed by unit).
    units : per-unit table of :func:`unit_confusability` (index unit; the aggregate and measure columns).
    aggregate : the ground truth: "mean", "median" or "majority".
    measure : the confusability: "std", "dif" or "entropy".
    threshold : the low-confusability subset is the units with measure ≤ threshold (default: median).
    cuts : band cut points (default: the tertiles of the measure).

    Returns
    -------
    dict: ``n_units`` (units with a score, a ground truth and a measure), ``pearson`` / ``spearman``
    (value, ci_low, ci_high, reason), ``bands`` (list: low, high, n, pearson, spearman,
    mean_confusability), ``low_subset`` (threshold, n, pearson, spearman, mean_confusability),
    ``mean_confusability`` of the evaluated set, and ``ca_corr``.
    """
    column = choice(aggregate, AGGREGATES, name="aggregate")
    conf_column = choice(measure, MEASURES, name="measure")
    if not isinstance(scores, pd.Series):
        raise ValueError(f"`scores` must be a pandas Series indexed by unit, got {type(scores).__name__}")
    frame = pd.DataFrame({"x": scores.astype(float)}).join(units[[column, conf_column]], how="inner").dropna()
    x, g, c = (frame[k].to_numpy(dtype=float) for k in ("x", column, conf_column))
    out: dict[str, Any] = {"n_units": int(len(frame)), "aggregate": aggregate, "measure": measure}
    for m in METRICS:
        out[m] = correlation_ci(x, g, m, rng=rng, n_boot=n_boot, confidence=confidence)._asdict()
    if len(frame) < 3:
        return {
            **out,
            "bands": [],
            "low_subset": None,
            "mean_confusability": float(np.mean(c)) if c.size else None,
            "ca_corr": float("nan"),
        }
    band, cuts = _bands(c, cuts)
    edges = np.concatenate([[c.min()], cuts, [c.max()]])
    out["bands"] = [
        {
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "n": int((band == b).sum()),
            **_metrics(x[band == b], g[band == b]),
            "mean_confusability": float(c[band == b].mean()) if (band == b).any() else None,
        }
        for b in range(cuts.size + 1)
    ]
    limit = float(np.median(c)) if threshold is None else float(threshold)
    low = c <= limit
    out["low_subset"] = {
        "threshold": limit,
        "n": int(low.sum()),
        **_metrics(x[low], g[low]),
        "mean_confusability": float(c[low].mean()) if low.any() else None,
    }
    out["mean_confusability"] = float(c.mean())
    out["ca_corr"] = ca_corr(x, g, c)
    return out
