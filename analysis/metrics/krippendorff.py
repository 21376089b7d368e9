"""Krippendorff's alpha from the coincidence matrix, for any level of measurement and missing pattern.

``alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck`` where ``o`` is
the coincidence matrix of pairable values, ``n_c`` its marginals and ``n`` the number of pairable
values. ``o`` is a sum over units, ``o_ck = sum_u n_uc (n_uk - [c = k]) / (m_u - 1)``, so ``sum_ck
o_ck delta_ck = sum_u d_u`` with the per-unit disagreement ``d_u = n_u' Delta n_u / (m_u - 1)``.
Closed forms keep it linear in the number of judgments: nominal ``d_u = (m_u^2 - sum_c n_uc^2) /
(m_u - 1)``, interval ``d_u = 2 (m_u sum x^2 - (sum x)^2) / (m_u - 1)``; ordinal is interval on the
mid-rank positions ``t_c = sum_{g<c} n_g + n_c / 2`` (since ``delta_ck = (t_k - t_c)^2``).

References
----------
Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
Communication Departmental Papers 43. Krippendorff, K. (2004). Content Analysis, 2nd ed., ch. 11.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import sparse

from ._checks import Undefined, as_wide, choice
from .bootstrap import Estimate, KeptSums, _estimate, bootstrap_replicates, bootstrap_sums
from .shapes import distinct_rows

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
NO_PAIRS = "no unit has two or more values"
NO_VARIATION = "all pairable values are identical (expected disagreement is 0)"


DENSE_VALUES = 64  # up to this many distinct values, per-unit value counts are held as a dense array


BLOCK_UNITS = 200_000  # units whose rows are worked on at once where the work is per unit


class _Parts:
    """Per-unit quantities of the pairable units (m_u >= 2) of a wide matrix, built on demand."""

    def __init__(self, wide: np.ndarray) -> None:
        observed = ~np.isnan(wide)
        m = observed.sum(axis=1)
        pairable = m >= 2
        every = bool(pairable.all())  # the common case: no copy of the matrix (80 MB at 10^7 judgments)
        self.wide = wide if every else wide[pairable]
        self.m = (m if every else m[pairable]).astype(float)

    def _blocks(self) -> range:
        return range(0, self.n_units, BLOCK_UNITS)

    @cached_property
    def n_values(self) -> int:
        """How many distinct values there are (``coded``'s V), without ``coded``'s arrays of every value.

        Each block's values are told apart by hashing (``pd.unique``, which holds 0.0 and -0.0 the
        same, as ``np.unique`` does), not by sorting them: at 10^7 judgments 0.07 s, not 0.28 s."""
        seen = [pd.unique(block[~np.isnan(block)]) for block in map(self._rows, self._blocks())]
        return np.unique(np.concatenate(seen)).size if seen else 0

    def _rows(self, start: int) -> np.ndarray:
        return self.wide[start : start + BLOCK_UNITS]

    @property
    def n_units(self) -> int:
        return self.m.size

    @cached_property
    def coded(self) -> tuple[np.ndarray, sparse.csr_matrix | np.ndarray, np.ndarray]:
        """values (V,), counts n_uc (n, V) -- dense when V is small, and marginals n_c (V,)."""
        observed = ~np.isnan(self.wide)
        units = np.nonzero(observed)[0]
        values, codes = np.unique(self.wide[observed], return_inverse=True)
        shape = (self.n_units, values.size)
        if values.size <= DENSE_VALUES:
            flat = np.bincount(units * values.size + codes, minlength=shape[0] * shape[1])
            counts = flat.reshape(shape).astype(float)
            return values, counts, counts.sum(axis=0)
        counts = sparse.csr_matrix((np.ones(units.size), (units, codes)), shape=shape)
        return values, counts, np.asarray(counts.sum(axis=0)).ravel()

    @cached_property
    def moments(self) -> np.ndarray:
        """(n, 4): d_u (interval), m_u, sum x and sum x^2 of the unit's values, centred overall.

        The centre is ``_centre`` of every value; the rest is per unit, so it is computed a block of
        units at a time (whole-matrix temporaries were 80 MB each at 10^7)."""
        observed = ~np.isnan(self.wide)
        centre = _centre(self.wide, observed)
        out = np.empty((self.n_units, 4))
        for start in self._blocks():
            rows = slice(start, start + BLOCK_UNITS)
            x = np.where(observed[rows], self.wide[rows] - centre, 0.0)
            s1, s2, m = x.sum(axis=1), (x * x).sum(axis=1), self.m[rows]
            out[rows] = np.column_stack([2 * (m * s2 - s1**2) / (m - 1), m, s1, s2])
        return out


class _LongParts(_Parts):
    """``_Parts`` of the interval level from the units' values as runs, a piece of whole units at a
    time (``interval_alpha_ci``), without the units x graders matrix: each unit's values and their
    number, in the units' order. Only what the interval level reads is made: ``m``, ``moments``,
    ``n_values`` and, for grouping, ``coded``; the units are the pairable ones, in order, as the
    matrix's rows give them."""

    def __init__(self, pieces: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
        self.lengths: list[np.ndarray] = []  # per piece, each pairable unit's number of values
        self.values: list[np.ndarray] = []  # and their values, unit after unit
        for lengths, values in pieces:
            lengths = np.asarray(lengths, dtype=np.int64)
            values = np.asarray(values, dtype=float)
            if lengths.sum() != values.size:
                raise ValueError(f"a piece has {values.size} values for units of {int(lengths.sum())}")
            if np.isnan(values).any():
                raise ValueError("a piece's values hold NaN: give each unit's values only")
            pairable = lengths >= 2
            if not pairable.any():
                continue
            if not pairable.all():
                values = values[np.repeat(pairable, lengths)]
                lengths = lengths[pairable]
            self.lengths.append(lengths)
            self.values.append(values)
        self.m = np.concatenate(self.lengths).astype(float) if self.lengths else np.empty(0)

    def _codes(self, piece: int) -> np.ndarray:
        """Each value's unit in its piece, 0.."""
        lengths = self.lengths[piece]
        return np.repeat(np.arange(lengths.size), lengths)

    @cached_property
    def n_values(self) -> int:
        seen = [pd.unique(values) for values in self.values]  # 0.0 and -0.0 the same, as in ``_Parts``
        return np.unique(np.concatenate(seen)).size if seen else 0

    @cached_property
    def coded(self) -> tuple[np.ndarray, sparse.csr_matrix | np.ndarray, np.ndarray]:
        values = np.unique(np.concatenate(self.values)) if self.values else np.empty(0)
        units = np.concatenate([self._codes(i) + start for i, start in enumerate(self._starts())])
        codes = np.searchsorted(values, np.concatenate(self.values))
        shape = (self.n_units, values.size)
        if values.size <= DENSE_VALUES:
            counts = np.bincount(units * values.size + codes, minlength=shape[0] * shape[1]).reshape(shape)
            counts = counts.astype(float)
            return values, counts, counts.sum(axis=0)
        counts = sparse.csr_matrix((np.ones(units.size), (units, codes)), shape=shape)
        return values, counts, np.asarray(counts.sum(axis=0)).ravel()

    def _starts(self) -> list[int]:
        return np.concatenate([[0], np.cumsum([lengths.size for lengths in self.lengths])[:-1]]).astype(int).tolist()

    @cached_property
    def moments(self) -> np.ndarray:
        """``_Parts.moments`` from each unit's values: their sums by unit (``np.bincount``, in the
        order of the values), not the matrix's rows. Laid out a column after another (the
        transpose of a C array): the bootstrap reads each column of a block of units
        (``bootstrap_sums``), and its copy of the other layout's transpose took 0.14 s at 10^7."""
        count = sum(values.size for values in self.values)
        mean = sum(np.sum(values) for values in self.values) / count
        squares = sum(np.sum(np.square(values - mean)) for values in self.values)
        centre = _rounded(mean, np.sqrt(squares / count))
        columns = np.empty((4, self.n_units))
        for i, start in enumerate(self._starts()):
            lengths, x = self.lengths[i], self.values[i] - centre
            codes, rows = self._codes(i), slice(start, start + lengths.size)
            d, m, s1, s2 = (column[rows] for column in columns)
            np.copyto(m, lengths)
            s1[:] = np.bincount(codes, weights=x, minlength=lengths.size)
            s2[:] = np.bincount(codes, weights=np.square(x, out=x), minlength=lengths.size)
            d[:] = 2 * (m * s2 - s1**2) / (m - 1)
        return columns.T


def _centre(wide: np.ndarray, observed: np.ndarray) -> float:
    """What the interval moments are centred on: the values' mean rounded to a multiple of the
    power of two at or above four times their standard deviation (0 for FINE's 0-10 scores).

    Centring keeps ``n sum x^2 - (sum x)^2`` of the bootstrap's sums from cancelling when the values
    lie far from zero compared with their spread; within four standard deviations of the mean it
    loses at most a digit of the 16. Rounded, the centre stays where it is when a few values change,
    so the units that did not change keep their moments to the last bit, and a run can take their
    blocks of the bootstrap from the run before (``bootstrap.KeptSums``)."""
    count = observed.sum()
    mean = np.sum(wide, where=observed) / count
    squares = 0.0
    for start in range(0, wide.shape[0], BLOCK_UNITS):  # a block's deviations at a time, as ``moments``
        rows = slice(start, start + BLOCK_UNITS)
        deviations = wide[rows] - mean
        squares += np.sum(np.square(deviations, out=deviations), where=observed[rows])
    return _rounded(mean, np.sqrt(squares / count))


def _rounded(mean: float, spread: float) -> float:
    """``_centre`` of values of this ``mean`` and standard deviation (``spread``)."""
    if not spread > 0:
        return float(mean)
    step = 2.0 ** np.ceil(np.log2(4 * spread))
    return float(np.round(mean / step) * step)


def _ratio_delta(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    total = x + y
    return np.divide(x - y, total, out=np.zeros(np.broadcast_shapes(x.shape, y.shape)), where=total != 0) ** 2


def _interval_d(counts: sparse.csr_matrix, m: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(n, b) per-unit interval disagreement with value positions ``points`` (V, b)."""
    s1 = counts @ points
    s2 = counts @ points**2
    return 2 * (m[:, None] * s2 - s1**2) / (m[:, None] - 1)


def _ordinal_points(n_c: np.ndarray) -> np.ndarray:
    """Mid-rank positions t_c = sum_{g<c} n_g + n_c / 2, for (..., V) marginals."""
    return np.cumsum(n_c, axis=-1) - n_c / 2


def _ratio_d(wide: np.ndarray, m: np.ndarray) -> np.ndarray:
    """(n,) per-unit ratio disagreement from pairs of graders, a block of units at a time."""
    out = np.empty(wide.shape[0])
    block = max(1, 2_000_000 // max(1, wide.shape[1] ** 2))
    for start in range(0, wide.shape[0], block):
        chunk = np.nan_to_num(wide[start : start + block])
        mask = ~np.isnan(wide[start : start + block])
        pair = mask[:, :, None] & mask[:, None, :]
        delta = _ratio_delta(chunk[:, :, None], chunk[:, None, :])
        out[start : start + block] = (delta * pair).sum(axis=(1, 2))
    return out / (m - 1)


def _expected(level: str, n_c: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum_ck n_c n_k delta_ck for (b, V) marginals."""
    if level == "nominal":
        return n_c.sum(axis=-1) ** 2 - (n_c**2).sum(axis=-1)
    if level == "ratio":
        delta = _ratio_delta(values[:, None], values[None, :])
        return np.einsum("bi,ij,bj->b", n_c, delta, n_c)
    points = values if level == "interval" else _ordinal_points(n_c)
    points = points - (n_c * points).sum(axis=-1, keepdims=True) / n_c.sum(axis=-1, keepdims=True)
    return 2 * (n_c.sum(axis=-1) * (n_c * points**2).sum(axis=-1) - (n_c * points).sum(axis=-1) ** 2)


def _observed_per_unit(parts: _Parts, level: str) -> np.ndarray:
    """(n,) d_u for nominal and ratio (fixed metric, not interval: see ``_Parts.moments``)."""
    if level == "ratio":
        return _ratio_d(parts.wide, parts.m)
    counts = parts.coded[1]
    squares = counts.multiply(counts).sum(axis=1) if sparse.issparse(counts) else (counts**2).sum(axis=1)
    return (parts.m**2 - np.asarray(squares).ravel()) / (parts.m - 1)


def _alpha(observed: np.ndarray, expected: np.ndarray, n: np.ndarray) -> np.ndarray:
    return 1 - np.divide(
        (n - 1) * observed,
        expected,
        out=np.full(np.shape(expected), np.nan),
        where=expected > 1e-12 * np.maximum(1, np.abs(observed)),
    )


def _interval_replicate(parts: _Parts) -> Callable[[np.ndarray], np.ndarray]:
    moments = parts.moments

    def interval(weights: np.ndarray) -> np.ndarray:
        return _interval_of_sums(weights @ moments)

    return interval


def _interval_of_sums(sums: np.ndarray) -> np.ndarray:
    """Interval alpha of (b, 4) sums over units of the moments (d_u, m_u, S1_u, S2_u)."""
    d, n, s1, s2 = sums.T
    return _alpha(d, 2 * (n * s2 - s1**2), n)


def _replicate(parts: _Parts, level: str) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic of a block of bootstrap weights (b, n) -> (b,)."""
    if level == "interval":
        return _interval_replicate(parts)
    values, counts, _ = parts.coded
    counts_t = counts.T.tocsr() if sparse.issparse(counts) else counts.T
    if level == "ordinal":

        def ordinal(weights: np.ndarray) -> np.ndarray:
            n_c = (counts_t @ weights.T).T
            points = _ordinal_points(n_c)
            points -= (n_c * points).sum(axis=1, keepdims=True) / n_c.sum(axis=1, keepdims=True)
            d = _interval_d(counts, parts.m, points.T)
            return _alpha((weights * d.T).sum(axis=1), _expected(level, n_c, values), n_c.sum(axis=1))

        return ordinal
    d = _observed_per_unit(parts, level)

    def fixed(weights: np.ndarray) -> np.ndarray:
        n_c = (counts_t @ weights.T).T
        return _alpha(weights @ d, _expected(level, n_c, values), n_c.sum(axis=1))

    return fixed


def krippendorff_alpha(ratings: ArrayLike, level: Level = "interval") -> float:
    """Krippendorff's alpha of an ``(n_units, n_graders)`` matrix with NaN for missing values.

    Parameters
    ----------
    ratings : (n_units, n_graders) float array; any pattern of NaN. Units with fewer than two values
        are not pairable and are left out (Krippendorff 2011, step B).
    level : "nominal", "ordinal", "interval" or "ratio" -- the difference function delta.

    Returns
    -------
    float
        alpha; an :class:`Undefined` NaN with a ``reason`` when no unit is pairable or all pairable
        values are identical.
    """
    level = choice(level, dict(zip(LEVELS, LEVELS, strict=True)), name="level")
    return _value(_Parts(as_wide(ratings)), level)


def _value(parts: _Parts, level: str) -> float:
    """Alpha of the pairable units ``parts`` (the replicate that draws each unit once)."""
    if parts.n_units == 0:
        return Undefined(NO_PAIRS)
    value = _replicate(parts, level)(np.ones((1, parts.n_units)))[0]
    return Undefined(NO_VARIATION) if np.isnan(value) else float(value)


def krippendorff_alpha_ci(
    ratings: ArrayLike,
    level: Level = "interval",
    *,
    rng: np.random.Generator,
    n_boot: int = 1000,
    confidence: float = 0.95,
    kept: KeptSums | None = None,
) -> Estimate:
    """Krippendorff's alpha with a bootstrap percentile interval, resampling pairable units.

    Parameters are those of :func:`krippendorff_alpha` plus ``rng``, ``n_boot`` and ``confidence``,
    and ``kept``: the products of blocks of units kept by a run before, for the interval level over
    many units (``bootstrap.KeptSums``).

    Returns
    -------
    Estimate(value, ci_low, ci_high, reason)
    """
    level = choice(level, dict(zip(LEVELS, LEVELS, strict=True)), name="level")
    parts = _Parts(as_wide(ratings))  # one set of per-unit parts for the value and its replicates
    return _alpha_ci(parts, level, rng=rng, n_boot=n_boot, confidence=confidence, kept=kept)


def interval_alpha_ci(
    pieces: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    rng: np.random.Generator,
    n_boot: int = 1000,
    confidence: float = 0.95,
    kept: KeptSums | None = None,
) -> Estimate:
    """Interval alpha with its interval, as :func:`krippendorff_alpha_ci` gives it, from the units'
    values as runs instead of a units x graders matrix (which a crowd's thousands of graders make
    as wide as they are many).

    Parameters
    ----------
    pieces : ``(lengths, values)`` per piece of whole units, the pieces in the units' order:
        ``lengths[i]`` values of the piece's ``i``-th unit, ``values`` theirs (no NaN), unit after
        unit. A unit's values are summed in their order here, a row's in the graders' there, so
        the two agree to rounding, not to the bit.
    """
    return _alpha_ci(_LongParts(pieces), "interval", rng=rng, n_boot=n_boot, confidence=confidence, kept=kept)


def _alpha_ci(
    parts: _Parts,
    level: str,
    *,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
    kept: KeptSums | None,
) -> Estimate:
    value = _value(parts, level)
    if np.isnan(value):
        return _estimate(value, np.array([np.nan]), confidence)
    groups, sizes = _groups(parts, level)
    if level == "interval":  # a function of sums over units: drawn and summed a block at a time
        replicates = bootstrap_sums(sizes, groups.moments, _interval_of_sums, rng=rng, n_boot=n_boot, kept=kept)
    else:
        replicates = bootstrap_replicates(sizes, _replicate(groups, level), rng=rng, n_boot=n_boot)
    return _estimate(value, replicates, confidence)


def _groups(parts: _Parts, level: str) -> tuple[_Parts, np.ndarray]:
    """What the bootstrap resamples, and how many units each stands for: ``parts`` itself, a unit
    each, or -- when at least eight units on average share each row of value counts -- one row per
    distinct count row (``shapes.distinct_rows``), as ``fleiss_kappa_ci`` groups units.

    Units with the same value counts add the same to every replicate, so a resample's group counts
    (multinomial, ``bootstrap.resample_weights``) give its statistic without drawing each unit: at
    10^7 judgments drawing 2,000,000 units per replicate was 18 of the agreement's 56 s. A group's
    interval moments are its units' mean (they differ, if at all, in the last bit: the sums' order).
    The ratio level's per-unit disagreement is not a function of the counts' row alone in floating
    point and is not grouped, nor are units with more than ``DENSE_VALUES`` distinct values."""
    ones = np.ones(parts.n_units, dtype=np.int64)
    if level == "ratio":
        return parts, ones
    if parts.n_values > DENSE_VALUES:  # the counts are sparse (``coded``), not grouped: not built here
        return parts, ones
    values, counts, marginals = parts.coded
    distinct, inverse, sizes = distinct_rows(counts)
    if distinct.shape[0] * 8 > parts.n_units:
        return parts, ones
    groups = object.__new__(_Parts)  # no rows of values: what the replicates read, set directly
    groups.m = distinct.sum(axis=1)
    groups.coded = (values, distinct, marginals)
    if level == "interval":
        per_unit = parts.moments
        groups.moments = np.column_stack(
            [np.bincount(inverse, weights=per_unit[:, j], minlength=sizes.size) / sizes for j in range(4)]
        )
    return groups, sizes.astype(np.int64)
