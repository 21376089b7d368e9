"""Scoring an ordering against several gold orderings, and judging the scoring methods.

Orderings are rows of item labels, first = best; all must be permutations of the same k >= 2
items. Methods (docs/design.md §5.4): AC, WCA and RBA with C = Kendall's tau or Spearman's rho, and
FreSPA (:mod:`analysis.metrics.frespa`). ED measures how well a method tells a held-out gold from
its reverse; the noise experiment and the FreSPA grid search build on it.

References
----------
Kim, J. Y., Zhai, C. & Han, J. (2010). Aggregation of multiple judgments for evaluating ordered
lists. ECIR 2010, LNCS 5993, 166–178.
Kendall, M. G. & Babington Smith, B. (1939). The problem of m rankings. Ann. Math. Statist. 10(3).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from analysis.metrics.frespa import FrespaParams, as_orderings, as_target, leave_one_out_terms
from analysis.metrics.frespa import _scores as _frespa_scores

__all__ = [
    "METHODS",
    "NOISE_RATIOS",
    "ac_score",
    "correlation_matrix",
    "evaluation_discriminativeness",
    "frespa_grid_search",
    "kendall_tau",
    "kendall_w",
    "mean_pairwise_tau",
    "noise_robustness",
    "rba_consensus",
    "rba_score",
    "score_orderings",
    "spearman_rho",
    "wca_score",
    "wca_weights",
]

Corr = Literal["tau", "sp"]
METHODS: tuple[str, ...] = ("AC-tau", "AC-sp", "WCA-tau", "WCA-sp", "RBA-tau", "RBA-sp", "FreSPA")
NOISE_RATIOS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_GRID: dict[str, tuple] = {
    "min_sup": (0.5, 0.6, 0.75, 0.9, 1.0),
    "min_len": (2, 3),
    "max_len": (3, 5, None),
    "w_len": (0.0, 1.0, 2.0),
    "w_sup": (0.0, 1.0, 2.0),
}


def _check_corr(corr: str) -> Corr:
    if corr not in ("tau", "sp"):
        raise ValueError(f"`corr` must be one of 'tau', 'sp', got {corr!r}")
    return corr  # type: ignore[return-value]


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {', '.join(METHODS)}, got {method!r}")
    return method


# ----------------------------------------------------------------------------- correlations
def _corr(pa: np.ndarray, pb: np.ndarray, corr: Corr) -> np.ndarray:
    """``(qa, k)`` and ``(qb, k)`` positions -> ``(qa, qb)`` tau or Spearman (no ties)."""
    k = pa.shape[1]
    if corr == "sp":
        d2 = (pa**2).sum(1)[:, None] + (pb**2).sum(1)[None, :] - 2.0 * (pa @ pb.T)
        return 1.0 - 6.0 * d2 / (k * (k * k - 1))
    sa = np.sign(pa[:, :, None] - pa[:, None, :]).reshape(len(pa), -1).astype(np.float64)
    sb = np.sign(pb[:, :, None] - pb[:, None, :]).reshape(len(pb), -1).astype(np.float64)
    return (sa @ sb.T) / (k * (k - 1))  # sum over ordered pairs = 2 (concordant - discordant)


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    items, pa = as_orderings(np.asarray(a)[None, :], name="a")
    return pa, as_target(b, items, name="b")[None, :]


def kendall_tau(a: ArrayLike, b: ArrayLike) -> float:
    """Kendall's ``tau = 1 - 2 D / (k (k - 1) / 2)`` between two orderings of the same k items.

    D is the number of discordant pairs. ``kendall_tau("ABCD", "ACDB")`` (as lists) is 1/3.
    """
    pa, pb = _pair(a, b)
    return float(_corr(pa, pb, "tau")[0, 0])


def spearman_rho(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's ``rho = 1 - 6 sum d^2 / (k (k^2 - 1))``, d = difference of an item's places."""
    pa, pb = _pair(a, b)
    return float(_corr(pa, pb, "sp")[0, 0])


def correlation_matrix(orderings: ArrayLike, *, corr: Corr = "tau") -> np.ndarray:
    """``(n, n)`` matrix of tau (``corr="tau"``) or Spearman (``"sp"``) between ``(n, k)`` orderings."""
    _, pos = as_orderings(orderings, name="orderings")
    return _corr(pos, pos, _check_corr(corr))


def mean_pairwise_tau(orderings: ArrayLike) -> float:
    """Mean Kendall's tau over the ``n (n - 1) / 2`` pairs of ``(n, k)`` orderings; NaN when n < 2."""
    _, pos = as_orderings(orderings, name="orderings")
    n = len(pos)
    if n < 2:
        return math.nan
    c = _corr(pos, pos, "tau")
    return float((c.sum() - np.trace(c)) / (n * (n - 1)))


def kendall_w(orderings: ArrayLike) -> float:
    """Kendall's coefficient of concordance W of ``(m, k)`` orderings (m graders, no ties).

    ``W = 12 S / (m^2 (k^3 - k))`` with ``S = sum_i (R_i - m (k + 1) / 2)^2`` and ``R_i`` the sum of
    item i's ranks (1 = first). 1 when all agree, 0 for no agreement; NaN for a single grader.
    """
    _, pos = as_orderings(orderings, name="orderings")
    m, k = pos.shape
    if m < 2:
        return math.nan
    s = (((pos + 1).sum(axis=0) - m * (k + 1) / 2.0) ** 2).sum()
    return float(12.0 * s / (m * m * (k**3 - k)))


# ----------------------------------------------------------------------------- AC, WCA, RBA
def _wca_w(gpos: np.ndarray, corr: Corr) -> np.ndarray:
    n = len(gpos)
    if n == 1:
        return np.ones(1)
    c = _corr(gpos, gpos, corr)
    w = np.clip((c.sum(axis=1) - np.diag(c)) / (n - 1), 0.0, None)
    return w if w.sum() > 0 else np.ones(n)  # all weights 0: fall back to AC


def _consensus_pos(gpos: np.ndarray) -> np.ndarray:
    k = gpos.shape[1]
    order = np.lexsort((np.arange(k), np.median(gpos, axis=0), gpos.sum(axis=0)))
    return np.argsort(order)


def _method_scores(gpos: np.ndarray, tpos: np.ndarray, method: str, params: FrespaParams) -> np.ndarray:
    """``(q,)`` scores of target positions ``tpos`` against gold positions ``gpos``."""
    if method == "FreSPA":
        return _frespa_scores(gpos, tpos, params)
    kind, corr = method.split("-")
    if kind == "RBA":
        return _corr(tpos, _consensus_pos(gpos)[None, :], corr)[:, 0]  # type: ignore[arg-type]
    c = _corr(tpos, gpos, corr)  # type: ignore[arg-type]
    w = _wca_w(gpos, corr) if kind == "WCA" else np.ones(len(gpos))  # type: ignore[arg-type]
    return c @ w / w.sum()


def _score_one(target: ArrayLike, golds: ArrayLike, method: str) -> float:
    items, gpos = as_orderings(golds, name="golds")
    tpos = as_target(target, items)[None, :]
    return float(_method_scores(gpos, tpos, method, FrespaParams())[0])


def ac_score(target: ArrayLike, golds: ArrayLike, *, corr: Corr = "tau") -> float:
    """AC: mean of ``C(target, O_i)`` over the ``(n, k)`` golds, C = tau or Spearman."""
    return _score_one(target, golds, f"AC-{_check_corr(corr)}")


def wca_weights(golds: ArrayLike, *, corr: Corr = "tau") -> np.ndarray:
    """``(n,)`` WCA weights: mean ``C(O_i, O_j)`` over j != i, negatives clipped to 0.

    All zero falls back to equal weights (AC); a single gold gets weight 1.
    """
    _, gpos = as_orderings(golds, name="golds")
    return _wca_w(gpos, _check_corr(corr))


def wca_score(target: ArrayLike, golds: ArrayLike, *, corr: Corr = "tau") -> float:
    """WCA: ``sum_i w_i C(target, O_i) / sum_i w_i`` with :func:`wca_weights`."""
    return _score_one(target, golds, f"WCA-{_check_corr(corr)}")


def rba_consensus(golds: ArrayLike) -> np.ndarray:
    """RBA consensus ``(k,)`` ordering of ``(n, k)`` golds: items by sum of ranks (lowest first).

    Ties go to the lower median rank, then to the smaller item label.
    """
    items, gpos = as_orderings(golds, name="golds")
    return items[np.argsort(_consensus_pos(gpos))]


def rba_score(target: ArrayLike, golds: ArrayLike, *, corr: Corr = "tau") -> float:
    """RBA: ``C(target, rba_consensus(golds))``."""
    return _score_one(target, golds, f"RBA-{_check_corr(corr)}")


def score_orderings(golds: ArrayLike, targets: ArrayLike, *, frespa: FrespaParams | None = None) -> pd.DataFrame:
    """Every method's score of each target ordering.

    Parameters
    ----------
    golds : array_like, shape (n, k)
    targets : array_like, shape (q, k)
    frespa : FrespaParams, optional

    Returns
    -------
    DataFrame, shape (q, 7)
        Columns :data:`METHODS`, one row per target.
    """
    items, gpos = as_orderings(golds, name="golds")
    tarr = np.asarray(targets)
    if tarr.ndim != 2:
        raise ValueError(f"`targets` must be a 2-D (q, k) array, got shape {tarr.shape}")
    tpos = np.stack([as_target(t, items, name=f"targets[{i}]") for i, t in enumerate(tarr)])
    params = frespa or FrespaParams()
    return pd.DataFrame({m: _method_scores(gpos, tpos, m, params) for m in METHODS})


# ----------------------------------------------------------------------------- evaluation discriminativeness
def _finite_mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else math.nan


def _ed_terms(gpos: np.ndarray, extra: np.ndarray, method: str, params: FrespaParams) -> np.ndarray:
    """``(n,)`` values ``S(O_i; refs) - S(reverse(O_i); refs)``, refs = other golds + ``extra``."""
    if method == "FreSPA":
        return leave_one_out_terms(gpos, extra, [params])[0]
    n, k = gpos.shape
    out = np.empty(n)
    for i in range(n):
        refs = np.concatenate([np.delete(gpos, i, axis=0), extra])
        s = _method_scores(refs, np.stack([gpos[i], k - 1 - gpos[i]]), method, params)
        out[i] = s[0] - s[1]
    return out


def _golds_for_loo(golds: ArrayLike) -> np.ndarray:
    _, gpos = as_orderings(golds, name="golds")
    if len(gpos) < 2:
        raise ValueError(f"`golds` needs at least 2 orderings for leave-one-out, got {len(gpos)}")
    return gpos


def evaluation_discriminativeness(
    golds: ArrayLike, *, methods: Sequence[str] = METHODS, frespa: FrespaParams | None = None
) -> dict[str, float]:
    """ED of each method (leave-one-out): ``mean_i [S(O_i; others) - S(reverse(O_i); others)]``.

    Parameters
    ----------
    golds : array_like, shape (n, k), n >= 2
    methods : names from :data:`METHODS`
    frespa : FrespaParams, optional

    Returns
    -------
    dict
        ``{method: ED}``; held-out golds whose score is NaN (FreSPA with no frequent pattern) are
        left out of the mean, NaN when all are.
    """
    gpos = _golds_for_loo(golds)
    params = frespa or FrespaParams()
    extra = np.empty((0, gpos.shape[1]), dtype=gpos.dtype)
    return {m: _finite_mean(_ed_terms(gpos, extra, _check_method(m), params)) for m in methods}


def _query_positions(gold_sets: Sequence[ArrayLike]) -> list[np.ndarray]:
    if len(gold_sets) == 0:
        raise ValueError("`gold_sets` must hold at least one query's golds, got none")
    return [_golds_for_loo(g) for g in gold_sets]


def noise_robustness(
    gold_sets: Sequence[ArrayLike],
    *,
    rng: np.random.Generator,
    ratios: Sequence[float] = NOISE_RATIOS,
    methods: Sequence[str] = METHODS,
    frespa: FrespaParams | None = None,
) -> pd.DataFrame:
    """ED of each method when ``round(r n)`` uniformly random orderings join each query's golds.

    Only the real golds are held out; the references are the other golds plus the noise. The
    noise for a larger r extends that for a smaller one (same draws, nested), and ``round`` rounds
    halves up. ED is averaged over queries.

    Parameters
    ----------
    gold_sets : sequence of array_like, each shape (n_q, k_q), n_q >= 2
    rng : numpy.random.Generator
    ratios : noise ratios r >= 0
    methods, frespa : as in :func:`evaluation_discriminativeness`

    Returns
    -------
    DataFrame
        Index ``ratio``; columns ``("ed", method)`` and ``("degradation_pct", method)`` with
        ``100 (ED(0) - ED(r)) / |ED(0)|`` relative to the first ratio (NaN when that ED is 0).
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"`rng` must be a numpy.random.Generator, got {type(rng).__name__}")
    if len(ratios) == 0 or any(not math.isfinite(r) or r < 0 for r in ratios):
        raise ValueError(f"`ratios` must be non-empty and finite >= 0, got {list(ratios)!r}")
    params = frespa or FrespaParams()
    methods = [_check_method(m) for m in methods]
    queries = _query_positions(gold_sets)
    top = max(ratios)
    noise = [rng.permuted(np.tile(np.arange(p.shape[1]), (math.floor(top * len(p) + 0.5), 1)), axis=1) for p in queries]
    ed = np.array(
        [
            [
                np.mean(
                    [
                        _finite_mean(_ed_terms(p, z[: math.floor(r * len(p) + 0.5)], m, params))
                        for p, z in zip(queries, noise, strict=True)
                    ]
                )
                for m in methods
            ]
            for r in ratios
        ]
    )
    base = ed[0]
    deg = np.full_like(ed, math.nan)
    ok = np.isfinite(base) & (base != 0)
    deg[:, ok] = 100.0 * (base[ok] - ed[:, ok]) / np.abs(base[ok])
    columns = pd.MultiIndex.from_product([["ed", "degradation_pct"], methods])
    return pd.DataFrame(np.hstack([ed, deg]), index=pd.Index(list(ratios), name="ratio"), columns=columns)


def frespa_grid_search(gold_sets: Sequence[ArrayLike], *, grid: Mapping[str, Sequence] | None = None) -> pd.DataFrame:
    """Grid search of FreSPA's parameters by ED, averaged over queries.

    Parameters
    ----------
    gold_sets : sequence of array_like, each shape (n_q, k_q), n_q >= 2
    grid : mapping from parameter name (``min_sup, min_len, max_len, w_len, w_sup``) to values
        Missing names take :data:`DEFAULT_GRID`'s values; combinations with min_len > max_len are
        skipped. The exact counts are computed once per query for the whole grid.

    Returns
    -------
    DataFrame
        Columns ``min_sup, min_len, max_len, w_len, w_sup, ed``, best ED first (NaN last).
    """
    grid = {**DEFAULT_GRID, **(grid or {})}
    unknown = set(grid) - set(DEFAULT_GRID)
    if unknown:
        raise ValueError(f"`grid` has unknown parameters {sorted(unknown)}; valid: {list(DEFAULT_GRID)}")
    names = list(DEFAULT_GRID)
    combos = [c for c in itertools.product(*(grid[n] for n in names)) if c[2] is None or c[1] <= c[2]]
    if not combos:
        raise ValueError(f"`grid` has no valid combination: {grid!r}")
    params = [FrespaParams(**dict(zip(names, c, strict=True))) for c in combos]
    queries = _query_positions(gold_sets)
    per_query = [leave_one_out_terms(p, np.empty((0, p.shape[1]), dtype=p.dtype), params) for p in queries]
    ed = [np.mean([_finite_mean(t[g]) for t in per_query]) for g in range(len(params))]
    table = pd.DataFrame(combos, columns=names).astype({"max_len": "Int64"}).assign(ed=ed)
    return table.sort_values("ed", ascending=False, na_position="last", kind="stable").reset_index(drop=True)
