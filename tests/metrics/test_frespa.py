"""FreSPA: the exact method against the enumeration oracle, hand-checked cases, large k, errors."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from analysis.metrics._frespa_enum import frespa_enumerate, support_counts_enumerate
from analysis.metrics.frespa import FrespaParams, frespa, frespa_scores, frespa_support_counts


def _random_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict]:
    k, n = int(rng.integers(2, 8)), int(rng.integers(1, 8))
    base = rng.permutation(k)
    golds = np.array([base if rng.random() < 0.5 else rng.permutation(k) for _ in range(n)])
    min_len = int(rng.integers(2, 5))
    params = {
        "min_sup": float(rng.choice([0.0, 1.0, 0.5, 0.75, round(float(rng.random()), 3)])),
        "min_len": min_len,
        "max_len": None if rng.random() < 0.4 else int(rng.integers(min_len, min_len + 4)),
        "w_len": float(rng.choice([0.0, 1.0, 2.5, 0.1])),
        "w_sup": float(rng.choice([0.0, 1.0, 0.3])),
    }
    return golds, rng.permutation(k), params


@pytest.mark.parametrize("seed", range(30))
def test_it_equals_the_enumeration_oracle_on_random_small_cases(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(12):  # 360 cases in all
        golds, target, params = _random_case(rng)
        exact = frespa(golds, target, **params)
        oracle = frespa_enumerate(golds.tolist(), target.tolist(), **params)
        assert (math.isnan(exact) and math.isnan(oracle)) or exact == pytest.approx(oracle, abs=1e-12), params


@pytest.mark.parametrize("seed", range(5))
def test_its_counts_by_support_and_length_equal_the_oracle_exactly(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    golds = np.array([rng.permutation(6) for _ in range(5)])
    target = rng.permutation(6)
    for tgt in (None, target):
        counts = frespa_support_counts(golds, tgt, min_sup=0.0)
        oracle = support_counts_enumerate(golds.tolist(), None if tgt is None else tgt.tolist())
        assert {(s, m): c for (s, m), c in np.ndenumerate(counts) if c} == dict(oracle)


def test_it_scores_a_hand_checked_example() -> None:
    golds = [list("ABC"), list("ACB")]
    # sup 2: AB, AC (weight 2*2); sup 1: BC, CB (2*1), ABC, ACB (3*1): total 18.
    assert frespa(golds, list("ABC"), min_sup=0.5) == pytest.approx(13 / 18)
    # min_sup 1 keeps AB and AC only.
    assert frespa(golds, list("ABC"), min_sup=1.0) == 1.0
    assert frespa(golds, list("BAC"), min_sup=1.0) == 0.5
    assert frespa(golds, list("ABC"), min_sup=0.5, w_len=0, w_sup=0) == pytest.approx(4 / 6)


def test_with_min_sup_zero_only_patterns_found_in_a_gold_count() -> None:
    # BA occurs in no gold, so it is not a pattern at all: the reverse scores 0, not 1/2.
    assert frespa([["A", "B"]], ["B", "A"], min_sup=0.0) == 0.0


def test_it_is_nan_when_no_pattern_is_frequent() -> None:
    assert math.isnan(frespa([["A", "B"], ["B", "A"]], ["A", "B"], min_sup=1.0))
    assert math.isnan(frespa([list("ABC")], list("ABC"), min_len=4))


def test_a_gold_scores_higher_than_its_reverse_and_scores_lie_in_0_1() -> None:
    rng = np.random.default_rng(7)
    base = np.arange(9)
    golds = np.array([np.roll(base, 0) if i % 3 else rng.permutation(9) for i in range(6)])
    golds[1:4] = base
    scores = frespa_scores(golds, np.stack([base, base[::-1], rng.permutation(9)]), FrespaParams(min_sup=0.5))
    assert scores[0] > scores[1]
    assert np.all((scores >= 0) & (scores <= 1))


def _closed_form(k: int, n: int, contained: list[int], w_len: Fraction, w_sup: Fraction) -> float:
    w = [(1 + w_len * (m - 1)) * (1 + w_sup * (n - 1)) for m in range(k + 1)]
    num = sum(contained[m] * w[m] for m in range(2, k + 1))
    den = sum(math.comb(k, m) * w[m] for m in range(2, k + 1))
    return float(num / den)


def test_large_k_counts_pass_int64_and_stay_exact() -> None:
    k, n = 72, 4
    assert math.comb(k, k // 2) > 2**63
    golds = np.tile(np.arange(k), (n, 1))
    counts = frespa_support_counts(golds, min_sup=0.0)  # alternating sums over every subset
    assert [counts[n, m] for m in range(2, k + 1)] == [math.comb(k, m) for m in range(2, k + 1)]
    assert not counts[:n].any()


@pytest.mark.parametrize("k", [55, 56, 57, 70])  # float64 counts exact up to k = 56, then moduli + CRT
def test_large_k_two_golds_differing_in_one_swap_match_the_closed_form(k: int) -> None:
    base = np.arange(k)
    swapped = base.copy()
    swapped[[30, 31]] = swapped[[31, 30]]
    counts = frespa_support_counts(np.stack([base, swapped]), min_sup=0.0)
    for m in range(2, k + 1):  # chains of the common order avoid holding both swapped items
        both = math.comb(k, m) - math.comb(k - 2, m - 2)
        assert (counts[2, m], counts[1, m]) == (both, 2 * math.comb(k - 2, m - 2))


def test_large_k_scores_match_the_closed_form() -> None:
    k, n = 80, 3
    base = np.arange(k)
    target = base.copy()
    target[[10, 11]] = target[[11, 10]]
    golds = np.tile(base, (n, 1))
    kept = [math.comb(k, m) - (math.comb(k - 2, m - 2) if m >= 2 else 0) for m in range(k + 1)]
    score = frespa(golds, target, w_len=0.5, w_sup=2.0)
    assert score == pytest.approx(_closed_form(k, n, kept, Fraction(0.5), Fraction(2)), rel=1e-12)
    assert frespa(golds, base[::-1]) == 0.0
    assert frespa(golds, base) == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_sup": 1.5}, "min_sup"),
        ({"min_sup": -0.1}, "min_sup"),
        ({"min_len": 1}, "min_len"),
        ({"min_len": 4, "max_len": 3}, "max_len"),
        ({"w_len": -1.0}, "w_len"),
        ({"w_sup": math.inf}, "w_sup"),
    ],
)
def test_it_rejects_bad_parameters(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        frespa([list("ABC")], list("ABC"), **options)


def test_it_rejects_golds_that_are_not_permutations_of_the_same_items() -> None:
    with pytest.raises(ValueError, match=r"`golds` row 1 repeats item 'B'"):
        frespa([list("ABC"), list("BBC")], list("ABC"))
    with pytest.raises(ValueError, match=r"`golds` row 1 is not a permutation.*missing \['C'\]"):
        frespa([list("ABC"), list("ABD")], list("ABC"))
    with pytest.raises(ValueError, match="`target` is not a permutation"):
        frespa([list("ABC")], list("ABD"))
    with pytest.raises(ValueError, match="`golds` must be a 2-D"):
        frespa(list("ABC"), list("ABC"))
