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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _ds_em
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


@dataclass(frozen=True)
class _Coded:
    unit: np.ndarray
    grader: np.ndarray
    value: np.ndarray
    units: np.ndarray
    graders: np.ndarray


def _check_frame(judgments: pd.DataFrame) -> None:
    if not isinstance(judgments, pd.DataFrame) or not {"unit", "grader", "value"} <= set(judgments.columns):
        raise ValueError(f"`judgments` must be a DataFrame with columns unit, grader, value; got {short(judgments)}")


def _coded(judgments: pd.DataFrame, *, value_codes: Sequence | None = None) -> _Coded:
    _check_frame(judgments)
    frame = judgments.dropna(subset=["value"])
    if frame.empty:
        raise ValueError("`judgments` holds no values")
    unit, units = pd.factorize(frame["unit"], sort=True)
    grader, graders = pd.factorize(frame["grader"], sort=True)
    pairs = np.sort(unit.astype(np.int64) * max(len(graders), 1) + grader)
    if (pairs[1:] == pairs[:-1]).any():  # found by sorting codes; named (slowly) only when there is one
        row = frame[frame.duplicated(["unit", "grader"])].iloc[0]
        raise ValueError(f"`judgments` has two values of grader {row['grader']!r} for unit {row['unit']!r}")
    if value_codes is None:
        return _Coded(unit, grader, frame["value"].to_numpy(dtype=float), np.asarray(units), np.asarray(graders))
    index = {v: i for i, v in enumerate(value_codes)}
    seen, distinct = pd.factorize(frame["value"])  # each distinct value looked up once
    codes = np.array([index.get(v, -1) for v in distinct], dtype=np.int64)[seen]
    if (codes < 0).any():
        first = frame["value"].iloc[int(np.flatnonzero(codes < 0)[0])]
        raise ValueError(f"`judgments` value {short(first)} is not one of the categories {short(list(value_codes))}")
    return _Coded(unit, grader, codes, np.asarray(units), np.asarray(graders))


def _em(
    c: _Coded,
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
    c = _Coded(unit, grader, value, np.arange(n_units), np.arange(n_graders))
    posterior, priors, confusion, *_ = _em(c, k, start=start, max_iter=max_iter)
    return posterior, priors, confusion


def dawid_skene(
    judgments: pd.DataFrame,
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
        unit; missing values are dropped).
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
    _check_frame(judgments)
    if categories is None:
        categories = sorted(pd.unique(judgments["value"].dropna()))
    categories = np.asarray(list(categories), dtype=object)
    if categories.size < 2 or len(set(categories.tolist())) != categories.size:
        raise ValueError(f"`categories` must hold at least two distinct values, got {short(categories.tolist())}")
    c = _coded(judgments, value_codes=categories.tolist())
    posterior, priors, confusion, log_likelihood, iterations, converged = _em(
        c, categories.size, smoothing=smoothing, tol=tol, max_iter=max_iter
    )
    labels = posterior.argmax(axis=1)
    accuracy = np.einsum("t,gtt->g", priors, confusion)
    return DawidSkeneResult(
        c.units,
        c.graders,
        categories,
        posterior,
        categories[labels],
        posterior.max(axis=1),
        priors,
        confusion,
        accuracy,
        log_likelihood,
        iterations,
        converged,
    )


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
    judgments: pd.DataFrame, *, tol: float = TOL, max_iter: int = 500, min_noise: float | None = None
) -> BiasNoiseResult:
    """Per-grader bias and noise for numeric judgments, by alternating weighted least squares.

    Parameters
    ----------
    judgments : long DataFrame with columns ``unit``, ``grader``, ``value`` (numbers).
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
    """
    if not 0 < tol < 1 or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"need 0 < tol < 1 and an integer max_iter ≥ 1; got {tol}, {max_iter}")
    c = _coded(judgments)
    if not np.isfinite(c.value).all():
        raise ValueError("`judgments` values must be finite numbers")
    n_units, n_graders, y = c.units.size, c.graders.size, c.value
    per_unit = np.bincount(c.unit, minlength=n_units)
    per_grader = np.bincount(c.grader, minlength=n_graders)
    spread = float(y.std())
    floor = float(min_noise) if min_noise is not None else (0.01 * spread if spread > 0 else 1e-6)
    score = np.bincount(c.unit, weights=y, minlength=n_units) / per_unit
    bias = np.zeros(n_graders)
    var = np.full(n_graders, max(float(((y - score[c.unit]) ** 2).mean()), floor**2))
    converged, iterations = False, 0
    while iterations < max_iter:
        w = 1.0 / var[c.grader]
        new = np.bincount(c.unit, weights=w * (y - bias[c.grader]), minlength=n_units) / np.bincount(
            c.unit, weights=w, minlength=n_units
        )
        bias = np.bincount(c.grader, weights=y - new[c.unit], minlength=n_graders) / per_grader
        shift = bias.mean()
        bias, new = bias - shift, new + shift
        residual = y - new[c.unit] - bias[c.grader]
        leverage = w / np.bincount(c.unit, weights=w, minlength=n_units)[c.unit]
        dof = np.maximum(np.bincount(c.grader, weights=1 - leverage, minlength=n_graders), 1e-9)
        new_var = np.maximum(np.bincount(c.grader, weights=residual**2, minlength=n_graders) / dof, floor**2)
        change = max(float(np.abs(new - score).max()), float(np.abs(np.sqrt(new_var) - np.sqrt(var)).max()))
        score, var, iterations = new, new_var, iterations + 1
        if change < tol:
            converged = True
            break
    noise = np.sqrt(var)
    score_se = 1.0 / np.sqrt(np.bincount(c.unit, weights=1.0 / var[c.grader], minlength=n_units))
    residual = y - score[c.unit] - bias[c.grader]
    log_likelihood = float(-0.5 * (np.log(2 * np.pi * var[c.grader]) + residual**2 / var[c.grader]).sum())
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
