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
from scipy import stats

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


def correlation(x: np.ndarray, y: np.ndarray, method: Metric) -> np.ndarray:
    """Pearson or Spearman correlation along the last axis (rows of a 2-D array are separate samples)."""
    choice(method, {m: m for m in METRICS}, name="method")
    if method == "spearman":
        x, y = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
    return _rowwise_pearson(np.asarray(x, dtype=float), np.asarray(y, dtype=float))


def correlation_ci(x: np.ndarray, y: np.ndarray, method: Metric, *, rng: np.random.Generator, n_boot: int,
                   confidence: float = 0.95) -> Estimate:
    """A correlation with its percentile bootstrap interval, resampling units (pairs (x_u, y_u))."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.size
    if n < 3:
        nan = float("nan")
        return Estimate(nan, nan, nan, f"{n} units; a correlation needs at least 3")
    value = float(correlation(x, y, method))
    rng, n_boot = as_rng(rng), as_positive_int(n_boot, name="n_boot")
    block = max(1, MAX_CELLS // n)  # resamples at once: the arrays stay small enough for the cache
    replicates = np.concatenate([
        correlation(x[draws], y[draws], method)
        for draws in (rng.integers(0, n, size=(min(block, n_boot - start), n)) for start in range(0, n_boot, block))])
    low, high = percentile_interval(replicates, confidence)
    reason = None if np.isfinite(value) else "the scores or the ground truth are constant"
    return Estimate(value, low, high, reason)


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


def evaluate_scores(scores: pd.Series, units: pd.DataFrame, *, aggregate: str = "mean", measure: str = "std",
                    threshold: float | None = None, cuts: np.ndarray | None = None,
                    rng: np.random.Generator, n_boot: int = 1000, confidence: float = 0.95) -> dict[str, Any]:
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
        return {**out, "bands": [], "low_subset": None, "mean_confusability": float(np.mean(c)) if c.size else None,
                "ca_corr": float("nan")}
    band, cuts = _bands(c, cuts)
    edges = np.concatenate([[c.min()], cuts, [c.max()]])
    out["bands"] = [{"low": float(edges[b]), "high": float(edges[b + 1]), "n": int((band == b).sum()),
                     **_metrics(x[band == b], g[band == b]),
                     "mean_confusability": float(c[band == b].mean()) if (band == b).any() else None}
                    for b in range(cuts.size + 1)]
    limit = float(np.median(c)) if threshold is None else float(threshold)
    low = c <= limit
    out["low_subset"] = {"threshold": limit, "n": int(low.sum()), **_metrics(x[low], g[low]),
                         "mean_confusability": float(c[low].mean()) if low.any() else None}
    out["mean_confusability"] = float(c.mean())
    out["ca_corr"] = ca_corr(x, g, c)
    return out
