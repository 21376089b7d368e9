"""Agreement patterns, chi-squared tests and FINE within BROAD."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

from analysis.metrics import (
    chi2_graders,
    chi2_independence,
    chi2_queries,
    collapse_counts,
    fine_within_broad,
    kind_summary,
    pattern_kinds,
    pattern_table,
)

LEVELS = ["NS", "SS", "VS"]


def test_kinds_full_partial_none():
    counts = [[3, 0, 0], [2, 1, 0], [1, 1, 1], [1, 0, 0], [2, 2, 0], [0, 4, 1]]
    assert pattern_kinds(counts).tolist() == ["full", "partial", "none", "", "partial", "partial"]


def test_pattern_table_at_three_and_two_levels():
    counts = np.array([[0, 0, 3], [0, 0, 3], [0, 2, 1], [1, 1, 1], [3, 0, 0], [0, 1, 0]])
    table = pattern_table(counts, LEVELS)
    assert table[["pattern", "kind", "count"]].values.tolist() == [
        ["VS,VS,VS", "full", 2],
        ["NS,NS,NS", "full", 1],
        ["SS,SS,·", "partial", 1],
        ["VS,SS,NS", "none", 1],
    ]
    assert table["percent"].sum() == pytest.approx(100)
    two, labels = collapse_counts(counts, LEVELS, {"VS": "S", "SS": "S"})
    table2 = pattern_table(two, labels)
    assert table2[["pattern", "count"]].values.tolist() == [["S,S,S", 3], ["NS,NS,NS", 1], ["S,S,·", 1]]


def test_kind_summary_percentages():
    summary = kind_summary([[3, 0, 0], [2, 1, 0], [1, 1, 1], [0, 0, 3], [1, 0, 0]])
    assert summary["full"] == {"count": 2, "percent": 50.0}
    assert summary["none"]["count"] == 1


def test_chi2_matches_scipy_on_random_tables():
    rng = np.random.default_rng(11)
    for _ in range(300):
        table = rng.integers(0, 30, size=(rng.integers(2, 6), rng.integers(2, 6)))
        table = table[table.sum(1) > 0][:, table.sum(0) > 0]
        if min(table.shape) < 2:
            continue
        expected = chi2_contingency(table, correction=False)
        result = chi2_independence(table)
        assert result.chi2 == pytest.approx(expected.statistic, abs=1e-9)
        assert result.p == pytest.approx(expected.pvalue, abs=1e-9)
        assert result.df == expected.dof


def test_chi2_graders_builds_the_graders_by_categories_table():
    graders = ["a"] * 4 + ["b"] * 4
    values = ["NS", "NS", "SS", "VS", "VS", "VS", "SS", "VS"]
    expected = chi2_contingency(np.array([[2, 1, 1], [0, 1, 3]]), correction=False)
    assert chi2_graders(graders, values).chi2 == pytest.approx(expected.statistic)


def test_chi2_queries_ignores_units_without_a_pattern():
    queries = ["q1", "q1", "q2", "q2", "q3"]
    kinds = ["full", "none", "partial", "partial", ""]
    expected = chi2_contingency(np.array([[1, 1, 0], [0, 0, 2]]), correction=False)
    assert chi2_queries(queries, kinds).chi2 == pytest.approx(expected.statistic)


def test_degenerate_table_gives_nan_with_reason():
    result = chi2_graders(["a", "b"], ["NS", "NS"])
    assert np.isnan(result.chi2) and "2 x 2" in result.reason


def test_fine_within_broad_quartiles():
    broad = ["NS", "NS", "NS", "VS", "VS"]
    fine = [0.0, 1.0, 2.0, 9.0, 10.0]
    table = fine_within_broad(broad, fine, LEVELS)
    assert table.loc["NS", "median"] == 1.0 and table.loc["NS", "q1"] == 0.5
    assert table.loc["VS", "std"] == pytest.approx(np.std([9, 10], ddof=1))
    assert table.loc["SS", "n"] == 0 and np.isnan(table.loc["SS", "mean"])


def test_errors():
    with pytest.raises(ValueError, match="`kinds` must be one of"):
        chi2_queries(["q"], ["most"])
    with pytest.raises(ValueError, match="`broad` has a label outside"):
        fine_within_broad(["XX"], [1.0], LEVELS)
    with pytest.raises(ValueError, match="`categories` has 2 labels for 3 columns"):
        pattern_table([[1, 1, 1]], ["NS", "SS"])
    with pytest.raises(ValueError, match="differ in length"):
        chi2_graders(["a"], ["NS", "SS"])


def test_chi2_queries_counts_as_crosstab_did() -> None:
    rng = np.random.default_rng(5)
    queries = rng.integers(0, 40, 3000).astype(float)
    queries[rng.random(3000) < 0.05] = np.nan
    kinds = rng.choice(["full", "partial", "none", ""], 3000)
    keep = (kinds != "") & ~np.isnan(queries)
    table = pd.crosstab(queries[keep], kinds[keep]).to_numpy()
    assert chi2_queries(queries, kinds) == chi2_independence(table)


def test_fine_within_broad_one_category_at_a_time_as_one_groupby() -> None:
    rng = np.random.default_rng(6)
    broad = rng.choice(["NS", "SS"], 5000)  # "VS" never used: its row has n 0 and NaN
    fine = rng.integers(0, 101, 5000) / 10
    groups = pd.Series(fine).groupby(pd.Categorical(broad, categories=["NS", "SS", "VS"]), observed=False)
    expected = pd.DataFrame(
        {
            "n": groups.size(),
            "mean": groups.mean(),
            "std": groups.std(ddof=1),
            "min": groups.min(),
            "q1": groups.quantile(0.25),
            "median": groups.median(),
            "q3": groups.quantile(0.75),
            "max": groups.max(),
        }
    )
    expected.index = pd.Index(["NS", "SS", "VS"], name="broad")
    assert fine_within_broad(broad, fine, ["NS", "SS", "VS"]).equals(expected)


@pytest.mark.parametrize("seed", range(4))
def test_fine_within_broad_from_counts_of_tenths_is_the_groupby_of_the_scores(seed) -> None:
    """Counted tenths give the groupby's n, min, quartiles, median and max to the last bit, and its
    mean and standard deviation to 1e-14 (theirs are pandas' compensated sums of floats; these are
    exact sums of tenths, correctly rounded)."""
    from analysis.metrics.patterns import TenthCounts, fine_distributions

    rng = np.random.default_rng(seed)
    sizes = [0, 1, 2, int(rng.integers(3, 40)), int(rng.integers(1_000, 20_000))]
    scores = [rng.integers(int(rng.integers(0, 60)), 101, size) for size in sizes]
    categories = [f"c{i}" for i in range(len(sizes))]
    expected = fine_distributions([s / 10 for s in scores], categories)
    got = fine_distributions([TenthCounts(np.bincount(s, minlength=256)) for s in scores], categories)
    assert list(got.columns) == list(expected.columns) and list(got.dtypes) == list(expected.dtypes)
    exact = ["n", "min", "q1", "median", "q3", "max"]
    assert got[exact].equals(expected[exact])
    np.testing.assert_allclose(got[["mean", "std"]], expected[["mean", "std"]], rtol=1e-14)
    assert got.loc["c1", "std"] != got.loc["c1", "std"] and got.loc["c0", "n"] == 0  # NaN, as pandas gives


def test_chi2_queries_from_codes_is_chi2_queries_of_the_labels() -> None:
    """The agreement section counts each unit's kind as a code (``kind_codes``), with no string per
    unit: the same table, so the same test, as from the queries and kinds as labels."""
    from analysis.metrics import chi2_queries_coded, kind_codes, pattern_kinds

    rng = np.random.default_rng(8)
    counts = rng.multinomial(4, [0.5, 0.3, 0.2], 3000)
    counts[rng.random(3000) < 0.1] = [1, 0, 0]  # units of one judgment: of no kind
    queries = rng.integers(0, 40, 3000)
    codes = kind_codes(counts)
    assert (np.array(["", "full", "partial", "none"])[codes] == pattern_kinds(counts)).all()
    query_codes, _ = pd.factorize(queries)
    assert chi2_queries_coded(query_codes, codes) == chi2_queries(query_codes, pattern_kinds(counts))
    with pytest.raises(ValueError, match="differ in length"):
        chi2_queries_coded(query_codes[:-1], codes)
