"""System scores from provenance, Friedman, Nemenyi, letter groups, and uploaded-score evaluation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from scipy import stats

from analysis.metrics.confusability import unit_confusability
from analysis.metrics.system_scores import correlation_ci, evaluate_scores
from analysis.metrics.systems import friedman, letter_groups, nemenyi, per_query_scores, system_scores


def _provenance(rng: np.random.Generator, n_queries: int = 8, per_query: int = 10) -> tuple[pd.Series, pd.DataFrame]:
    units = np.arange(n_queries * per_query)
    truth = pd.Series(rng.uniform(0, 10, units.size), index=units)
    rows = [(s, u // per_query, u) for u in units for s in ("A", "B", "C") if rng.random() < 0.5]
    return truth, pd.DataFrame(rows, columns=["system", "query", "unit"])


def test_per_query_scores_are_the_mean_truth_of_the_returned_candidates() -> None:
    truth, prov = _provenance(np.random.default_rng(1))
    truth.iloc[:5] = np.nan  # units without judgments are left out
    table = per_query_scores(truth, prov)
    assert table.shape == (8, 3)
    for (system, query), group in prov.groupby(["system", "query"]):
        expected = truth.loc[group["unit"]].mean()  # pandas skips NaN: only units with ground truth
        assert table.loc[query, system] == pytest.approx(expected)


def test_system_score_is_the_mean_over_queries_with_an_interval_around_it() -> None:
    truth, prov = _provenance(np.random.default_rng(2))
    table = per_query_scores(truth, prov)
    scores = system_scores(table, rng=np.random.default_rng(0), n_boot=500)
    assert list(scores.index) == list(scores["score"].sort_values(ascending=False).index)
    assert len(scores) == 3
    for system, row in scores.iterrows():
        assert row["score"] == pytest.approx(table[system].mean())
        assert row["ci_low"] <= row["score"] <= row["ci_high"]
        assert row["n_queries"] == 8
    again = system_scores(table, rng=np.random.default_rng(0), n_boot=500)
    pd.testing.assert_frame_equal(scores, again)


def test_bootstrap_interval_matches_a_direct_resampling_of_queries() -> None:
    table = pd.DataFrame({"A": [1.0, 2.0, 4.0, 8.0], "B": [3.0, np.nan, 5.0, 6.0], "C": [0.0, 1.0, 0.0, 2.0]})
    rng = np.random.default_rng(5)
    scores = system_scores(table, rng=rng, n_boot=200)
    draws = np.random.default_rng(5).integers(0, 4, size=(200, 4))
    for system in table:
        reps = [np.nanmean(table[system].to_numpy()[d]) if table[system].to_numpy()[d].size else np.nan for d in draws]
        reps = np.array([r for r in reps if np.isfinite(r)])
        assert scores.loc[system, "ci_low"] == pytest.approx(np.quantile(reps, 0.025))
        assert scores.loc[system, "ci_high"] == pytest.approx(np.quantile(reps, 0.975))


def test_friedman_agrees_with_scipy_and_gives_kendalls_w() -> None:
    rng = np.random.default_rng(3)
    table = pd.DataFrame(rng.normal(size=(12, 4)) + [0, 0.3, 0.6, 1.5], columns=list("ABCD"))
    table.iloc[0, 1] = np.nan  # an incomplete query is left out
    out = friedman(table)
    expected = stats.friedmanchisquare(*table.dropna().to_numpy().T)
    assert out["chi2"] == pytest.approx(expected.statistic)
    assert out["p"] == pytest.approx(expected.pvalue)
    assert (out["df"], out["n_queries"], out["n_systems"]) == (3, 11, 4)
    assert out["w"] == pytest.approx(expected.statistic / (11 * 3))


def test_perfectly_consistent_rankings_give_w_of_one() -> None:
    table = pd.DataFrame({"A": [1, 2, 3, 4.0], "B": [2, 3, 4, 5.0], "C": [3, 4, 5, 6.0]})
    out = friedman(table)
    assert out["w"] == pytest.approx(1.0)
    assert out["mean_ranks"] == {"A": 1.0, "B": 2.0, "C": 3.0}


def test_friedman_needs_three_systems_and_two_complete_queries() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        friedman(pd.DataFrame({"A": [1.0, 2.0], "B": [2.0, 1.0]}))
    with pytest.raises(ValueError, match="at least 2 are needed"):
        friedman(pd.DataFrame({"A": [1.0, np.nan], "B": [2.0, 1.0], "C": [0.0, 3.0]}))


def test_nemenyi_agrees_with_scikit_posthocs() -> None:
    rng = np.random.default_rng(4)
    table = pd.DataFrame(rng.normal(size=(15, 5)) + [0, 0.2, 0.8, 1.0, 2.0], columns=list("ABCDE"))
    ours = nemenyi(table)
    theirs = sp.posthoc_nemenyi_friedman(table.to_numpy())
    assert ours.shape == (5, 5)
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=1e-10, atol=1e-12)


def test_letter_groups_share_a_letter_only_where_no_difference_was_found() -> None:
    order = ["A", "B", "C"]
    p = pd.DataFrame(1.0, index=order, columns=order)
    assert letter_groups(order, p) == {"A": "a", "B": "a", "C": "a"}
    p.loc["A", "C"] = p.loc["C", "A"] = 0.01
    assert letter_groups(order, p) == {"A": "a", "B": "ab", "C": "b"}
    p.loc["A", "B"] = p.loc["B", "A"] = p.loc["B", "C"] = p.loc["C", "B"] = 0.001
    assert letter_groups(order, p) == {"A": "a", "B": "b", "C": "c"}


def test_letter_groups_of_four_systems_with_overlapping_groups() -> None:
    # Piepho (2004)-style case: A~B, B~C, C~D only (a chain): three overlapping groups.
    order = list("ABCD")
    p = pd.DataFrame(0.001, index=order, columns=order)
    for a, b in (("A", "B"), ("B", "C"), ("C", "D")):
        p.loc[a, b] = p.loc[b, a] = 0.5
    assert letter_groups(order, p) == {"A": "a", "B": "ab", "C": "bc", "D": "c"}


# --- uploaded per-unit scores -------------------------------------------------------------------


def _units(rng: np.random.Generator, n_units: int = 60) -> pd.DataFrame:
    true = rng.uniform(0, 10, n_units)
    noise = rng.uniform(0.2, 3.0, n_units)
    rows = [(u, g, float(np.clip(true[u] + rng.normal(0, noise[u]), 0, 10))) for u in range(n_units) for g in range(4)]
    return unit_confusability(pd.DataFrame(rows, columns=["unit", "grader", "value"]))


def test_correlations_agree_with_scipy_and_have_an_interval() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=40), rng.normal(size=40)
    y = y + x
    for method, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
        est = correlation_ci(x, y, method, rng=np.random.default_rng(1), n_boot=300)
        assert est.value == pytest.approx(fn(x, y).statistic)
        assert est.ci_low < est.value < est.ci_high


def test_ca_corr_is_the_weighted_pearson_of_the_design() -> None:
    rng = np.random.default_rng(8)
    units = _units(rng)
    scores = pd.Series(units["mean"].to_numpy() + rng.normal(0, 2, len(units)), index=units.index)
    out = evaluate_scores(scores, units, aggregate="mean", measure="std", rng=rng, n_boot=100)
    x, g, c = scores.to_numpy(), units["mean"].to_numpy(), units["std"].to_numpy()
    w = 1 - (c - c.min()) / (c.max() - c.min())
    xw, gw = (w * x).sum() / w.sum(), (w * g).sum() / w.sum()
    direct = (w * (x - xw) * (g - gw)).sum() / np.sqrt((w * (x - xw) ** 2).sum() * (w * (g - gw) ** 2).sum())
    assert out["ca_corr"] == pytest.approx(direct)
    assert out["pearson"]["value"] == pytest.approx(stats.pearsonr(x, g).statistic)
    assert out["spearman"]["value"] == pytest.approx(stats.spearmanr(x, g).statistic)
    assert out["mean_confusability"] == pytest.approx(c.mean())


def test_bands_are_tertiles_and_the_low_subset_is_below_the_median() -> None:
    rng = np.random.default_rng(9)
    units = _units(rng, 90)
    scores = pd.Series(units["median"].to_numpy() * 2 + 1, index=units.index)
    out = evaluate_scores(scores, units, aggregate="median", measure="std", rng=rng, n_boot=50)
    assert len(out["bands"]) == 3
    assert sum(b["n"] for b in out["bands"]) == 90
    assert [b["n"] for b in out["bands"]] == [30, 30, 30]
    for band in out["bands"]:
        assert band["pearson"] == pytest.approx(1.0)  # a linear map of the ground truth
    c = units["std"].to_numpy()
    assert out["low_subset"]["threshold"] == pytest.approx(np.median(c))
    assert out["low_subset"]["n"] == int((c <= np.median(c)).sum())
    chosen = evaluate_scores(scores, units, aggregate="median", measure="std", threshold=0.5, rng=rng, n_boot=50)
    assert chosen["low_subset"]["n"] == int((c <= 0.5).sum())


def test_only_units_with_a_score_and_a_ground_truth_are_evaluated() -> None:
    rng = np.random.default_rng(10)
    units = _units(rng, 30)
    scores = pd.Series(rng.normal(size=20), index=list(range(10, 30)))
    out = evaluate_scores(scores, units, rng=rng, n_boot=20)
    assert out["n_units"] == 20


def test_evaluate_scores_rejects_an_unknown_aggregate_or_measure() -> None:
    units = _units(np.random.default_rng(11), 10)
    scores = pd.Series(np.arange(10.0), index=units.index)
    with pytest.raises(ValueError, match="`aggregate` must be one of"):
        evaluate_scores(scores, units, aggregate="mode", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="`measure` must be one of"):
        evaluate_scores(scores, units, measure="variance", rng=np.random.default_rng(0))


def test_average_ranks_agree_with_scipy_including_ties() -> None:
    from analysis.metrics.system_scores import average_ranks

    rng = np.random.default_rng(12)
    values = rng.integers(0, 6, size=(50, 40)).astype(float)  # many ties
    ranks = average_ranks(values)
    assert ranks.shape == (50, 40)
    np.testing.assert_array_equal(ranks, stats.rankdata(values, axis=1))
    np.testing.assert_array_equal(average_ranks(values[0]), stats.rankdata(values[0]))


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_the_weighted_bootstrap_equals_correlating_each_resample(method) -> None:
    rng = np.random.default_rng(13)
    x = rng.integers(0, 8, 60).astype(float)  # ties, as in judgments on a scale
    y = x + rng.normal(0, 2, 60).round(1)
    est = correlation_ci(x, y, method, rng=np.random.default_rng(4), n_boot=400)
    draws = np.random.default_rng(4).integers(0, 60, size=(400, 60))
    fn = stats.pearsonr if method == "pearson" else stats.spearmanr
    reps = np.array([fn(x[d], y[d]).statistic for d in draws])
    assert (est.ci_low, est.ci_high) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), rel=1e-9)
