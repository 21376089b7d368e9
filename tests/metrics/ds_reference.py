"""The Dawid–Skene EM as it was before the pattern-compressed one (analysis.metrics._ds_em): one
bincount per category over every judgment, at every iteration. Kept here, unchanged, as the
reference the fast EM must reproduce to 1e-9 (tests/metrics/test_ds_em.py)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from analysis.metrics.dawid_skene import MAX_ITER, SMOOTHING, TOL, _Coded


def _m_step(c: _Coded, posterior: np.ndarray, k: int, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """Priors (k,) and confusion matrices (G, k, k) from soft labels, with additive smoothing."""
    n_graders = c.graders.size
    priors = (posterior.sum(axis=0) + smoothing) / (posterior.shape[0] + k * smoothing)
    cell = c.grader * k + c.value  # (grader, answer) per judgment
    counts = np.stack(
        [np.bincount(cell, weights=posterior[c.unit, t], minlength=n_graders * k) for t in range(k)], axis=1
    ).reshape(n_graders, k, k)  # [g, answer, truth]
    counts = counts.transpose(0, 2, 1) + smoothing  # [g, truth, answer]
    return priors, counts / counts.sum(axis=2, keepdims=True)


def _e_step(c: _Coded, priors: np.ndarray, confusion: np.ndarray, n_units: int) -> tuple[np.ndarray, float]:
    """Posterior (n_units, k) and the natural-log marginal likelihood."""
    k = priors.size
    contrib = np.log(confusion[c.grader, :, c.value])  # (J, k): log θ_g[t, answer] for every truth t
    log_joint = np.log(priors)[None, :] + np.stack(
        [np.bincount(c.unit, weights=contrib[:, t], minlength=n_units) for t in range(k)], axis=1
    )
    norm = logsumexp(log_joint, axis=1, keepdims=True)
    return np.exp(log_joint - norm), float(norm.sum())


def _em(
    c: _Coded,
    k: int,
    *,
    smoothing: float = SMOOTHING,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, bool]:
    n_units = c.units.size
    if start is None:
        posterior = np.zeros((n_units, k))
        np.add.at(posterior, (c.unit, c.value), 1.0)
        posterior /= posterior.sum(axis=1, keepdims=True)
    else:
        posterior = start
    priors, confusion = _m_step(c, posterior, k, smoothing)
    converged, iterations, log_likelihood = False, 0, float("nan")
    while iterations < max_iter:
        new, log_likelihood = _e_step(c, priors, confusion, n_units)
        change = float(np.abs(new - posterior).max())
        posterior, iterations = new, iterations + 1
        priors, confusion = _m_step(c, posterior, k, smoothing)
        if change < tol:
            converged = True
            break
    return posterior, priors, confusion, log_likelihood, iterations, converged
