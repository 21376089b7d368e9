"""FreSPA — frequent sequential pattern agreement, computed exactly without enumerating patterns.

A *pattern* is a sequence of at least two distinct items; it is contained in an ordering when the
items' positions increase. Given golds ``O_1..O_n`` (permutations of the same k items):

- ``sup(p)`` is the *number* of golds containing p; p is frequent when ``sup(p) / n >= min_sup``;
- ``P`` holds the frequent patterns with ``min_len <= len(p) <= max_len``;
- ``weight(p) = (1 + w_len (len - 1)) (1 + w_sup (sup - 1))``;
- ``S(O) = sum_{p in P, p in O} weight(p) / sum_{p in P} weight(p)``, NaN when P is empty.

Patterns are mined *from the golds*, so only patterns contained in at least one gold exist: with
``min_sup = 0`` the threshold is one gold, not zero (a pattern no grader produced is not "frequent").

The method (docs/design.md §5.4). The patterns contained in every gold of a subset T are exactly the
chains of the partial order "precedes in all of T"; their number by length, ``c_T(m)``, is a DP over
the precedence matrix A_T (``f_m = f_{m-1} A_T``, k² per step). With ``G(t, m) = sum_{|T|=t} c_T(m)
= sum_p C(sup(p), t)``, the count of patterns of length m and exact support s follows by
inclusion–exclusion, ``E(s, m) = sum_{t>=s} (-1)^(t-s) C(t, s) G(t, m)``, over subsets of size
``t >= s_min`` only. Intersecting the target's precedence into A_T gives the numerator's counts.

Exactness. Counts pass 2^63 once k is about 60. The DP runs in float64 BLAS matrix products modulo
pairwise-coprime moduli below ``2^53 / k`` (every partial sum stays an exactly represented
integer); the per-subset residues are summed in split int64 and the exact ``G(t, m)`` are rebuilt
by the Chinese remainder theorem as Python integers, enough moduli being used to exceed the bound
``C(n, t) C(k, m)``. The alternating sums and the weighted ratio are then done in Python integers
(weights enter as the exact rationals of their float values), and the final division is correctly
rounded.

Cost: ``O(#subsets * k² * max_len)`` with ``#subsets = sum_{t >= s_min} C(n, t)``; identical
subset relations (common when graders agree) are computed once.

References
----------
Kim, J. Y., Zhai, C. & Han, J. (2010). Aggregation of multiple judgments for evaluating ordered
lists. ECIR 2010, LNCS 5993, 166–178.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

__all__ = [
    "FrespaParams",
    "as_orderings",
    "as_target",
    "frespa",
    "frespa_scores",
    "frespa_support_counts",
]

_CHUNK_BYTES = 32 * 2**20
_DP_CHUNK_BYTES = 2 * 2**20
_SPLIT = 26  # residues < 2^53 are summed as two int64 halves of at most 27 bits


# ----------------------------------------------------------------------------- input validation
def as_orderings(orderings: ArrayLike, *, name: str = "orderings") -> tuple[np.ndarray, np.ndarray]:
    """Validate an ``(n, k)`` array of orderings (row = one ordering, first item = first place).

    Returns ``(items, positions)``: the sorted ``(k,)`` item labels and the ``(n, k)`` int array
    with ``positions[g, i]`` = place (0-based) of ``items[i]`` in ordering g.

    Raises
    ------
    ValueError
        Not 2-D, fewer than 2 items, a repeated item, or a row that is not a permutation of row 0.
    """
    arr = np.asarray(orderings)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 2:
        raise ValueError(f"`{name}` must be a 2-D (n_orderings, k) array with k >= 2 items, got shape {arr.shape}")
    try:
        srt = np.sort(arr, axis=1)
    except TypeError as exc:
        raise ValueError(f"`{name}` holds items that cannot be compared: {exc}") from None
    dup = np.argwhere(srt[:, 1:] == srt[:, :-1])
    if len(dup):
        row, col = dup[0]
        raise ValueError(f"`{name}` row {row} repeats item {srt[row, col].item()!r}")
    bad = np.flatnonzero((srt != srt[0]).any(axis=1))
    if len(bad):
        row = bad[0]
        missing = sorted(set(srt[0].tolist()) - set(srt[row].tolist()))
        extra = sorted(set(srt[row].tolist()) - set(srt[0].tolist()))
        raise ValueError(
            f"`{name}` row {row} is not a permutation of the items of row 0: missing {missing}, unexpected {extra}"
        )
    items = srt[0]
    idx = np.searchsorted(items, arr)
    pos = np.empty_like(idx)
    np.put_along_axis(pos, idx, np.broadcast_to(np.arange(arr.shape[1]), arr.shape), axis=1)
    return items, pos


def as_target(target: ArrayLike, items: np.ndarray, *, name: str = "target") -> np.ndarray:
    """Validate one ordering of ``items``; return its ``(k,)`` positions (see :func:`as_orderings`)."""
    arr = np.asarray(target)
    k = len(items)
    if arr.ndim != 1 or len(arr) != k:
        raise ValueError(f"`{name}` must be a 1-D ordering of the {k} gold items, got shape {arr.shape}")
    try:
        same = bool(np.array_equal(np.sort(arr), items))
    except TypeError:
        same = False
    if not same:
        raise ValueError(f"`{name}` is not a permutation of the gold items {items.tolist()!r}: {arr.tolist()!r}")
    pos = np.empty(k, dtype=np.int64)
    pos[np.searchsorted(items, arr)] = np.arange(k)
    return pos


@dataclass(frozen=True)
class FrespaParams:
    """FreSPA's five parameters (defaults of docs/design.md §5.4); ``max_len=None`` means k.

    A ``max_len`` above k is allowed and acts as k. Validated on construction.
    """

    min_sup: float = 0.75
    min_len: int = 2
    max_len: int | None = None
    w_len: float = 1.0
    w_sup: float = 1.0

    def __post_init__(self) -> None:
        if not (isinstance(self.min_sup, int | float) and 0.0 <= self.min_sup <= 1.0):
            raise ValueError(f"`min_sup` must lie in [0, 1], got {self.min_sup!r}")
        if not isinstance(self.min_len, int | np.integer) or self.min_len < 2:
            raise ValueError(f"`min_len` must be an integer >= 2 (patterns have 2+ items), got {self.min_len!r}")
        if self.max_len is not None and (not isinstance(self.max_len, int | np.integer) or self.max_len < self.min_len):
            raise ValueError(f"`max_len` must be an integer >= min_len ({self.min_len}), got {self.max_len!r}")
        for name in ("w_len", "w_sup"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"`{name}` must be a finite number >= 0, got {value!r}")

    def length_range(self, k: int) -> tuple[int, int]:
        """``(min_len, max_len)`` with ``max_len`` resolved against k items."""
        return self.min_len, min(k, self.max_len if self.max_len is not None else k)

    def support_threshold(self, n: int) -> int:
        """Smallest support ``s >= 1`` with ``s / n >= min_sup``; ``n + 1`` when there is none."""
        return next((s for s in range(1, n + 1) if s / n >= self.min_sup), n + 1)


# ----------------------------------------------------------------------------- the counting engine
class Problem(NamedTuple):
    """One count request: the rows of the reference golds, and target relations to intersect in."""

    golds: tuple[int, ...]
    targets: np.ndarray  # (q, k, k) bool precedence of the targets; q may be 0


def precedence(positions: np.ndarray) -> np.ndarray:
    """``(..., k)`` positions -> ``(..., k, k)`` bool, ``[a, b]`` true when a precedes b."""
    return positions[..., :, None] < positions[..., None, :]


def support_counts(prec: np.ndarray, problems: list[Problem], s_min: int, max_len: int) -> list[np.ndarray]:
    """Exact ``E[j, s, m]`` (object array ``(1 + q, len(golds) + 1, max_len + 1)``) for each problem.

    ``j = 0`` counts all frequent patterns (the denominator), ``j >= 1`` those also contained in
    target ``j - 1``. ``prec`` is the ``(n_rows, k, k)`` precedence stack; cells with ``s < s_min``
    or ``m < 2`` are 0.
    """
    k = prec.shape[1]
    packed, groups, shapes = [], [], []
    for prob in problems:
        n_p, base = len(prob.golds), sum(math.prod(shape) for shape in shapes)
        shapes.append((1 + len(prob.targets), n_p + 1))
        disagree = (~prec[list(prob.golds)]).reshape(n_p, k * k).astype(np.float32)
        targets = prob.targets.reshape(len(prob.targets), k * k)
        for mask, size in _subset_masks(n_p, s_min, k):
            rel = (mask @ disagree) == 0  # (C, k*k): pairs ordered alike in every gold of T
            packed.append(np.packbits(rel, axis=1))
            groups.append(base + size)
            for j, target in enumerate(targets, start=1):
                packed.append(np.packbits(rel & target, axis=1))
                groups.append(base + j * (n_p + 1) + size)
    n_max = max(len(p.golds) for p in problems)
    totals = _group_totals(packed, groups, sum(math.prod(s) for s in shapes), k, max_len, n_max)
    out, offset = [], 0
    for shape in shapes:
        g = totals[offset : offset + math.prod(shape)].reshape(*shape, max_len + 1)
        offset += math.prod(shape)
        out.append(np.stack([_inclusion_exclusion(block, s_min) for block in g]))
    return out


def _subset_masks(n: int, s_min: int, k: int):
    """Yield ``(mask (C, n) float32, size (C,))`` chunks covering the subsets of size >= s_min."""
    per_chunk = max(1, _CHUNK_BYTES // (4 * k * k))
    combos = itertools.chain.from_iterable(itertools.combinations(range(n), t) for t in range(max(s_min, 1), n + 1))
    while chunk := list(itertools.islice(combos, per_chunk)):
        size = np.fromiter(map(len, chunk), np.int64, len(chunk))
        mask = np.zeros((len(chunk), n), dtype=np.float32)
        mask[
            np.repeat(np.arange(len(chunk)), size),
            np.fromiter(itertools.chain.from_iterable(chunk), np.int64, int(size.sum())),
        ] = 1
        yield mask, size


def _group_totals(packed: list, groups: list, n_groups: int, k: int, max_len: int, n: int) -> np.ndarray:
    """``(n_groups, max_len+1)`` object array: exact sums of chain counts over each group's subsets."""
    # Below 2^53 every chain count (<= C(k, m)) is exact in float64 and needs no modulus at all.
    exact = math.comb(k, k // 2) < 2**53
    moduli = [] if exact else _moduli(k, bound=math.comb(n, n // 2) * math.comb(k, k // 2))
    if not packed:
        return np.zeros((n_groups, max_len + 1), dtype=object)
    rows = np.concatenate(packed)
    first: dict[bytes, int] = {}  # exact dedup of relations by their bytes (a sort of rows is slower)
    inv = np.fromiter((first.setdefault(r.tobytes(), i) for i, r in enumerate(rows)), np.int64, len(rows))
    keep, inv = np.unique(inv, return_inverse=True)
    uniq = rows[keep]
    gid = np.concatenate(groups)
    mult = sp.csr_matrix((np.ones(len(gid), dtype=np.int64), (gid, inv.ravel())), shape=(n_groups, len(uniq)))
    res = _chain_residues(uniq, k, max_len, moduli).reshape(len(uniq), -1)
    lo = (mult @ (res & ((1 << _SPLIT) - 1))).astype(object)
    hi = (mult @ (res >> _SPLIT)).astype(object)
    total = (hi * (1 << _SPLIT) + lo).reshape(n_groups, max_len + 1, max(1, len(moduli)))
    return total[..., 0] if exact else _crt(total, moduli)


def _moduli(k: int, *, bound: int) -> list[int]:
    """Pairwise-coprime moduli below ``2^53 / k`` whose product exceeds ``bound``."""
    moduli, product, m = [], 1, (2**53 - 1) // k
    while product <= bound:
        if math.gcd(m, product) == 1:
            moduli.append(m)
            product *= m
        m -= 1
    return moduli


def _chain_residues(uniq: np.ndarray, k: int, max_len: int, moduli: list[int]) -> np.ndarray:
    """``(U, max_len+1, r)`` int64: chain counts by length of each packed relation, mod each modulus.

    No moduli: the counts themselves (the caller guarantees they stay below 2^53), ``r = 1``.
    """
    mods = np.asarray(moduli, dtype=np.float64)[:, None]
    out = np.zeros((len(uniq), max_len + 1, max(1, len(moduli))), dtype=np.int64)
    per_chunk = max(1, _DP_CHUNK_BYTES // (8 * k * k))  # a chunk's relations stay in cache
    for start in range(0, len(uniq), per_chunk):
        bits = np.unpackbits(uniq[start : start + per_chunk], axis=1, count=k * k)
        rel = bits.reshape(-1, k, k).astype(np.float64)
        f = np.ones((len(rel), out.shape[2], k))  # f[u, j, b]: chains ending at b, mod moduli[j]
        for m in range(2, max_len + 1):
            f = np.einsum("ujk,ukl->ujl", f, rel)  # sums of k terms < modulus stay below 2^53
            if len(moduli):
                f = np.fmod(f, mods)
            total = f.sum(axis=2) if not len(moduli) else np.fmod(f.sum(axis=2), mods[:, 0])
            if not total.any():
                break
            out[start : start + len(rel), m] = total.astype(np.int64)
    return out


def _crt(residue_sums: np.ndarray, moduli: list[int]) -> np.ndarray:
    """Rebuild exact non-negative integers from ``(..., r)`` object sums congruent mod each modulus."""
    product = math.prod(moduli)
    result = np.zeros(residue_sums.shape[:-1], dtype=object)
    for j, m in enumerate(moduli):
        rest = product // m
        result = result + residue_sums[..., j] * (rest * pow(rest, -1, m))
    return result % product


def _inclusion_exclusion(g: np.ndarray, s_min: int) -> np.ndarray:
    """``E[s] = sum_{t>=s} (-1)^(t-s) C(t, s) G[t]`` for ``s >= s_min``, exact (object arrays)."""
    return _alternating_binomials(g.shape[0] - 1, s_min) @ g


@functools.lru_cache(maxsize=256)
def _alternating_binomials(n: int, s_min: int) -> np.ndarray:
    coef = np.zeros((n + 1, n + 1), dtype=object)
    for s in range(max(s_min, 1), n + 1):
        for t in range(s, n + 1):
            coef[s, t] = (-1) ** (t - s) * math.comb(t, s)
    coef.flags.writeable = False
    return coef


def weighted_ratio(e_num: np.ndarray, e_den: np.ndarray, params: FrespaParams, n: int, k: int) -> float:
    """``S = sum E_num w / sum E_den w`` over the cells of P, exact until the final rounding."""
    s_min = params.support_threshold(n)
    lo, hi = params.length_range(k)
    if s_min > n or lo > hi:
        return math.nan
    a, b = float(params.w_len).as_integer_ratio()
    c, d = float(params.w_sup).as_integer_ratio()
    w_m = np.array([b + a * (m - 1) for m in range(lo, hi + 1)], dtype=object)
    w_s = np.array([d + c * (s - 1) for s in range(s_min, n + 1)], dtype=object)
    den = int(w_s @ e_den[s_min : n + 1, lo : hi + 1] @ w_m)
    if den == 0:
        return math.nan
    return int(w_s @ e_num[s_min : n + 1, lo : hi + 1] @ w_m) / den


# ----------------------------------------------------------------------------- public entry points
def frespa_scores(golds: ArrayLike, targets: ArrayLike, params: FrespaParams | None = None) -> np.ndarray:
    """FreSPA scores of several target orderings against the same golds.

    Parameters
    ----------
    golds : array_like, shape (n, k)
        Gold orderings, one per row (first = best), permutations of the same k items.
    targets : array_like, shape (q, k)
        Orderings to score, permutations of the same items.
    params : FrespaParams, optional
        ``min_sup, min_len, max_len, w_len, w_sup``; the defaults of docs/design.md §5.4 when omitted.

    Returns
    -------
    ndarray, shape (q,)
        Scores in [0, 1]; NaN when no pattern is frequent.
    """
    params = params or FrespaParams()
    items, gpos = as_orderings(golds, name="golds")
    tarr = np.asarray(targets)
    if tarr.ndim != 2:
        raise ValueError(f"`targets` must be a 2-D (q, k) array, got shape {tarr.shape}")
    tpos = np.stack([as_target(t, items, name=f"targets[{i}]") for i, t in enumerate(tarr)])
    return _scores(gpos, tpos, params)


def _scores(gpos: np.ndarray, tpos: np.ndarray, params: FrespaParams) -> np.ndarray:
    n, k = gpos.shape
    s_min = params.support_threshold(n)
    max_len = params.length_range(k)[1]
    if s_min > n or params.min_len > max_len:
        return np.full(len(tpos), math.nan)
    counts = support_counts(precedence(gpos), [Problem(tuple(range(n)), precedence(tpos))], s_min, max_len)[0]
    return np.array([weighted_ratio(e, counts[0], params, n, k) for e in counts[1:]])


def frespa(
    golds: ArrayLike,
    target: ArrayLike,
    *,
    min_sup: float = 0.75,
    min_len: int = 2,
    max_len: int | None = None,
    w_len: float = 1.0,
    w_sup: float = 1.0,
) -> float:
    """FreSPA score of one ordering against gold orderings (Kim, Zhai & Han 2010; docs/design.md §5.4).

    Parameters
    ----------
    golds : array_like, shape (n, k)
        Gold orderings, one per row (first = best), permutations of the same k items.
    target : array_like, shape (k,)
        The ordering to score.
    min_sup : float in [0, 1]
        A pattern is frequent when (number of golds containing it) / n >= min_sup, counting only
        patterns contained in at least one gold.
    min_len, max_len : int
        Pattern lengths considered (``2 <= min_len <= max_len``; ``max_len=None`` means k).
    w_len, w_sup : float >= 0
        ``weight(p) = (1 + w_len (len - 1)) (1 + w_sup (sup - 1))``.

    Returns
    -------
    float
        In [0, 1]; NaN when no pattern is frequent.

    Examples
    --------
    >>> frespa([["a", "b", "c"], ["a", "c", "b"]], ["a", "b", "c"], min_sup=1.0)
    1.0
    """
    params = FrespaParams(min_sup, min_len, max_len, w_len, w_sup)
    items, gpos = as_orderings(golds, name="golds")
    return float(_scores(gpos, as_target(target, items)[None, :], params)[0])


def frespa_support_counts(
    golds: ArrayLike, target: ArrayLike | None = None, *, min_sup: float = 0.0, max_len: int | None = None
) -> np.ndarray:
    """Exact counts of frequent patterns by support and length.

    Returns
    -------
    ndarray of Python int (dtype object), shape (n + 1, max_len + 1)
        ``E[s, m]`` = number of patterns of length m contained in exactly s golds (and in ``target``
        when given), for ``s >= max(1, ceil(min_sup n))`` and ``m >= 2``; other cells are 0.
    """
    params = FrespaParams(min_sup=min_sup, max_len=max_len)
    items, gpos = as_orderings(golds, name="golds")
    n, k = gpos.shape
    targets = np.zeros((0, k, k), dtype=bool) if target is None else precedence(as_target(target, items))[None]
    cap = params.length_range(k)[1]
    return support_counts(precedence(gpos), [Problem(tuple(range(n)), targets)], params.support_threshold(n), cap)[0][
        -1
    ]


def leave_one_out_terms(gpos: np.ndarray, extra: np.ndarray, grid: list[FrespaParams]) -> np.ndarray:
    """``S(O_i; refs) - S(reverse(O_i); refs)`` for each gold i and each parameter set.

    ``refs`` are the other golds plus the ``(e, k)`` ``extra`` positions (noise orderings). The
    exact counts are computed once, at the lowest support threshold and longest length of ``grid``,
    and every parameter set is scored from them. Returns shape ``(len(grid), n)``, NaN where P is empty.
    """
    n, k = gpos.shape
    n_ref = n - 1 + len(extra)
    s_min = min(p.support_threshold(n_ref) for p in grid)
    max_len = max(p.length_range(k)[1] for p in grid)
    out = np.full((len(grid), n), math.nan)
    if s_min > n_ref or max_len < 2:
        return out
    stack = np.concatenate([gpos, extra]) if len(extra) else gpos
    problems = [
        Problem(tuple(j for j in range(len(stack)) if j != i), precedence(np.stack([gpos[i], k - 1 - gpos[i]])))
        for i in range(n)
    ]
    for i, counts in enumerate(support_counts(precedence(stack), problems, s_min, max_len)):
        for g, params in enumerate(grid):
            out[g, i] = weighted_ratio(counts[1], counts[0], params, n_ref, k) - weighted_ratio(
                counts[2], counts[0], params, n_ref, k
            )
    return out
