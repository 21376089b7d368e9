"""The campaign as a measuring instrument: precision, reproducibility, resolution, and whether it can
tell systems apart (docs/design.md §5.5).

References
----------
Welty, C., Paritosh, P. & Aroyo, L. (2019). Metrology for AI: from benchmarks to instruments.
arXiv:1911.01875.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from ._checks import as_long, choice, short
from .krippendorff import krippendorff_alpha
from .shapes import long_to_wide

Correlation = Literal["pearson", "spearman"]
VERDICTS = ("A", "B", "equal")


def _unit_stats(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """n, mean and sample std (ddof=1; NaN with one judgment) of each unit of a long frame."""
    as_long(frame, name=name)
    values = pd.to_numeric(frame["value"], errors="coerce")
    if values.isna().any():
        raise ValueError(f"`{name}['value']` must be numeric; got {short(frame['value'][values.isna()].iloc[0])}")
    grouped = values.groupby(frame["unit"].to_numpy(), sort=True)
    return pd.DataFrame({"n": grouped.size(), "mean": grouped.mean(), "std": grouped.std(ddof=1)})


def precision(frame: pd.DataFrame, *, middle: float = 0.67) -> dict:
    """Per-unit spread of a numeric campaign: the instrument's precision.

    Parameters
    ----------
    frame : long DataFrame (unit, grader, value), value numeric.
    middle : the share of units the reported std band holds (default the middle 67%).

    Returns
    -------
    dict with ``units`` (DataFrame: n, mean, std per unit — the "crescent" is std against mean),
    ``mean_std``, ``std_std`` (over units with ≥ 2 judgments), ``band`` (low, high): the std values
    between which the middle ``middle`` share of units lie, and ``n_excluded`` (units with one judgment).
    """
    if not 0 < middle < 1:
        raise ValueError(f"`middle` must lie in (0, 1), got {short(middle)}")
    units = _unit_stats(frame, "frame")
    stds = units["std"].dropna().to_numpy()
    if stds.size == 0:
        nan = float("nan")
        return {"units": units, "mean_std": nan, "std_std": nan, "band": (nan, nan), "n_excluded": len(units)}
    tail = (1 - middle) / 2
    low, high = np.quantile(stds, [tail, 1 - tail])
    return {
        "units": units,
        "mean_std": float(stds.mean()),
        "std_std": float(stds.std(ddof=1)) if stds.size > 1 else float("nan"),
        "band": (float(low), float(high)),
        "n_excluded": int(units["std"].isna().sum()),
    }


def repeatability(frame: pd.DataFrame, level: str = "interval") -> float:
    """Krippendorff's alpha of one campaign (long frame of numeric values)."""
    wide, _, _ = long_to_wide(frame)
    return krippendorff_alpha(wide, level=level)


def reproducibility(first: pd.DataFrame, second: pd.DataFrame, *, level: str = "interval", top: int = 10) -> dict:
    """Two campaigns over the same units: do they measure the same thing?

    Parameters
    ----------
    first, second : long DataFrames (unit, grader, value) of the two campaigns; graders may differ.
    level : Krippendorff level for each campaign's alpha.
    top : how many of the units whose mean or std moved most to list.

    Returns
    -------
    dict: ``n_units`` (shared units), ``spearman_means``, ``pearson_stds`` (units with a std in both),
    ``alpha_first``, ``alpha_second``, ``moved_mean`` / ``moved_std`` (DataFrames of the ``top``
    units by absolute change, with both values and the change).
    """
    a, b = _unit_stats(first, "first"), _unit_stats(second, "second")
    shared = a.index.intersection(b.index)
    if len(shared) < 3:
        raise ValueError(f"`first` and `second` share {len(shared)} units; reproducibility needs at least 3")
    a, b = a.loc[shared], b.loc[shared]
    both_std = a["std"].notna() & b["std"].notna()
    out = {
        "n_units": int(len(shared)),
        "spearman_means": float(stats.spearmanr(a["mean"], b["mean"]).statistic),
        "pearson_stds": float(stats.pearsonr(a["std"][both_std], b["std"][both_std]).statistic)
        if both_std.sum() >= 3 and a["std"][both_std].std() > 0 and b["std"][both_std].std() > 0
        else float("nan"),
        "alpha_first": repeatability(first, level),
        "alpha_second": repeatability(second, level),
    }
    for key in ("mean", "std"):
        moved = pd.DataFrame({"first": a[key], "second": b[key], "change": b[key] - a[key]})
        out[f"moved_{key}"] = moved.reindex(
            moved["change"].abs().sort_values(ascending=False, na_position="last").index
        ).head(top)
    return out


def _majority_verdicts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per (unit_a, unit_b): the most frequent verdict; a tie between verdicts counts as 'equal'."""
    as_long(pairs, name="pairs", columns=("unit_a", "unit_b", "verdict"))
    bad = ~pairs["verdict"].isin(VERDICTS)
    if bad.any():
        raise ValueError(f"`pairs['verdict']` must be one of {VERDICTS}; got {short(pairs['verdict'][bad].iloc[0])}")
    counts = pd.crosstab([pairs["unit_a"], pairs["unit_b"]], pairs["verdict"]).reindex(
        columns=list(VERDICTS), fill_value=0
    )
    top = counts.to_numpy().max(axis=1, keepdims=True)
    winners = counts.to_numpy() == top
    verdict = np.where(winners.sum(axis=1) > 1, "equal", np.array(VERDICTS)[winners.argmax(axis=1)])
    return pd.DataFrame({"verdict": verdict}, index=counts.index).reset_index()


def resolution(
    ratings: pd.DataFrame, pairs: pd.DataFrame, *, thresholds: np.ndarray | None = None, target: float = 0.95
) -> dict:
    """The smallest difference in unit means that a pairwise campaign confirms (docs/design.md §5.5).

    For a threshold d, agreement is the share of unit pairs whose mean difference in the rating
    campaign is at least d and whose majority pairwise verdict agrees in direction ("A" when unit_a's
    mean is higher, "B" when lower; "equal" never agrees). The resolution is the smallest d whose
    agreement reaches ``target``.

    Parameters
    ----------
    ratings : long DataFrame (unit, grader, value) of the rating campaign.
    pairs : DataFrame (unit_a, unit_b, grader, verdict) of the pairwise campaign, verdict A / B / equal.
    thresholds : (m,) increasing differences to test; default 0, 0.1, … up to the largest difference.

    Returns
    -------
    dict: ``curve`` (DataFrame: threshold, n_pairs, agreement), ``resolution`` (float, NaN when no
    threshold reaches the target), ``n_pairs`` (pairs with both units rated).
    """
    means = _unit_stats(ratings, "ratings")["mean"]
    verdicts = _majority_verdicts(pairs)
    known = verdicts["unit_a"].isin(means.index) & verdicts["unit_b"].isin(means.index)
    verdicts = verdicts[known]
    if verdicts.empty:
        raise ValueError("`pairs` has no pair whose two units are both in `ratings`")
    diff = means.loc[verdicts["unit_a"]].to_numpy() - means.loc[verdicts["unit_b"]].to_numpy()
    agrees = ((diff > 0) & (verdicts["verdict"].to_numpy() == "A")) | (
        (diff < 0) & (verdicts["verdict"].to_numpy() == "B")
    )
    if thresholds is None:
        thresholds = np.round(np.arange(0, np.abs(diff).max() + 0.1, 0.1), 10)
    thresholds = np.asarray(thresholds, dtype=float)
    if thresholds.ndim != 1 or thresholds.size == 0 or (np.diff(thresholds) <= 0).any():
        raise ValueError(f"`thresholds` must be a non-empty increasing 1-D array, got {short(thresholds)}")
    above = np.abs(diff)[None, :] >= thresholds[:, None]  # (m, n_pairs)
    n_above = above.sum(axis=1)
    agreement = np.divide(
        (above & agrees[None, :]).sum(axis=1), n_above, out=np.full(thresholds.shape, np.nan), where=n_above > 0
    )
    reached = np.flatnonzero(agreement >= target)
    return {
        "curve": pd.DataFrame({"threshold": thresholds, "n_pairs": n_above, "agreement": agreement}),
        "resolution": float(thresholds[reached[0]]) if reached.size else float("nan"),
        "n_pairs": int(len(verdicts)),
    }


@dataclass(frozen=True)
class SystemComparison:
    """Per-system correlations and the paired tests between systems."""

    per_system: pd.DataFrame  # index system: rho_min, rho_max, rho_mean, rho_std, rho_unit_means, n_graders
    per_grader: pd.DataFrame  # (graders × systems) correlation of each grader's scores with each system
    tests: pd.DataFrame  # system_a, system_b, t, p, distinguishable, verdict


def _correlate(x: np.ndarray, y: np.ndarray, method: str) -> float:
    both = ~(np.isnan(x) | np.isnan(y))
    if both.sum() < 3 or np.ptp(x[both]) == 0 or np.ptp(y[both]) == 0:
        return float("nan")
    fn = stats.pearsonr if method == "pearson" else stats.spearmanr
    return float(fn(x[both], y[both]).statistic)


def system_comparison(
    ratings: pd.DataFrame, outputs: pd.DataFrame, *, method: Correlation = "pearson", alpha: float = 0.05
) -> SystemComparison:
    """Can the campaign tell the systems apart at its precision? (docs/design.md §5.5)

    For each system, the correlation of its scores with each grader's scores (per-grader ρ: min, max,
    mean, std) and with the unit means; then paired two-tailed t-tests between every two systems over
    the graders' ρ. A pair with p ≥ ``alpha`` is "not distinguishable at this precision".

    Parameters
    ----------
    ratings : long DataFrame (unit, grader, value), numeric.
    outputs : DataFrame (system, unit, score).
    method : "pearson" or "spearman".
    """
    choice(method, {"pearson": 0, "spearman": 1}, name="method")
    as_long(outputs, name="outputs", columns=("system", "unit", "score"))
    wide, units, graders = long_to_wide(ratings)
    scores = outputs.pivot_table(index="unit", columns="system", values="score", aggfunc="mean").reindex(units)
    if scores.notna().sum().sum() == 0:
        raise ValueError("`outputs` scores none of the units in `ratings`")
    means = np.nanmean(wide, axis=1)
    per_grader = pd.DataFrame(
        [
            [_correlate(wide[:, g], scores[s].to_numpy(float), method) for s in scores.columns]
            for g in range(len(graders))
        ],
        index=graders,
        columns=scores.columns,
    )
    per_system = pd.DataFrame(
        {
            "rho_min": per_grader.min(),
            "rho_max": per_grader.max(),
            "rho_mean": per_grader.mean(),
            "rho_std": per_grader.std(ddof=1),
            "n_graders": per_grader.notna().sum(),
            "rho_unit_means": [_correlate(means, scores[s].to_numpy(float), method) for s in scores.columns],
        }
    )
    rows = []
    systems = list(scores.columns)
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            both = per_grader[[a, b]].dropna()
            t, p = (
                stats.ttest_rel(both[a], both[b])
                if len(both) >= 2 and (both[a] - both[b]).std() > 0
                else (np.nan, np.nan)
            )
            distinguishable = bool(p < alpha) if np.isfinite(p) else False
            rows.append(
                {
                    "system_a": a,
                    "system_b": b,
                    "n_graders": len(both),
                    "t": float(t),
                    "p": float(p),
                    "distinguishable": distinguishable,
                    "verdict": "distinguishable" if distinguishable else "not distinguishable at this precision",
                }
            )
    return SystemComparison(
        per_system,
        per_grader,
        pd.DataFrame(rows, columns=["system_a", "system_b", "n_graders", "t", "p", "distinguishable", "verdict"]),
    )
