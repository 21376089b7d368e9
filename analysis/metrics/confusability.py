"""Per-unit confusability and aggregates (docs/design.md §5.3).

Confusability in the style of Fu et al. as docs/design.md §5.3 defines it: range, sample standard
deviation and entropy (bits) of one unit's judgments, and confusability-aware evaluation of a system
(correlation per confusability band, and caCorr: Pearson weighted by ``1 - normalised confusability``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._checks import as_labels, choice, factorize_long, short
from .shapes import runs

Aggregate = Literal["mean", "median", "majority"]
Measure = Literal["dif", "std", "entropy"]
COLUMNS = ["n", "mean", "median", "majority", "dif", "std", "entropy"]


def _tally(frame: pd.DataFrame) -> pd.DataFrame:
    """How many times each unit has each value: columns unit, value, count."""
    return frame.groupby(["unit", "value"], sort=False).size().rename("count").reset_index()


def _majority(tally: pd.DataFrame, means: pd.Series) -> pd.Series:
    """Most frequent value per unit; ties toward the value nearest the unit mean, then the lower.

    Each unit's rows of ``tally`` are together (``_tally`` keeps the order in which the pairs first
    appear, and each unit's judgments are together): the rule is three minima over each unit's
    rows, not a sort of every row by four keys."""
    units = tally["unit"].to_numpy()
    if not units.size:
        return pd.Series(dtype=float, index=pd.Index([], name="unit"), name="value")
    starts, n = runs(units)
    if np.unique(units[starts]).size != starts.size:  # a unit's rows apart: sort them together first
        tally = tally.sort_values("unit", kind="stable")
        return _majority(tally, means)
    count, value = tally["count"].to_numpy(), tally["value"].to_numpy(dtype=float)
    majority = _most_frequent(starts, n, count, value, means.reindex(units[starts]).to_numpy())
    return pd.Series(majority, index=pd.Index(units[starts], name="unit"), name="value").sort_index()


def _most_frequent(
    starts: np.ndarray, n: np.ndarray, count: np.ndarray, value: np.ndarray, mean: np.ndarray
) -> np.ndarray:
    """``_majority`` of tally rows given as arrays: each unit's ``n`` rows from ``starts`` (its
    values and their counts), and the unit's mean."""
    group = np.repeat(np.arange(starts.size), n)
    chosen = count == np.maximum.reduceat(count, starts)[group]
    distance = np.where(chosen, np.abs(value - mean[group]), np.inf)
    chosen &= distance == np.minimum.reduceat(distance, starts)[group]
    return np.minimum.reduceat(np.where(chosen, value, np.inf), starts)


def _entropy(tally: pd.DataFrame, n: pd.Series) -> pd.Series:
    share = tally["count"] / tally["unit"].map(n)
    return (-share * np.log2(share)).groupby(tally["unit"]).sum() + 0.0


def unit_confusability(frame: pd.DataFrame) -> pd.DataFrame:
    """Aggregates and confusability of each unit's numeric judgments.

    Parameters
    ----------
    frame : long DataFrame with columns ``unit``, ``grader``, ``value`` (numeric; map ordered
        categories to their positions first).

    Returns
    -------
    DataFrame indexed by unit (sorted) with ``n``, ``mean``, ``median``, ``majority`` (ties toward
    the value nearest the mean, then the lower), ``dif`` (max - min), ``std`` (ddof=1, NaN when
    n = 1) and ``entropy`` (bits, over the distinct values). {5,5,5,5,1} gives dif 4, std 1.79,
    entropy 0.72; {4,3,3,2,2} gives 2, 0.84, 1.52.
    """
    factorize_long(frame)
    values = pd.to_numeric(frame["value"], errors="coerce")
    if values.isna().any():
        raise ValueError(f"`frame['value']` must be numeric; got {short(frame['value'][values.isna()].iloc[0])}")
    unit, value = frame["unit"].to_numpy(), values.to_numpy(dtype=float)
    if unit.dtype.kind in "iu" and (in_order := _in_unit_order(unit, value)) is not None:
        return in_order
    frame = pd.DataFrame({"unit": unit, "value": value})
    groups = frame.groupby("unit")["value"]
    out = pd.DataFrame({"n": groups.size(), "mean": groups.mean(), "median": groups.median()})
    tally = _tally(frame)  # one count of each unit's values serves the majority and the entropy
    out["majority"] = _majority(tally, out["mean"])
    out["dif"] = groups.max() - groups.min()
    out["std"] = groups.std(ddof=1)
    out["entropy"] = _entropy(tally, out["n"])
    return out[COLUMNS]


def _in_unit_order(unit: np.ndarray, value: np.ndarray) -> pd.DataFrame | None:
    """``unit_confusability`` of rows whose units come in increasing order, each unit's rows
    together (a slice of the judgments), without grouping: the same figures to the last bit (None
    when the units are not so ordered).

    Every unit's k-th row is taken at once, k = 0, 1, …: the mean as pandas' groupby sums it (Kahan's
    compensated sum, in row order: ``sums_in_order``), the std as it accumulates it (Welford's
    update, in row order); the median, range and tally from the rows sorted by value within each
    unit; the tally in the order in which each (unit, value) first appears, as ``_tally`` has it, so
    the entropy is summed in pandas' order too (compensated). 2.8 s of the per-unit table's
    groupbys at 10^7 judgments."""
    starts, n = runs(unit)
    units = unit[starts]
    if not unit.size or (units.size > 1 and (np.diff(units) <= 0).any()):
        return None
    total = sums_in_order(value, starts, n)
    running, squares = np.zeros(units.size), np.zeros(units.size)
    for k in range(int(n.max())):
        live = np.flatnonzero(n > k)
        x = value[starts[live] + k]
        before = running[live]
        running[live] = before + (x - before) / (k + 1)
        squares[live] += (x - running[live]) * (x - before)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(squares / (n - 1))
    std[n < 2] = np.nan
    order = _by_value_within(value, starts, n)  # each unit's rows stay in its block, sorted by value
    ordered = value[order]
    mean = total / n
    new = np.zeros(unit.size, dtype=bool)
    new[starts] = True
    new[1:] |= ordered[1:] != ordered[:-1]
    pairs = np.flatnonzero(new)  # where each (unit, value) starts among the sorted rows
    first = np.argsort(np.minimum.reduceat(order, pairs), kind="stable")  # as each pair first appears
    counts = np.diff(np.r_[pairs, unit.size])[first]
    # The tally's rows, a unit's together and the units in order (its pairs first appear within
    # the unit's own rows): each unit's are a run, in the order of ``units``.
    pair_starts, pair_n = runs(unit[pairs][first])
    share = counts / np.repeat(n, pair_n)  # each pair's unit's n
    columns = {
        "n": n,
        "mean": mean,
        "median": (ordered[starts + (n - 1) // 2] + ordered[starts + n // 2]) / 2,
        "majority": _most_frequent(pair_starts, pair_n, counts, ordered[pairs][first], mean),
        "dif": ordered[starts + n - 1] - ordered[starts],
        "std": std,
        "entropy": sums_in_order(-share * np.log2(share), pair_starts, pair_n) + 0.0,
    }
    return pd.DataFrame(columns, index=pd.Index(units, name="unit"), copy=False)  # in COLUMNS order


def _by_value_within(value: np.ndarray, starts: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The rows in order of their unit (each unit's ``n`` rows from ``starts``, units in order),
    then of value, then as they came: ``np.lexsort((value, unit))``. Units of a few rows each are
    sorted as the rows of a matrix (a unit a row, padded after its values), 13 times faster than
    sorting every row by two keys."""
    width = int(n.max())
    if width * starts.size > 4 * value.size + 1024 or not np.isfinite(value).all():
        return np.lexsort((value, np.repeat(np.arange(starts.size), n)))
    padded = np.full((starts.size, width), np.inf)
    filled = np.arange(width) < n[:, None]
    padded[filled] = value  # row-major: each unit's values in order, then the padding
    within = np.argsort(padded, axis=1, kind="stable")  # the padding (inf) sorts after every value
    return (starts[:, None] + within)[filled]


def sums_in_order(terms: np.ndarray, starts: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per group (its ``n`` rows from ``starts``), the sum of its ``terms`` as pandas' groupby sums
    them: Kahan's compensated sum, in row order; every group's k-th row at once."""
    total, compensation = np.zeros(starts.size), np.zeros(starts.size)
    for k in range(int(n.max()) if n.size else 0):
        live = np.flatnonzero(n > k)
        y = terms[starts[live] + k] - compensation[live]
        t = total[live] + y
        compensation[live] = (t - total[live]) - y
        total[live] = t
    return total


def confusability_summary(units: pd.DataFrame, min_judgments: int = 2) -> dict[str, float | int]:
    """Campaign summary: mean dif, std and entropy over units with at least ``min_judgments``.

    Parameters
    ----------
    units : the frame of :func:`unit_confusability`.

    Returns
    -------
    dict with ``mean_dif``, ``mean_std``, ``mean_entropy``, ``n_units`` (units summarised) and
    ``n_excluded`` (units with fewer judgments).
    """
    missing = [c for c in ("n", "dif", "std", "entropy") if c not in units.columns]
    if missing:
        raise ValueError(f"`units` lacks column(s) {missing}; pass the result of unit_confusability")
    kept = (units["n"] >= min_judgments).to_numpy()  # a column at a time, not a copy of every column's rows
    n_kept = int(kept.sum())
    means = {f"mean_{c}": float(units[c][kept].mean()) if n_kept else float("nan") for c in ("dif", "std", "entropy")}
    return {**means, "n_units": n_kept, "n_excluded": int(len(units) - n_kept)}


def _paired(system: ArrayLike, truth: ArrayLike, weight: ArrayLike) -> tuple[np.ndarray, ...]:
    arrays = [
        np.asarray(as_labels(a, name=n), dtype=float)
        for a, n in ((system, "system"), (truth, "truth"), (weight, "confusability"))
    ]
    if len({a.size for a in arrays}) != 1:
        raise ValueError(f"`system`, `truth` and `confusability` differ in length: {[a.size for a in arrays]}")
    if any(np.isnan(a).any() for a in arrays):
        raise ValueError("`system`, `truth` and `confusability` must not contain NaN")
    return tuple(arrays)


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Pearson correlation with unit weights ``w`` (NaN when a weighted variance is 0)."""
    w = w / w.sum()
    dx, dy = x - w @ x, y - w @ y
    denom = np.sqrt((w @ dx**2) * (w @ dy**2))
    return float(w @ (dx * dy) / denom) if denom > 0 else float("nan")


def ca_corr(system: ArrayLike, truth: ArrayLike, confusability: ArrayLike) -> float:
    """caCorr: Pearson correlation of system scores and ground truth weighted by ``1 - ca_hat``.

    Parameters
    ----------
    system, truth : (n_units,) system scores and ground truth (mean, median or majority).
    confusability : (n_units,) a confusability measure (dif, std or entropy); min-max normalised to
        [0, 1] over these units to give ``ca_hat``.

    Returns
    -------
    float; NaN when every unit is maximally confusable or a weighted variance is 0.
    """
    system, truth, conf = _paired(system, truth, confusability)
    return weighted_pearson(system, truth, normalised_weights(conf))


def normalised_weights(conf: ArrayLike) -> np.ndarray:
    """``1 − (c − min c) / (max c − min c)``, caCorr's weights; all 1 when every ``c`` is the same."""
    conf = np.asarray(conf, dtype=float)
    spread = conf.max() - conf.min() if conf.size else 0.0
    return 1.0 - ((conf - conf.min()) / spread if spread > 0 else np.zeros_like(conf))


def metric_by_band(system: ArrayLike, truth: ArrayLike, confusability: ArrayLike, edges: ArrayLike) -> pd.DataFrame:
    """Pearson correlation of system and truth within confusability bands ``[e_k, e_k+1)``.

    Returns
    -------
    DataFrame with ``band`` (interval), ``n``, ``pearson`` and ``mean_confusability`` per band.
    """
    system, truth, conf = _paired(system, truth, confusability)
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 1 or edges.size < 2 or (np.diff(edges) <= 0).any():
        raise ValueError(f"`edges` must be an increasing 1-D array of >= 2 values, got {short(edges)}")
    band = pd.cut(conf, edges, right=False)
    frame = pd.DataFrame({"band": band, "s": system, "t": truth, "c": conf})
    groups = frame.groupby("band", observed=False)
    return pd.DataFrame(
        {
            "n": groups.size(),
            "pearson": groups.apply(_pearson, include_groups=False),
            "mean_confusability": groups["c"].mean(),
        }
    ).reset_index()


def _pearson(group: pd.DataFrame) -> float:
    return (
        weighted_pearson(group["s"].to_numpy(), group["t"].to_numpy(), np.ones(len(group)))
        if len(group) >= 2
        else float("nan")
    )


def ground_truth(units: pd.DataFrame, aggregate: Aggregate = "mean") -> pd.Series:
    """The chosen aggregate column of :func:`unit_confusability` (mean, median or majority)."""
    return units[choice(aggregate, {"mean": "mean", "median": "median", "majority": "majority"}, name="aggregate")]
