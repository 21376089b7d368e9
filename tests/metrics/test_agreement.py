"""Fleiss' and Cohen's kappa, Landis & Koch labels, and the data-shape conversions."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from analysis.metrics import (
    Undefined,
    cohen_kappa,
    collapse_counts,
    confusion_matrix,
    fleiss_kappa,
    fleiss_kappa_per_category,
    landis_koch,
    long_to_counts,
    long_to_wide,
    reason_of,
    wide_to_counts,
)

# Fleiss (1971), Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses (1 depression, 2 personality
# disorder, 3 schizophrenia, 4 neurosis, 5 other); kappa = 0.430, per-category kappas 0.245, 0.245,
# 0.520, 0.471, 0.566 (the paper's Table 2; also R irr::kappam.fleiss(diagnoses, detail=TRUE)).
FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4],
        [2, 2, 2, 5, 5, 5],
        [2, 3, 3, 3, 3, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3],
        [3, 3, 3, 3, 5, 5],
        [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4],
        [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4],
        [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3],
        [1, 4, 4, 4, 4, 4],
        [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5],
        [1, 1, 1, 1, 1, 2],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 4, 4, 4, 4, 4],
        [2, 2, 4, 5, 5, 5],
        [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4],
        [1, 1, 1, 1, 5, 5],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3],
        [5, 5, 5, 5, 5, 5],
    ]
)


def fleiss_counts() -> np.ndarray:
    return wide_to_counts(FLEISS_1971 - 1)


def test_fleiss_1971_worked_example():
    assert fleiss_kappa(fleiss_counts()) == pytest.approx(0.430, abs=5e-4)


def test_fleiss_1971_per_category_kappas():
    expected = [0.245, 0.245, 0.520, 0.471, 0.566]
    assert fleiss_kappa_per_category(fleiss_counts()) == pytest.approx(expected, abs=5e-4)


def test_wikipedia_fleiss_example():
    # en.wikipedia.org/wiki/Fleiss'_kappa worked example: 10 subjects, 14 raters, 5 categories.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_matches_statsmodels_on_random_tables():
    rng = np.random.default_rng(20240401)
    for _ in range(300):
        n_units, n_raters, k = rng.integers(2, 40), rng.integers(2, 8), rng.integers(2, 6)
        codes = rng.integers(0, k, size=(n_units, n_raters))
        table, _ = aggregate_raters(codes, n_cat=k)
        if np.count_nonzero(table.sum(axis=0)) < 2:
            continue
        assert fleiss_kappa(table) == pytest.approx(sm_fleiss(table), abs=1e-9)


def test_unequal_raters_follow_the_generalised_formula():
    table = np.array([[2, 1, 0], [0, 4, 0], [1, 1, 1], [0, 0, 2]], float)
    n_i = table.sum(1)
    p_i = ((table * (table - 1)).sum(1) / (n_i * (n_i - 1))).mean()
    p_e = ((table.sum(0) / table.sum()) ** 2).sum()
    assert fleiss_kappa(table) == pytest.approx((p_i - p_e) / (1 - p_e), abs=1e-12)


def test_overall_kappa_is_the_weighted_mean_of_per_category_kappas():
    table = fleiss_counts()
    p = table.sum(0) / table.sum()
    weights = p * (1 - p)
    assert fleiss_kappa(table) == pytest.approx((weights * fleiss_kappa_per_category(table)).sum() / weights.sum())


def test_units_with_fewer_than_two_judgments_are_excluded():
    table = fleiss_counts()
    padded = np.vstack([table[:, :], [[1, 0, 0, 0, 0], [0, 0, 0, 0, 0]]])
    assert fleiss_kappa(padded) == pytest.approx(fleiss_kappa(table), abs=1e-12)


def test_fleiss_is_invariant_to_shuffling_units_graders_and_labels():
    rng = np.random.default_rng(1)
    base = fleiss_kappa(fleiss_counts())
    wide = FLEISS_1971 - 1
    shuffled = wide[rng.permutation(30)][:, rng.permutation(6)]
    relabelled = rng.permutation(5)[shuffled]
    assert fleiss_kappa(wide_to_counts(relabelled)) == pytest.approx(base, abs=1e-12)


def test_perfect_agreement_gives_one():
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == 1.0
    assert cohen_kappa(list("abcab"), list("abcab")) == 1.0


def test_all_identical_judgments_give_nan_with_a_reason():
    kappa = fleiss_kappa([[3, 0], [3, 0]])
    assert isinstance(kappa, Undefined) and np.isnan(kappa)
    assert "identical" in reason_of(kappa)
    assert np.isnan(cohen_kappa(list("aaa"), list("aaa")))
    assert reason_of(0.5) is None


def test_per_category_kappa_is_nan_for_an_unused_category():
    result = fleiss_kappa_per_category([[2, 0, 1], [1, 0, 2]])
    assert np.isnan(result[1]) and not np.isnan(result[0])


def test_cohen_matches_statsmodels_on_random_pairs():
    rng = np.random.default_rng(7)
    for _ in range(300):
        k, n = int(rng.integers(2, 6)), int(rng.integers(5, 60))
        a = rng.integers(0, k, n)
        b = np.where(rng.random(n) < 0.5, a, rng.integers(0, k, n))
        table, _ = confusion_matrix(a, b, categories=range(k))
        if (table.sum(0) > 0).sum() < 2 or (table.sum(1) > 0).sum() < 2:
            continue
        for ours, wt in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")):
            expected = cohens_kappa(table, wt=wt, return_results=False)
            assert cohen_kappa(a, b, weights=ours, categories=range(k)) == pytest.approx(expected, abs=1e-9)


def test_cohen_statsmodels_worked_example():
    # SAS PROC FREQ output quoted in statsmodels' tests: kappa 0.4842, linear-weighted 0.4701.
    a = [0] * 5 + [1] * 8 + [2] * 6  # statsmodels' table10 = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]
    b = [1] * 4 + [2] + [1] * 8 + [1] + [2] * 5
    assert cohen_kappa(a, b, categories=[0, 1, 2]) == pytest.approx(0.4842, abs=5e-5)
    assert cohen_kappa(a, b, weights="linear", categories=[0, 1, 2]) == pytest.approx(0.4701, abs=5e-5)


def test_cohen_drops_pairs_with_a_missing_rating():
    assert cohen_kappa(["a", "b", None, "a"], ["a", "b", "b", np.nan]) == 1.0


def test_cohen_is_symmetric_and_label_invariant_when_unweighted():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 50), rng.integers(0, 4, 50)
    perm = np.array([2, 0, 3, 1])
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(b, a), abs=1e-12)
    assert cohen_kappa(perm[a], perm[b]) == pytest.approx(cohen_kappa(a, b), abs=1e-12)


@pytest.mark.parametrize(
    "kappa, label",
    [
        (-0.1, "poor"),
        (0.0, "slight"),
        (0.2, "slight"),
        (0.21, "fair"),
        (0.4, "fair"),
        (0.5, "moderate"),
        (0.7, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
        (float("nan"), "undefined"),
    ],
)
def test_landis_koch_bands(kappa, label):
    assert landis_koch(kappa) == label


def test_collapse_maps_three_levels_to_two():
    counts = np.array([[1, 1, 1], [0, 2, 1]])
    collapsed, labels = collapse_counts(counts, ["NS", "SS", "VS"], {"VS": "S", "SS": "S"})
    assert labels == ["NS", "S"]
    assert collapsed.tolist() == [[1, 2], [0, 3]]


def test_long_frame_conversions():
    frame = pd.DataFrame(
        {"unit": ["u2", "u1", "u1", "u2"], "grader": ["a", "a", "b", "b"], "value": ["SS", "VS", "VS", "NS"]}
    )
    counts, units, categories = long_to_counts(frame, ["NS", "SS", "VS"])
    assert list(units) == ["u1", "u2"] and categories == ["NS", "SS", "VS"]
    assert counts.tolist() == [[0, 0, 2], [1, 1, 0]]
    numeric = frame.assign(value=[2.0, 1.0, 3.0, 4.0])
    wide, units, graders = long_to_wide(numeric)
    assert wide.tolist() == [[1.0, 3.0], [2.0, 4.0]] and list(graders) == ["a", "b"]


@pytest.mark.parametrize(
    "counts, message",
    [
        ([[1, 2], [3]], "rectangular"),
        ([], "2-D"),
        (np.zeros((0, 3)), "empty"),
        ([[1, -1]], r"counts\[0, 1\] = -1"),
        ([[1.5, 1]], r"counts\[0, 0\] = 1.5"),
    ],
)
def test_fleiss_rejects_bad_tables(counts, message):
    with pytest.raises(ValueError, match=message):
        fleiss_kappa(counts)


def test_bad_options_and_inputs_are_named():
    with pytest.raises(ValueError, match="`weights` must be one of 'unweighted', 'linear', 'quadratic'; got 'cubic'"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="outside the declared categories"):
        cohen_kappa(["NS", "XX"], ["NS", "SS"], categories=["NS", "SS", "VS"])
    with pytest.raises(ValueError, match="`kappa` must be a number"):
        landis_koch("high")
    with pytest.raises(ValueError, match="more than one judgment for unit 'u1' by grader 'a'"):
        long_to_counts(pd.DataFrame({"unit": ["u1", "u1"], "grader": ["a", "a"], "value": [1, 2]}))
    with pytest.raises(ValueError, match="lacks column"):
        long_to_counts(pd.DataFrame({"unit": ["u1"], "value": [1]}))
    with pytest.raises(ValueError, match=r"`frame\['value'\]` has a value outside the scale \[0, 10\]: 11"):
        long_to_wide(pd.DataFrame({"unit": [1, 1], "grader": ["a", "b"], "value": [3, 11]}), scale=(0, 10))
    with pytest.raises(ValueError, match="names categories that do not exist"):
        collapse_counts([[1, 1]], ["NS", "SS"], {"VS": "S"})


def test_integer_ids_and_labels_give_the_same_table():
    rng = np.random.default_rng(8)
    units = rng.permutation(np.repeat(np.arange(1000, 1400, 2), 3))
    frame = pd.DataFrame({"unit": units, "grader": np.tile([7, 3, 5], 200), "value": rng.integers(0, 3, 600)})
    frame = frame.drop_duplicates(["unit", "grader"])
    as_ints, units_int, _ = long_to_counts(frame, [0, 1, 2])
    as_text, units_text, _ = long_to_counts(frame.astype({"unit": str, "grader": str}), [0, 1, 2])
    order = np.argsort(units_text.astype(int))
    assert (as_ints == as_text[order]).all() and list(units_int) == sorted(units_int)
