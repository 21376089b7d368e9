"""FreSPA by plain enumeration of patterns: the test oracle and the benchmark baseline.

Every subsequence of every gold (of the allowed lengths) is counted; exponential in k, so only for
small k. Deliberately independent of :mod:`analysis.metrics.frespa`: no precedence matrices, no
inclusion–exclusion, its own support threshold (``sup / n >= min_sup`` and ``sup >= 1`` because
only patterns found in a gold are counted).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any


def support_counts_enumerate(
    golds: Sequence[Sequence[Any]],
    target: Sequence[Any] | None = None,
    *,
    min_sup: float = 0.0,
    min_len: int = 2,
    max_len: int | None = None,
) -> Counter[tuple[int, int]]:
    """``{(support, length): number of frequent patterns}`` (contained in ``target`` when given)."""
    n, k = len(golds), len(golds[0])
    top = k if max_len is None else min(max_len, k)
    support: Counter[tuple[Any, ...]] = Counter()
    for gold in golds:
        for m in range(min_len, top + 1):
            support.update(itertools.combinations(gold, m))
    place = None if target is None else {item: i for i, item in enumerate(target)}
    counts: Counter[tuple[int, int]] = Counter()
    for pattern, sup in support.items():
        if sup / n < min_sup:
            continue
        if place is None or all(place[a] < place[b] for a, b in itertools.pairwise(pattern)):
            counts[sup, len(pattern)] += 1
    return counts


def frespa_enumerate(
    golds: Sequence[Sequence[Any]],
    target: Sequence[Any],
    *,
    min_sup: float = 0.75,
    min_len: int = 2,
    max_len: int | None = None,
    w_len: float = 1.0,
    w_sup: float = 1.0,
) -> float:
    """FreSPA by enumeration, with exact rational weights; NaN when no pattern is frequent."""
    w_l, w_s = Fraction(w_len), Fraction(w_sup)

    def total(counts: Counter[tuple[int, int]]) -> Fraction:
        return sum((c * (1 + w_l * (m - 1)) * (1 + w_s * (s - 1)) for (s, m), c in counts.items()), Fraction(0))

    options = {"min_sup": min_sup, "min_len": min_len, "max_len": max_len}
    den = total(support_counts_enumerate(golds, None, **options))
    if den == 0:
        return math.nan
    return float(total(support_counts_enumerate(golds, target, **options)) / den)
