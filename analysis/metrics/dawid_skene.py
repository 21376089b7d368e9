"""Model-based truth: Dawid–Skene for categorical judgments, bias + noise for numeric scales
(docs/design.md §5.6, "Model-based truth").

Both take the long shape ``(unit, grader, value)`` and return a per-unit estimate with its
uncertainty and a per-grader description of reliability.

References
----------
A. P. Dawid and A. M. Skene (1979), "Maximum likelihood estimation of observer error-rates using
the EM algorithm", Applied Statistics 28(1), 20–28.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _ds_em, _panels
from ._checks import short

SMOOTHING = 0.01
TOL = 1e-6
MAX_ITER = 100


@dataclass(frozen=True)
class DawidSkeneResult:
    """Fitted Dawid–Skene model.

    units : (n_units,) unit ids; graders : (n_graders,) grader ids; categories : (k,) in code order.
    posterior : (n_units, k) P(true category | judgments).
    labels : (n_units,) the posterior argmax (ties: lower category index), as category values.
    probability : (n_units,) the posterior probability of that label.
    priors : (k,) class priors π.  confusion : (n_graders, k, k), ``confusion[g, t, l]`` =
    P(grader g says l | truth t).  accuracy : (n_graders,) Σ_t π_t θ_g[t, t].
    log_likelihood : natural-log marginal likelihood of the judgments at the final parameters.
    iterations : EM iterations used.  converged : the largest posterior change fell below the tolerance.
    n_judgments : (n_graders,) each grader's judgments with a value.
    """

    units: np.ndarray
    graders: np.ndarray
    categories: np.ndarray
    posterior: np.ndarray
    labels: np.ndarray
    probability: np.ndarray
    priors: np.ndarray
    confusion: np.ndarray
    accuracy: np.ndarray
    log_likelihood: float
    iterations: int
    converged: bool
    n_judgments: np.ndarray


@dataclass(frozen=True)
class Coded:
    """Judgments with a value as codes: what the fits read, made from a long frame by ``_coded`` or
    given as they are by a caller that built them without one (``sections.model``).

    unit, grader : (n,) each judgment's unit and grader as positions in ``units`` and ``graders``,
    the sorted ids of the units and graders with a judgment (integer codes, any width).
    value : (n,) the number (float), or the category's position in the categories (``dawid_skene``).
    At most one judgment per unit and grader: the fits check it.
    """

    unit: np.ndarray
    grader: np.ndarray
    value: np.ndarray
    units: np.ndarray
    graders: np.ndarray


_Coded = Coded  # the name tests/metrics/ds_reference.py imports


def _check_frame(judgments: pd.DataFrame) -> None:
    if not isinstance(judgments, pd.DataFrame) or not {"unit", "grader", "value"} <= set(judgments.columns):
        raise ValueError(f"`judgments` must be a DataFrame with columns unit, grader, value; got {short(judgments)}")


def _code_dtype(n: int) -> type:
    """Codes of ``n`` distinct things: int32 halves the per-judgment arrays whenever it can hold them."""
    return np.int32 if n < 2**31 else np.int64


def _kept(values: np.ndarray, keep: np.ndarray | None, block: slice) -> np.ndarray:
    return values[block] if keep is None else values[block][keep[block]]


def _ids_coded(ids: pd.Series, keep: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(ids[keep], sort=True)`` as (codes, distinct ids), without its copies.

    Integer ids spanning at most about twice the ``n`` kept rows are coded through a table indexed by
    id, block by block: factorizing 10^7 ids (hash table, codes, then sorting and re-coding them)
    allocates several times their size. Other ids are factorized as before."""
    values = ids.to_numpy() if isinstance(ids.dtype, np.dtype) else None
    if values is not None and values.dtype.kind == "i" and n:

        def kept_blocks() -> Iterator[np.ndarray]:
            return (b for b in (_kept(values, keep, s) for s in _ds_em.blocks(values.size)) if b.size)

        lo, hi = min(int(b.min()) for b in kept_blocks()), max(int(b.max()) for b in kept_blocks())
        if hi - lo < 2 * n + 1024:
            present = np.zeros(hi - lo + 1, dtype=bool)
            for b in kept_blocks():
                present[b.astype(np.int64) - lo] = True
            distinct = (np.flatnonzero(present) + lo).astype(values.dtype)
            dtype = _code_dtype(distinct.size)
            table = np.cumsum(present, dtype=dtype) - 1
            codes = np.empty(n, dtype=dtype)
            at = 0
            for b in kept_blocks():
                codes[at : at + b.size] = table[b.astype(np.int64) - lo]
                at += b.size
            return codes, distinct
    codes, distinct = pd.factorize(ids if keep is None else ids[keep], sort=True)
    return codes.astype(_code_dtype(len(distinct))), np.asarray(distinct)


def _coded(judgments: pd.DataFrame, *, value_codes: Sequence | None = None) -> Coded:
    """The judgments with a value as codes: units and graders numbered in sorted order of their ids,
    values as floats or, given ``value_codes``, as positions in it.

    The frame's columns are read where they lie: at 10^7 judgments each copy of one is 80 MB."""
    _check_frame(judgments)
    column = judgments["value"]
    keep = column.notna().to_numpy()
    n = int(np.count_nonzero(keep))
    if n == 0:
        raise ValueError("`judgments` holds no values")
    keep = None if n == keep.size else keep
    unit, units = _ids_coded(judgments["unit"], keep, n)
    grader, graders = _ids_coded(judgments["grader"], keep, n)
    _check_pairs(judgments, keep, unit, grader, graders.size)
    if value_codes is None:
        value = column.to_numpy(dtype=float) if keep is None else column[keep].to_numpy(dtype=float)
        return Coded(unit, grader, value, units, graders)
    return Coded(unit, grader, _value_coded(column.to_numpy(), keep, n, value_codes), units, graders)


def _check_pairs(
    judgments: pd.DataFrame, keep: np.ndarray | None, unit: np.ndarray, grader: np.ndarray, n_graders: int
) -> None:
    """Raises if a grader has two values for a unit: found by sorting codes, named (slowly) only when there is one."""
    if _pair_twice(unit, grader, n_graders) is not None:
        frame = judgments if keep is None else judgments[keep]
        row = frame[frame.duplicated(["unit", "grader"])].iloc[0]
        raise ValueError(f"`judgments` has two values of grader {row['grader']!r} for unit {row['unit']!r}")


def _pair_twice(unit: np.ndarray, grader: np.ndarray, n_graders: int) -> tuple[int, int] | None:
    """The codes (unit, grader) of a pair held twice, if one is: found by sorting the pairs' codes,
    unless they are in order already (an analysis run's judgments come by unit, then grader), which
    one comparison of neighbours tells: 0.42 s of sorting 10^7 codes saved. Rows in strict (unit,
    grader) order hold no pair twice, which comparing them a block at a time tells without the
    pairs' codes (80 MB at 10^7 judgments): 0.09 s less again."""
    if _panels.strictly_ordered(unit, grader):
        return None
    pairs = unit.astype(_code_dtype((int(unit.max()) + 1) * max(n_graders, 1)))
    pairs *= max(n_graders, 1)
    pairs += grader
    if not (pairs[1:] >= pairs[:-1]).all():
        pairs.sort()
    twice = np.flatnonzero(pairs[1:] == pairs[:-1])
    if not twice.size:
        return None
    pair = int(pairs[twice[0]])
    return pair // max(n_graders, 1), pair % max(n_graders, 1)


def _checked(c: Coded, k: int | None = None) -> Coded:
    """``c`` once checked as ``_coded`` checks a frame: some judgments, one per unit and grader, and
    (given the ``k`` categories) values that are positions in them."""
    if not c.unit.size == c.grader.size == c.value.size:
        raise ValueError(
            f"coded `judgments` need arrays of one length; got {c.unit.size}, {c.grader.size}, {c.value.size}"
        )
    if c.unit.size == 0:
        raise ValueError("`judgments` holds no values")
    twice = _pair_twice(c.unit, c.grader, c.graders.size)
    if twice is not None:
        unit, grader = c.units[twice[0]], c.graders[twice[1]]
        raise ValueError(f"`judgments` has two values of grader {grader!r} for unit {unit!r}")
    if k is not None and (int(c.value.min()) < 0 or int(c.value.max()) >= k):
        raise ValueError(f"`judgments` values must be positions in the {k} categories")
    return c


def _value_coded(values: np.ndarray, keep: np.ndarray | None, n: int, value_codes: Sequence) -> np.ndarray:
    """Each kept value's position in ``value_codes``, block by block (each block's distinct values looked up once)."""
    index = {v: i for i, v in enumerate(value_codes)}
    codes = np.empty(n, dtype=np.int8 if len(index) < 128 else _code_dtype(len(index)))  # 10 MB at 10^7
    at = 0
    for block in _ds_em.blocks(values.size):
        kept = _kept(values, keep, block)
        seen, distinct = pd.factorize(kept)
        found = np.array([index.get(v, -1) for v in distinct], dtype=codes.dtype)[seen]
        if (found < 0).any():
            first = kept[int(np.flatnonzero(found < 0)[0])]
            raise ValueError(
                f"`judgments` value {short(first)} is not one of the categories {short(list(value_codes))}"
            )
        codes[at : at + kept.size] = found
        at += kept.size
    return codes


def _em(
    c: Coded,
    k: int,
    *,
    smoothing: float = SMOOTHING,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, bool]:
    """The EM on answer patterns (``_ds_em``): posterior, priors, confusion, log-likelihood,
    iterations, converged."""
    return _ds_em.em(
        c.unit,
        c.grader,
        c.value,
        n_units=c.units.size,
        n_graders=c.graders.size,
        k=k,
        smoothing=smoothing,
        tol=tol,
        max_iter=max_iter,
        start=start,
    )


def dawid_skene_codes(
    unit: np.ndarray,
    grader: np.ndarray,
    value: np.ndarray,
    *,
    n_units: int,
    n_graders: int,
    k: int,
    start: np.ndarray | None = None,
    max_iter: int = MAX_ITER,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dawid–Skene on integer codes (units 0..n_units-1 each with at least one judgment, graders
    0..n_graders-1, values 0..k-1), for simulations: posterior (n_units, k), priors (k,) and
    confusion (n_graders, k, k). Same smoothing and stopping rule as `dawid_skene`; the start is the
    soft majority vote, or ``start`` (a previous posterior, to refit after a few more judgments)."""
    c = Coded(unit, grader, value, np.arange(n_units), np.arange(n_graders))
    posterior, priors, confusion, *_ = _em(c, k, start=start, max_iter=max_iter)
    return posterior, priors, confusion


def dawid_skene(
    judgments: pd.DataFrame | Coded,
    *,
    categories: Sequence | None = None,
    smoothing: float = SMOOTHING,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
) -> DawidSkeneResult:
    """Dawid–Skene EM for categorical judgments.

    Parameters
    ----------
    judgments : long DataFrame with columns ``unit``, ``grader``, ``value`` (one value per grader and
        unit; missing values are dropped), or the same as ``Coded`` (values: positions in ``categories``).
    categories : the categories in code order (default: the sorted distinct values). Categories
        nobody used still get a prior and a column.
    smoothing : added to every count in the M-step (priors and confusion matrices), so that no
        probability is ever 0.
    tol, max_iter : EM stops when the largest change of any posterior probability is < tol, or
        after max_iter iterations.

    Initialisation: the soft majority vote (each unit's share of judgments per category), followed
    by an M-step. Each iteration is an E-step then an M-step; the result's posterior is the last
    E-step's, the parameters the last M-step's.
    """
    if not 0 < smoothing < np.inf or not 0 < tol < 1 or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(
            f"need smoothing > 0, 0 < tol < 1 and an integer max_iter ≥ 1; got {smoothing}, {tol}, {max_iter}"
        )
    if isinstance(judgments, Coded) and categories is None:
        raise ValueError("coded `judgments` need their `categories`: the values are positions in them")
    if not isinstance(judgments, Coded):
        _check_frame(judgments)
    if categories is None:
        categories = sorted(pd.unique(judgments["value"].dropna()))
    categories = np.asarray(list(categories), dtype=object)
    if categories.size < 2 or len(set(categories.tolist())) != categories.size:
        raise ValueError(f"`categories` must hold at least two distinct values, got {short(categories.tolist())}")
    if isinstance(judgments, Coded):
        c = _checked(judgments, categories.size)
    else:
        c = _coded(judgments, value_codes=categories.tolist())
    posterior, priors, confusion, log_likelihood, iterations, converged = _em(
        c, categories.size, smoothing=smoothing, tol=tol, max_iter=max_iter
    )
    labels, probability = row_maxima(posterior)
    accuracy = np.einsum("t,gtt->g", priors, confusion)
    return DawidSkeneResult(
        c.units,
        c.graders,
        categories,
        posterior,
        categories[labels],
        probability,
        priors,
        confusion,
        accuracy,
        log_likelihood,
        iterations,
        converged,
        _counts(c.grader, c.graders.size),
    )


def row_maxima(posterior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first column holding its largest value, and that value: ``argmax`` and ``max``
    along the rows, a column at a time (over 2,000,000 units of three categories numpy's
    reductions along rows of a few columns took 99 ms, this 42)."""
    if posterior.ndim != 2 or not posterior.shape[1] or np.isnan(posterior).any():
        return posterior.argmax(axis=1), posterior.max(axis=1)  # NaN wins both, as numpy has it
    best = posterior[:, 0].copy()
    at = np.zeros(posterior.shape[0], dtype=np.intp)
    for j in range(1, posterior.shape[1]):
        column = posterior[:, j]
        higher = column > best  # strictly: a tie keeps the lower column
        at[higher] = j
        np.maximum(best, column, out=best)
    return at, best


@dataclass(frozen=True)
class BiasNoiseResult:
    """Fitted numeric model ``y_gu = t_u + b_g + ε_gu``, ``ε_gu ~ N(0, σ_g²)``, with Σ_g b_g = 0.

    units : (n_units,); score : (n_units,) t_u; score_se : (n_units,) its standard error
    (1 / sqrt(Σ_g 1/σ_g²) over the unit's graders).
    graders : (n_graders,); bias : (n_graders,) b_g; bias_se : (n_graders,) σ_g / sqrt(n_g);
    noise : (n_graders,) σ_g; n_judgments : (n_graders,).
    log_likelihood : Gaussian log-likelihood at the estimates. iterations, converged: as for Dawid–Skene
    (the largest change of any t_u or σ_g below tol).
    """

    units: np.ndarray
    score: np.ndarray
    score_se: np.ndarray
    graders: np.ndarray
    bias: np.ndarray
    bias_se: np.ndarray
    noise: np.ndarray
    n_judgments: np.ndarray
    log_likelihood: float
    iterations: int
    converged: bool


def bias_noise(
    judgments: pd.DataFrame | Coded | _panels.Panels,
    *,
    tol: float = TOL,
    max_iter: int = 500,
    min_noise: float | None = None,
) -> BiasNoiseResult:
    """Per-grader bias and noise for numeric judgments, by alternating weighted least squares.

    Parameters
    ----------
    judgments : long DataFrame with columns ``unit``, ``grader``, ``value`` (numbers), the same as
        ``Coded``, or as ``_panels.Panels`` (a caller that lets go of its codes before the fit).
    min_noise : floor on every σ_g (default: 1% of the standard deviation of all values, or 1e-6 if
        they are all equal), so a grader who happens to sit exactly on the estimates does not get
        infinite weight.

    Starts from t_u = the unit mean, b = 0, σ_g = the pooled residual deviation; then repeats:
    t_u = Σ_g w_g (y_gu − b_g) / Σ_g w_g with w_g = 1/σ_g²; b_g = mean over g's units of y_gu − t_u,
    centred to Σ_g b_g = 0 (the mean moved into t); σ_g² = Σ_u r_gu² / Σ_u (1 − h_gu), the squared
    residuals over their degrees of freedom, where h_gu = w_g / Σ_{g' on u} w_g' is the share of
    t_u that comes from g. (Without this correction the residuals of a precise grader shrink with
    the estimate they pull towards, and the maximum-likelihood σ_g of the best grader collapses
    to zero.) Stops when no t_u and no σ_g changes by tol or more.

    Units judged by the same graders (a panel) are fitted together when panels are few
    (``_panels``): the same sums grouped by panel, equal to rounding.
    """
    if not 0 < tol < 1 or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"need 0 < tol < 1 and an integer max_iter ≥ 1; got {tol}, {max_iter}")
    if isinstance(judgments, _panels.Panels):
        return _bias_noise_panels(judgments, tol=tol, max_iter=max_iter, min_noise=min_noise)
    c = judgments if isinstance(judgments, Coded) else _coded(judgments)
    panels = _panels.panels_of(c)
    if panels is not None:
        return _bias_noise_panels(panels, tol=tol, max_iter=max_iter, min_noise=min_noise)
    c = _checked(c)
    if not all(np.isfinite(c.value[b]).all() for b in _ds_em.blocks(c.value.size)):
        raise ValueError("`judgments` values must be finite numbers")
    n_units, n_graders, u, g, y = c.units.size, c.graders.size, c.unit, c.grader, c.value
    per_unit, per_grader = _counts(u, n_units), _counts(g, n_graders)
    spread = _std(y)
    floor = float(min_noise) if min_noise is not None else (0.01 * spread if spread > 0 else 1e-6)
    score = _sums(u, n_units, lambda b: y[b]) / per_unit
    del per_unit  # done with
    bias = np.zeros(n_graders)
    var = np.full(n_graders, max(_mean(y.size, lambda b: (y[b] - score[u[b]]) ** 2), floor**2))
    converged, iterations = False, 0
    while iterations < max_iter:
        new, weights = _scores(c, var, bias)
        off, squares, shares = _grader_sums(c, new, weights)
        bias = off / per_grader
        # Σ_u r_gu² from the residuals before the bias, r = y − t: Σ (r − b_g)² = Σ r² − b_g Σ r for
        # b_g = Σ r / n_g (centring below moves t_u and b_g by the same shift, so r − b_g stays)
        squares -= bias * off
        shift = bias.mean()
        bias, new = bias - shift, new + shift
        free = per_grader - shares / var  # Σ_u (1 − h_gu): h_gu = w_g / Σ_{g' on u} w_g', w_g = 1/σ_g²
        new_var = np.maximum(squares / np.maximum(free, 1e-9), floor**2)
        change = max(float(np.abs(new - score).max()), float(np.abs(np.sqrt(new_var) - np.sqrt(var)).max()))
        score, var, iterations = new, new_var, iterations + 1
        if change < tol:
            converged = True
            break
    del weights  # done with
    noise = np.sqrt(var)
    log_var = np.log(2 * np.pi * var)  # each grader's, looked up per judgment: the same terms, a log per grader
    log_likelihood = float(
        -0.5
        * _total(
            y.size,
            lambda b: log_var[g[b]] + (y[b] - score[u[b]] - bias[g[b]]) ** 2 / var[g[b]],
        )
    )
    inverse = 1.0 / var
    score_se = 1.0 / np.sqrt(_sums(u, n_units, lambda b: inverse[g[b]]))
    return BiasNoiseResult(
        c.units,
        score,
        score_se,
        c.graders,
        bias,
        noise / np.sqrt(per_grader),
        noise,
        per_grader,
        log_likelihood,
        iterations,
        converged,
    )


def _bias_noise_panels(p: _panels.Panels, *, tol: float, max_iter: int, min_noise: float | None) -> BiasNoiseResult:
    fit = _panels.fit(p, tol=tol, max_iter=max_iter, min_noise=min_noise)
    noise = np.sqrt(fit.var)
    return BiasNoiseResult(
        p.units,
        fit.score,
        fit.score_se,
        p.graders,
        fit.bias,
        noise / np.sqrt(fit.per_grader),
        noise,
        fit.per_grader,
        fit.log_likelihood,
        fit.iterations,
        fit.converged,
    )


# bias_noise's sums over the judgments, block by block (``CHUNK`` rows): each term of a sum is computed
# as the whole-array expression computed it, and np.add.at adds a block's terms to their bins in row
# order, as np.bincount did over all rows, so every sum is the same to the last bit; a mean or a total
# is numpy's pairwise sum, whose grouping depends on the whole array: ``_total`` follows that grouping
# down to pieces of at most ``CHUNK`` terms, which numpy sums as it would inside the whole. A pass holds
# only a block's temporaries, where whole-array expressions held several arrays the size of the
# judgments (80 MB each at 10^7).


def _counts(codes: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    for b in _ds_em.blocks(codes.size):
        np.add.at(out, codes[b], 1)
    return out


def _sums(codes: np.ndarray, n: int, terms: Callable[[slice], np.ndarray]) -> np.ndarray:
    """``np.bincount(codes, weights=terms(all rows), minlength=n)``."""
    out = np.zeros(n)
    for b in _ds_em.blocks(codes.size):
        np.add.at(out, codes[b], terms(b))
    return out


_PAIRWISE_BLOCK = 128  # numpy sums this many terms or fewer in one go (eight running sums), more in halves


def _total(size: int, terms: Callable[[slice], np.ndarray], start: int = 0) -> float:
    """``terms(all rows).sum()`` (of the ``size`` rows from ``start``), without the terms of every row at once.

    numpy sums a float array pairwise: more than 128 terms are split at half their number rounded
    down to a multiple of 8, and each half summed so (numpy's ``pairwise_sum``). Splitting the same
    way until a piece has at most ``CHUNK`` terms, and letting numpy sum each piece, adds the same
    numbers in the same order."""
    if size <= max(_ds_em.CHUNK, _PAIRWISE_BLOCK):
        return np.add.reduce(terms(slice(start, start + size)))
    half = size // 2
    half -= half % 8
    return _total(half, terms, start) + _total(size - half, terms, start + half)


def _mean(size: int, terms: Callable[[slice], np.ndarray]) -> float:
    return float(_total(size, terms) / size)


def _std(values: np.ndarray) -> float:
    """``values.std()``: the root of the mean squared deviation from the mean, each a pairwise sum."""
    mean = _total(values.size, lambda b: values[b]) / values.size
    return float(np.sqrt(_total(values.size, lambda b: (values[b] - mean) ** 2) / values.size))


def _scores(c: Coded, var: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's mean of its judgments less their graders' bias, weighted by w_g = 1/σ_g²; and its
    sum of weights."""
    n, u, g, y = c.units.size, c.unit, c.grader, c.value
    scaled, weights = np.zeros(n), np.zeros(n)
    inverse = 1.0 / var
    for b in _ds_em.blocks(y.size):
        ub, gb = u[b], g[b]
        w = inverse[gb]
        np.add.at(weights, ub, w)
        term = y[b] - bias[gb]
        term *= w
        np.add.at(scaled, ub, term)
    return scaled / weights, weights


def _grader_sums(c: Coded, score: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per grader, over their judgments, with r = y − t_u the judgment less its unit's score: Σ r,
    Σ r², and Σ 1 / (Σ_{g' on u} w_g'), from which the leverages' sum is n_g − w_g times it.

    One pass for the three, where the bias, then the residuals and leverages, took two passes
    and twice the temporaries (a third of the fit's time at 10^7 judgments)."""
    off, squares, shares = np.zeros(c.graders.size), np.zeros(c.graders.size), np.zeros(c.graders.size)
    u, g, y = c.unit, c.grader, c.value
    per_weight = 1.0 / weights
    for b in _ds_em.blocks(y.size):
        ub, gb = u[b], g[b]
        r = y[b] - score[ub]
        np.add.at(off, gb, r)
        r *= r
        np.add.at(squares, gb, r)
        np.add.at(shares, gb, per_weight[ub])
    return off, squares, shares


def ds_table(result: DawidSkeneResult) -> pd.DataFrame:
    """Per unit: model label and its posterior probability (indexed by unit)."""
    return pd.DataFrame(
        {"model_label": result.labels, "model_probability": result.probability},
        index=pd.Index(result.units, name="unit"),
    )


def bias_noise_table(result: BiasNoiseResult) -> pd.DataFrame:
    """Per unit: model score and its standard error (indexed by unit)."""
    return pd.DataFrame(
        {"model_score": result.score, "model_se": result.score_se}, index=pd.Index(result.units, name="unit")
    )
