"""Chance-corrected agreement for categorical judgments: Fleiss' and Cohen's kappa, Landis & Koch.

References
----------
Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological Bulletin
76(5), 378-382.
Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and Psychological
Measurement 20(1), 37-46; Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70(4), 213-220.
Landis, J. R. & Koch, G. G. (1977). The measurement of observer agreement for categorical data.
Biometrics 33(1), 159-174.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._checks import Undefined, as_count_table, as_labels, choice, short
from .shapes import codes_for

Weights = Literal["unweighted", "linear", "quadratic"]

IDENTICAL = "all judgments are identical (expected agreement is 1)"
TOO_FEW = "fewer than one unit with two or more judgments"


def row_sums(table: np.ndarray) -> np.ndarray:
    """Row sums of a tall, narrow table (a matrix-vector product: much faster than ``sum(axis=1)``)."""
    return table @ np.ones(table.shape[1])


def rows_where(table: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``table[keep]``, or ``table`` itself when every row is kept (no copy of a count table of
    2,000,000 units at 10^7 judgments)."""
    return table if keep.all() else table[keep]


def rated_units(counts: np.ndarray) -> np.ndarray:
    """Boolean mask of the units (rows) with at least two judgments."""
    return row_sums(counts) >= 2


def fleiss_parts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-unit quantities of Fleiss' kappa for units with n_i >= 2.

    Returns
    -------
    agree : (n,) P_i, the share of agreeing ordered pairs of judgments of unit i.
    n_i : (n,) judgments per unit.
    disagree : (n, k) n_ij (n_i - n_ij) / (n_i (n_i - 1)), the per-category disagreement.
    """
    n_i = row_sums(counts)
    pairs = n_i * (n_i - 1)
    agree = row_sums(counts * (counts - 1)) / pairs
    disagree = counts * (n_i[:, None] - counts) / pairs[:, None]
    return agree, n_i, disagree


def fleiss_from_sums(mean_agree: np.ndarray, category_share: np.ndarray) -> np.ndarray:
    """kappa = (P - Pe) / (1 - Pe) for a batch: ``mean_agree`` (...,), ``category_share`` (..., k).

    Where Pe = 1 (every judgment in one category) the result is NaN, without a division warning.
    """
    p_e = (category_share**2).sum(axis=-1)
    denom = 1.0 - p_e
    defined = denom > 1e-12
    return np.divide(mean_agree - p_e, denom, out=np.full(np.shape(p_e), np.nan), where=defined)


def rated_groups(table: np.ndarray, sizes: ArrayLike | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows of ``table`` with two judgments or more, and their ``sizes`` (None: a unit a row)."""
    keep = rated_units(table)
    if sizes is None:
        return rows_where(table, keep), None
    sizes = np.asarray(sizes)
    if sizes.shape != (table.shape[0],) or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 0).any():
        raise ValueError(
            f"`sizes` must hold a non-negative integer for each of the {table.shape[0]} rows, "
            f"got {short(sizes.tolist())}"
        )
    keep &= sizes > 0
    return rows_where(table, keep), rows_where(sizes, keep)


def weighted_mean(values: np.ndarray, sizes: np.ndarray | None) -> np.ndarray:
    """The mean of ``values`` over its first axis, each row counted ``sizes`` times (None: once)."""
    if sizes is None:
        return values.mean(axis=0)
    return sizes.astype(float) @ values / sizes.sum()


def category_shares(table: np.ndarray, n_i: np.ndarray, sizes: np.ndarray | None) -> np.ndarray:
    """p_j: each category's share of all judgments, each row counted ``sizes`` times (None: once).
    Sums of whole numbers, exact in either order."""
    weights = np.ones(table.shape[0]) if sizes is None else sizes.astype(float)
    return weights @ table / (weights @ n_i)


def fleiss_kappa(counts: ArrayLike, *, sizes: ArrayLike | None = None) -> float:
    """Fleiss' kappa for an ``(n_units, n_categories)`` table of judgment counts.

    ``P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1))``, ``P = mean_i P_i``, ``p_j = sum_i n_ij / sum_i
    n_i``, ``Pe = sum_j p_j^2``, ``kappa = (P - Pe) / (1 - Pe)`` (docs/design.md §5.1). With equal ``n_i``
    this is Fleiss (1971) exactly; with unequal ``n_i`` it is the usual generalisation (each unit's
    ``P_i`` uses its own ``n_i``; ``p_j`` pools all judgments). Units with fewer than two judgments
    are excluded (count them with ``(counts.sum(1) < 2).sum()``).

    Parameters
    ----------
    counts : (n_units, n_categories) array of non-negative integers.
    sizes : how many units each row stands for (``shapes.distinct_rows``' counts: units with equal
        rows are alike); None, one unit a row.

    Returns
    -------
    float
        kappa; an :class:`Undefined` NaN with a ``reason`` when every judgment falls in one category
        or no unit has two judgments.
    """
    table, sizes = rated_groups(as_count_table(counts), sizes)
    if table.shape[0] == 0:
        return Undefined(TOO_FEW)
    n_i = row_sums(table)
    agree = row_sums(table * (table - 1)) / (n_i * (n_i - 1))
    kappa = fleiss_from_sums(weighted_mean(agree, sizes), category_shares(table, n_i, sizes))
    return Undefined(IDENTICAL) if np.isnan(kappa) else float(kappa)


def per_category_from_sums(mean_disagree: np.ndarray, category_share: np.ndarray) -> np.ndarray:
    """kappa_j = 1 - D_j / (p_j (1 - p_j)) for a batch; NaN where p_j is 0 or 1."""
    spread = category_share * (1.0 - category_share)
    return np.divide(spread - mean_disagree, spread, out=np.full(np.shape(spread), np.nan), where=spread > 1e-12)


def fleiss_kappa_per_category(counts: ArrayLike, *, sizes: ArrayLike | None = None) -> np.ndarray:
    """Fleiss' kappa for each category against all others (Fleiss 1971, eq. 11).

    ``kappa_j = 1 - mean_i[n_ij (n_i - n_ij) / (n_i (n_i - 1))] / (p_j (1 - p_j))``; with equal
    ``n_i`` this is Fleiss' formula, and ``kappa`` is the ``p_j (1 - p_j)``-weighted mean of them.

    Parameters
    ----------
    counts : (n_units, n_categories) array of non-negative integers.
    sizes : how many units each row stands for, as for ``fleiss_kappa``; None, one unit a row.

    Returns
    -------
    (n_categories,) float array; NaN for a category nobody or everybody used.
    """
    table, sizes = rated_groups(as_count_table(counts), sizes)
    if table.shape[0] == 0:
        return np.full(table.shape[1], np.nan)
    _, n_i, disagree = fleiss_parts(table)
    return per_category_from_sums(weighted_mean(disagree, sizes), category_shares(table, n_i, sizes))


def weight_matrix(k: int, weights: Weights) -> np.ndarray:
    """The (k, k) disagreement weights: 0/1, |i - j|, or (i - j)^2."""
    kind = choice(weights, {"unweighted": 0, "linear": 1, "quadratic": 2}, name="weights")
    distance = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    return (distance > 0).astype(float) if kind == 0 else distance**kind


def cohen_from_table(table: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's kappa from a batch of (..., k, k) confusion matrices and (k, k) disagreement weights."""
    total = table.sum(axis=(-2, -1))
    observed = (table * weights).sum(axis=(-2, -1))
    rows, cols = table.sum(axis=-1), table.sum(axis=-2)
    expected = np.einsum("...i,ij,...j->...", rows, weights, cols)
    expected = np.divide(expected, total, out=np.zeros_like(expected), where=total > 0)
    return np.divide(expected - observed, expected, out=np.full(np.shape(expected), np.nan), where=expected > 1e-12)


def confusion_matrix(
    ratings1: ArrayLike,
    ratings2: ArrayLike,
    categories: Sequence[Any] | None = None,
) -> tuple[np.ndarray, list]:
    """The (k, k) table of paired labels; pairs where either is missing (None/NaN) are dropped.

    Returns
    -------
    table : (k, k) float array, rows ``ratings1``, columns ``ratings2``, in ``categories`` order
        (default: the sorted labels seen).
    categories : the labels.
    """
    a = as_labels(ratings1, name="ratings1", dtype=object)
    b = as_labels(ratings2, name="ratings2", dtype=object)
    if a.shape != b.shape:
        raise ValueError(f"`ratings1` and `ratings2` differ in length: {a.shape[0]} != {b.shape[0]}")
    both = ~(_missing(a) | _missing(b))
    if not both.any():
        raise ValueError(f"`ratings1` and `ratings2` have no unit rated by both: {short(list(a[:5]))}")
    codes, categories = codes_for(np.concatenate([a[both], b[both]]), categories, name="ratings")
    k, n = len(categories), int(both.sum())
    table = np.bincount(codes[:n] * k + codes[n:], minlength=k * k).reshape(k, k)
    return table.astype(float), categories


def _missing(values: np.ndarray) -> np.ndarray:
    return pd.isna(values)


def cohen_kappa(
    ratings1: ArrayLike,
    ratings2: ArrayLike,
    *,
    weights: Weights = "unweighted",
    categories: Sequence[Any] | None = None,
) -> float:
    """Cohen's kappa between two graders, unweighted or with linear / quadratic weights.

    ``kappa = 1 - sum w_ij o_ij / sum w_ij e_ij`` with observed ``o`` and chance-expected ``e =
    row_i col_j / n`` tables and weights 0/1, ``|i - j|`` or ``(i - j)^2`` over the category order
    (Cohen 1960, 1968).

    Parameters
    ----------
    ratings1, ratings2 : (n_units,) labels of the two graders; None/NaN is missing (pair dropped).
    weights : "unweighted", "linear" or "quadratic".
    categories : the ordered labels (weighted kappas need the order); default: sorted labels seen.

    Returns
    -------
    float
        kappa, or an :class:`Undefined` NaN when chance disagreement is 0 (e.g. one label only).
    """
    table, categories = confusion_matrix(ratings1, ratings2, categories)
    kappa = cohen_from_table(table, weight_matrix(len(categories), weights))
    return Undefined(IDENTICAL) if np.isnan(kappa) else float(kappa)


_LANDIS_KOCH = ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial"))


def landis_koch(kappa: float) -> str:
    """Landis & Koch (1977) label: <0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate,
    0.61-0.80 substantial, 0.81-1 almost perfect; "undefined" for NaN.

    Boundaries belong to the lower band (0.20 is slight, 0.8 substantial), as in the paper's table.
    """
    if not isinstance(kappa, int | float | np.floating) or kappa > 1 + 1e-12:
        raise ValueError(f"`kappa` must be a number <= 1, got {short(kappa)}")
    if np.isnan(kappa):
        return "undefined"
    if kappa < 0:
        return "poor"
    for upper, label in _LANDIS_KOCH[1:]:
        if kappa <= upper:
            return label
    return "almost perfect"
