"""Orderings: correlations, AC/WCA/RBA, Kendall's W, ED, noise robustness, grid search."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.metrics.frespa import FrespaParams
from analysis.metrics.orderings import (
    METHODS,
    ac_score,
    correlation_matrix,
    evaluation_discriminativeness,
    frespa_grid_search,
    kendall_tau,
    kendall_w,
    mean_pairwise_tau,
    noise_robustness,
    rba_consensus,
    rba_score,
    score_orderings,
    spearman_rho,
    wca_score,
    wca_weights,
)

ABCD, ABDC, BACD, ACDB = list("ABCD"), list("ABDC"), list("BACD"), list("ACDB")


def _noisy_copies(rng: np.random.Generator, k: int, n: int, swaps: int) -> np.ndarray:
    out = np.tile(np.arange(k), (n, 1))
    for row in out:
        for i in rng.integers(0, k - 1, swaps):
            row[[i, i + 1]] = row[[i + 1, i]]
    return out


def test_tau_and_spearman_of_the_worked_example() -> None:
    assert kendall_tau(ABCD, ACDB) == pytest.approx(1 / 3)  # 2 discordant pairs of 6
    assert spearman_rho(ABCD, ACDB) == pytest.approx(0.4)  # sum d^2 = 6


def test_tau_and_spearman_agree_with_scipy() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.permutation(12), rng.permutation(12)
        ra, rb = np.argsort(a), np.argsort(b)  # each item's place
        assert kendall_tau(a, b) == pytest.approx(stats.kendalltau(ra, rb).statistic)
        assert spearman_rho(a, b) == pytest.approx(stats.spearmanr(ra, rb).statistic)


def test_correlation_matrix_is_symmetric_with_unit_diagonal() -> None:
    c = correlation_matrix([ABCD, ACDB, BACD], corr="sp")
    np.testing.assert_allclose(c, c.T)
    np.testing.assert_allclose(np.diag(c), 1.0)
    assert c[0, 1] == pytest.approx(0.4)


def test_kendall_w_is_1_for_identical_orderings_and_0_for_a_pair_of_reverses() -> None:
    assert kendall_w([ABCD, ABCD, ABCD]) == pytest.approx(1.0)
    assert kendall_w([ABCD, ABCD[::-1]]) == pytest.approx(0.0)
    # Ranks A(1,1) B(2,3) C(3,4) D(4,2): sums 2,5,7,6, mean 5 -> S = 14; W = 12*14 / (4*60).
    assert kendall_w([ABCD, ACDB]) == pytest.approx(0.7)
    assert mean_pairwise_tau([ABCD, ACDB]) == pytest.approx(1 / 3)


def test_ac_is_the_mean_correlation() -> None:
    assert ac_score(ABCD, [ABCD, ACDB]) == pytest.approx((1 + 1 / 3) / 2)
    assert ac_score(ABCD, [ABCD, ACDB], corr="sp") == pytest.approx((1 + 0.4) / 2)


def test_wca_weights_and_score_by_hand() -> None:
    # tau(ABCD, ABDC) = tau(ABCD, BACD) = 2/3, tau(ABDC, BACD) = 1/3.
    np.testing.assert_allclose(wca_weights([ABCD, ABDC, BACD]), [2 / 3, 1 / 2, 1 / 2])
    assert wca_score(ABCD, [ABCD, ABDC, BACD]) == pytest.approx(0.8)


def test_wca_clips_negative_weights_and_falls_back_to_ac_when_all_are_zero() -> None:
    golds = [ABCD, ABDC, ABCD[::-1]]  # weights -1/6, 0, -5/6 -> all clipped to 0
    np.testing.assert_allclose(wca_weights(golds), [1, 1, 1])
    assert wca_score(ABDC, golds) == pytest.approx(ac_score(ABDC, golds))


def test_rba_consensus_sorts_by_rank_sum_then_median_then_item() -> None:
    # Q and B both have rank sum 6; Q's median rank 1 beats B's 2 although "B" < "Q".
    golds = [list("QBYZ"), list("QBYZ"), list("YBZQ")]
    assert rba_consensus(golds).tolist() == list("QBYZ")
    assert rba_consensus([list("AB"), list("BA")]).tolist() == ["A", "B"]  # full tie: item order
    assert rba_score(list("QBZY"), golds) == pytest.approx(kendall_tau(list("QBZY"), list("QBYZ")))


def test_rba_consensus_of_identical_orderings_is_that_ordering() -> None:
    rng = np.random.default_rng(5)
    for _ in range(10):
        o = rng.permutation(15)
        assert rba_consensus(np.tile(o, (4, 1))).tolist() == o.tolist()


def test_score_orderings_gives_every_method_and_a_gold_beats_its_reverse() -> None:
    rng = np.random.default_rng(11)
    golds = _noisy_copies(rng, 10, 6, 3)
    table = score_orderings(golds, np.stack([golds[0], golds[0][::-1]]))
    assert list(table.columns) == list(METHODS)
    assert (table.iloc[0] > table.iloc[1]).all()
    assert 0 <= table.loc[0, "FreSPA"] <= 1


def test_ed_of_a_hand_checked_pair() -> None:
    ed = evaluation_discriminativeness([list("ABC"), list("ACB")])
    assert ed["AC-tau"] == pytest.approx(2 / 3)  # tau(ABC, ACB) = 1/3, its reverse -1/3
    assert ed["RBA-tau"] == pytest.approx(2 / 3)
    # Against ACB alone (support 1): AC, AB, CB weigh 2, ACB 3; ABC holds 4/9, CBA 2/9.
    assert ed["FreSPA"] == pytest.approx(2 / 9)


def test_ed_is_positive_for_graders_who_broadly_agree() -> None:
    golds = _noisy_copies(np.random.default_rng(2), 12, 6, 3)
    ed = evaluation_discriminativeness(golds, frespa=FrespaParams(min_sup=0.6))
    assert set(ed) == set(METHODS)
    assert all(v > 0 for v in ed.values())


def test_ed_needs_two_golds() -> None:
    with pytest.raises(ValueError, match="at least 2 orderings for leave-one-out, got 1"):
        evaluation_discriminativeness([ABCD])


def test_noise_robustness_is_reproducible_and_starts_at_zero_degradation() -> None:
    golds = [_noisy_copies(np.random.default_rng(s), 7, 4, 2) for s in range(2)]
    first = noise_robustness(golds, rng=np.random.default_rng(0), ratios=(0, 0.5, 1))
    again = noise_robustness(golds, rng=np.random.default_rng(0), ratios=(0, 0.5, 1))
    pd.testing.assert_frame_equal(first, again)
    assert list(first.index) == [0, 0.5, 1]
    assert (first.loc[0, "degradation_pct"] == 0).all()
    assert first.loc[1, ("ed", "AC-tau")] < first.loc[0, ("ed", "AC-tau")]


def test_noise_robustness_wants_a_generator() -> None:
    with pytest.raises(ValueError, match="`rng` must be a numpy.random.Generator"):
        noise_robustness([[ABCD, ABDC]], rng=0)  # type: ignore[arg-type]


def test_grid_search_ranks_parameter_sets_by_ed() -> None:
    golds = [_noisy_copies(np.random.default_rng(s), 8, 5, 2) for s in range(2)]
    table = frespa_grid_search(golds, grid={"min_sup": (0.6, 1.0), "max_len": (None,), "w_len": (0, 1)})
    assert list(table.columns) == ["min_sup", "min_len", "max_len", "w_len", "w_sup", "ed"]
    assert len(table) == 2 * 2 * 1 * 2 * 3
    assert table["ed"].is_monotonic_decreasing
    best = table.iloc[0]
    params = FrespaParams(best.min_sup, int(best.min_len), None, best.w_len, best.w_sup)
    expected = np.mean([evaluation_discriminativeness(g, methods=["FreSPA"], frespa=params)["FreSPA"] for g in golds])
    assert best.ed == pytest.approx(expected)


def test_grid_search_rejects_unknown_parameters() -> None:
    with pytest.raises(ValueError, match="unknown parameters \\['minsup'\\]"):
        frespa_grid_search([[ABCD, ABDC]], grid={"minsup": (0.5,)})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: kendall_tau(ABCD, list("ABCE")), "`b` is not a permutation"),
        (lambda: ac_score(ABCD, [ABCD, list("AACD")]), "`golds` row 1 repeats item 'A'"),
        (lambda: ac_score(ABCD, [ABCD], corr="pearson"), "`corr` must be one of"),
        (lambda: evaluation_discriminativeness([ABCD, ABDC], methods=["AC"]), "`method` must be one of"),
        (lambda: kendall_w([["A"], ["A"]]), "k >= 2 items"),
    ],
)
def test_it_rejects_bad_input(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_a_single_gold_is_enough_to_score() -> None:
    assert wca_score(ABCD, [ACDB]) == pytest.approx(1 / 3)
    assert math.isnan(kendall_w([ABCD]))
