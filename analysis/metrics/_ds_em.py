"""Dawid–Skene EM on answer patterns (docs/design.md §5.6, "Model-based truth": how the fit is computed).

A unit's posterior depends on its judgments only through the set of (grader, answer) cells it
holds. Units with the same set — the same *pattern* — have the same posterior at every iteration,
so the EM runs once per pattern, each pattern weighted by its number of units. With a handful of
graders and categories there are a few hundred patterns however many units there are, and an
iteration costs microseconds instead of a pass over every judgment.

Each iteration is two sparse products with the (patterns × cells) 0/1 matrix ``A``:

- E-step: ``log P(truth t, judgments of p) = log π_t + Σ_{cells c of p} log θ[c, t]`` = ``A @ log θ``;
- M-step: confusion counts ``[cell, truth] = Σ_p w_p A[p, cell] post[p, truth]`` = ``Aᵀ @ (w · post)``,
  priors ``(Σ_p w_p post_p + s) / (n_units + k s)``.

These are the sums of the definition over the same terms, grouped differently: results equal
the one-row-per-judgment computation to rounding (≈1e-15; tests hold them to 1e-9), including the
stopping rule (the largest change of any unit's posterior, which is the largest over patterns).

When some unit holds far more judgments than the rest (so that padding every unit to the longest
one would cost more than 4× the judgments), patterns are not formed and each unit is its own
pattern: the same sparse products over every judgment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

PAD_BUDGET = 4  # padded cells allowed per judgment before patterns are not worth forming
MASK_CELLS = 63  # up to this many cells, a unit's set of cells is an int64 bit mask
CHUNK = 1 << 17  # rows per block of a pass over the judgments: a block's temporaries stay ~1 MB at any size


def blocks(n: int) -> list[slice]:
    """``n`` rows in blocks of ``CHUNK``."""
    return [slice(start, start + CHUNK) for start in range(0, n, CHUNK)]


@dataclass(frozen=True)
class Patterns:
    """of_unit : (n_units,) each unit's pattern; weight : (P,) units per pattern (float);
    cells : (P, n_graders · k) CSR 0/1, cell ``grader · k + answer``."""

    of_unit: np.ndarray
    weight: np.ndarray
    cells: sparse.csr_matrix


def _matrix(row: np.ndarray, cell: np.ndarray, n_rows: int, n_cells: int) -> sparse.csr_matrix:
    return sparse.csr_matrix((np.ones(row.size), (row, cell)), shape=(n_rows, n_cells))


def patterns_of(unit: np.ndarray, cell: np.ndarray, *, n_units: int, n_cells: int) -> Patterns:
    """Group units by their set of cells (every unit 0..n_units-1 holds at least one judgment;
    no unit holds a cell twice). Patterns are numbered in lexicographic order of their sorted cells."""
    lengths = np.zeros(n_units, dtype=np.int64)
    for b in blocks(unit.size):
        np.add.at(lengths, unit[b], 1)
    width = int(lengths.max())
    if n_units * width > PAD_BUDGET * unit.size:
        return Patterns(np.arange(n_units), np.ones(n_units), _matrix(unit, cell, n_units, n_cells))
    # (bit masks pad only the distinct sets, but the budget above still decides, so that the EM sums
    # over the same patterns in the same order whichever way they are found)
    if n_cells <= MASK_CELLS:
        return _patterns(*_mask_patterns(unit, cell, n_units, n_cells, width), n_cells)
    order = np.lexsort((cell, unit))
    u, c = unit[order], cell[order]
    padded = np.full((n_units, width), -1, dtype=_cell_dtype(n_cells))
    padded[u, np.arange(u.size) - (np.cumsum(lengths) - lengths)[u]] = c
    return _patterns(padded, np.arange(n_units), n_cells)


def _cell_dtype(n_cells: int) -> type:
    return np.int32 if n_cells < 2**31 else np.int64


def _cells_of(grader: np.ndarray, value: np.ndarray, k: int, n_cells: int) -> np.ndarray:
    """Each judgment's cell ``grader · k + answer``, in the narrowest type that holds the cells: at
    10^7 judgments an int64 array is 80 MB."""
    cell = grader.astype(np.int16 if n_cells < 2**15 else _cell_dtype(n_cells))
    cell *= k
    cell += value
    return cell


def _mask_patterns(
    unit: np.ndarray, cell: np.ndarray, n_units: int, n_cells: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each distinct set of cells as a padded row of its sorted cells, and each unit's row.

    A unit's set is the sum of 2^cell over its cells (no cell twice: a bit mask), added up block by
    block, so that 10^7 judgments are neither sorted nor padded: only the few hundred sets are."""
    mask = np.zeros(n_units, dtype=np.int64)
    for b in blocks(unit.size):
        np.add.at(mask, unit[b], np.left_shift(1, cell[b].astype(np.int64)))
    of_unit, sets = pd.factorize(mask)
    padded = np.full((sets.size, width), -1, dtype=_cell_dtype(n_cells))
    filled = np.zeros(sets.size, dtype=np.int64)
    for c in range(n_cells):
        held = (sets >> c) & 1 == 1
        padded[held, filled[held]] = c
        filled += held
    return padded, of_unit


def _patterns(padded: np.ndarray, of_row: np.ndarray, n_cells: int) -> Patterns:
    """Patterns from ``padded`` rows (sorted cells, -1 after the last), unit ``i`` holding row ``of_row[i]``."""
    rows = np.lexsort(padded.T[::-1])  # rows in lexicographic order of their sorted cells
    ordered = padded[rows]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    pattern = np.empty(rows.size, dtype=np.int64)
    pattern[rows] = np.cumsum(first) - 1
    of_unit = pattern[of_row]
    rep = ordered[first]  # one row per pattern
    held = rep >= 0
    p = np.repeat(np.arange(rep.shape[0]), rep.shape[1]).reshape(rep.shape)[held]
    weight = np.bincount(of_unit, minlength=rep.shape[0]).astype(float)
    return Patterns(of_unit, weight, _matrix(p, rep[held].astype(np.int64), rep.shape[0], n_cells))


def m_step(
    cells: sparse.csr_matrix, weight: np.ndarray, posterior: np.ndarray, n_units: int, k: int, smoothing: float
) -> tuple[np.ndarray, np.ndarray]:
    """Priors (k,) and confusion (G, k, k) from the posteriors (P, k) of weighted patterns."""
    weighted = posterior * weight[:, None]
    priors = (weighted.sum(axis=0) + smoothing) / (n_units + k * smoothing)
    counts = np.asarray(cells.T @ weighted).reshape(-1, k, k)  # [g, answer, truth]
    counts = counts.transpose(0, 2, 1) + smoothing  # [g, truth, answer]
    return priors, counts / counts.sum(axis=2, keepdims=True)


def e_step(
    cells: sparse.csr_matrix, weight: np.ndarray, priors: np.ndarray, confusion: np.ndarray
) -> tuple[np.ndarray, float]:
    """Posterior (P, k) and the natural-log marginal likelihood of all units."""
    k = priors.size
    log_theta = np.log(confusion.transpose(0, 2, 1).reshape(-1, k))  # [cell, truth]
    log_joint = np.log(priors)[None, :] + np.asarray(cells @ log_theta)
    top = log_joint.max(axis=1, keepdims=True)  # log Σ_t exp(·), shifted by the largest term
    norm = top + np.log(np.exp(log_joint - top).sum(axis=1, keepdims=True))
    return np.exp(log_joint - norm), float(weight @ norm[:, 0])


def em(
    unit: np.ndarray,
    grader: np.ndarray,
    value: np.ndarray,
    *,
    n_units: int,
    n_graders: int,
    k: int,
    smoothing: float,
    tol: float,
    max_iter: int,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, bool]:
    """Posterior (n_units, k), priors, confusion, log-likelihood, iterations, converged.

    Starts from the soft majority vote, or ``start`` (n_units, k), then an M-step; each iteration is
    an E-step then an M-step; stops when the largest posterior change is below ``tol``.
    """
    n_cells = n_graders * k
    cell = _cells_of(grader, value, k, n_cells)
    pat = patterns_of(unit, cell, n_units=n_units, n_cells=n_cells)
    if start is None:
        votes = np.asarray(pat.cells @ np.tile(np.eye(k), (n_graders, 1)))  # (P, k) answers per category
        posterior = votes / votes.sum(axis=1, keepdims=True)
        priors, confusion = m_step(pat.cells, pat.weight, posterior, n_units, k, smoothing)
        previous = None
    else:  # units of one pattern may start apart: the first M-step and change are per unit
        priors, confusion = m_step(
            _matrix(unit, cell, n_units, n_cells), np.ones(n_units), start, n_units, k, smoothing
        )
        posterior, previous = None, start
    converged, iterations, log_likelihood = False, 0, float("nan")
    while iterations < max_iter:
        new, log_likelihood = e_step(pat.cells, pat.weight, priors, confusion)
        if previous is None:
            change = float(np.abs(new - posterior).max())
        else:
            change, previous = float(np.abs(new[pat.of_unit] - previous).max()), None
        posterior, iterations = new, iterations + 1
        priors, confusion = m_step(pat.cells, pat.weight, posterior, n_units, k, smoothing)
        if change < tol:
            converged = True
            break
    per_unit = start if posterior is None else posterior[pat.of_unit]
    return per_unit, priors, confusion, log_likelihood, iterations, converged
