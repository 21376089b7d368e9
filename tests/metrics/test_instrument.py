"""The campaign as an instrument (docs/design.md §5.5): precision, reproducibility, resolution, systems."""

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.metrics.instrument import precision, reproducibility, resolution, system_comparison


def long(values: dict) -> pd.DataFrame:
    return pd.DataFrame(
        [(u, f"g{j}", v) for u, vs in values.items() for j, v in enumerate(vs)], columns=["unit", "grader", "value"]
    )


def noisy_campaign(rng, n_units=60, n_graders=8, noise=1.0, truth=None):
    truth = rng.uniform(0, 10, n_units) if truth is None else truth
    rows = [(u, f"g{g}", float(truth[u] + rng.normal(0, noise))) for u in range(n_units) for g in range(n_graders)]
    return pd.DataFrame(rows, columns=["unit", "grader", "value"]), truth


def test_precision_uses_sample_std_per_unit_and_the_design_example():
    # docs/design.md §5.3: {5,5,5,5,1} has std 1.79; {4,3,3,2,2} has 0.84.
    result = precision(long({"a": [5, 5, 5, 5, 1], "b": [4, 3, 3, 2, 2], "c": [7]}))
    units = result["units"]
    assert units.loc["a", "std"] == pytest.approx(1.7888543819998317)
    assert units.loc["b", "std"] == pytest.approx(0.8366600265340756)
    assert result["n_excluded"] == 1
    assert result["mean_std"] == pytest.approx((1.7888543819998317 + 0.8366600265340756) / 2)


def test_the_precision_band_holds_the_middle_share_of_units():
    rng = np.random.default_rng(1)
    frame, _ = noisy_campaign(rng, n_units=300)
    result = precision(frame, middle=0.67)
    stds = result["units"]["std"]
    low, high = result["band"]
    inside = ((stds >= low) & (stds <= high)).mean()
    assert inside == pytest.approx(0.67, abs=0.01)


def test_identical_campaigns_reproduce_perfectly_and_alpha_matches_the_krippendorff_package():
    rng = np.random.default_rng(2)
    frame, _ = noisy_campaign(rng, n_units=40, n_graders=5)
    result = reproducibility(frame, frame.copy())
    assert result["spearman_means"] == pytest.approx(1.0)
    assert result["pearson_stds"] == pytest.approx(1.0)
    wide = frame.pivot(index="grader", columns="unit", values="value").to_numpy()
    assert result["alpha_first"] == pytest.approx(
        krippendorff.alpha(reliability_data=wide, level_of_measurement="interval"), abs=1e-9
    )
    assert (result["moved_mean"]["change"] == 0).all()


def test_reproducibility_lists_the_unit_that_moved_most():
    rng = np.random.default_rng(3)
    first, truth = noisy_campaign(rng, n_units=30, n_graders=4, noise=0.5)
    second = first.copy()
    second.loc[second["unit"] == 7, "value"] += 5
    result = reproducibility(first, second, top=3)
    assert result["moved_mean"].index[0] == 7
    assert result["moved_mean"]["change"].iloc[0] == pytest.approx(5)
    assert result["spearman_means"] < 1


def test_resolution_is_the_smallest_difference_the_pairwise_campaign_confirms():
    ratings = long({u: [m, m] for u, m in zip("abcde", [1, 2, 3, 4, 5], strict=True)})
    # Pairs one apart: half agree. Pairs two or more apart: all agree.
    verdicts = {
        ("a", "b"): "B",
        ("b", "c"): "A",
        ("c", "d"): "B",
        ("d", "e"): "A",
        ("a", "c"): "B",
        ("b", "d"): "B",
        ("c", "e"): "B",
        ("a", "e"): "B",
    }
    pairs = pd.DataFrame(
        [(a, b, f"g{i}", v) for (a, b), v in verdicts.items() for i in range(3)],
        columns=["unit_a", "unit_b", "grader", "verdict"],
    )
    result = resolution(ratings, pairs, thresholds=np.array([0.5, 1.0, 1.5, 2.0, 3.0]))
    curve = result["curve"].set_index("threshold")
    assert curve.loc[1.0, "agreement"] == pytest.approx(6 / 8)
    assert curve.loc[2.0, "agreement"] == 1.0
    assert result["resolution"] == 1.5


def test_a_tie_between_verdicts_counts_as_equal_and_never_agrees():
    ratings = long({"a": [5, 5], "b": [1, 1], "c": [3, 3]})
    pairs = pd.DataFrame(
        [("a", "b", "g1", "A"), ("a", "b", "g2", "B"), ("a", "c", "g1", "A")],
        columns=["unit_a", "unit_b", "grader", "verdict"],
    )
    curve = resolution(ratings, pairs, thresholds=np.array([0.0]))["curve"]
    assert curve["agreement"].iloc[0] == 0.5


def test_system_correlations_match_scipy_and_a_perfect_system_correlates_with_unit_means():
    rng = np.random.default_rng(4)
    ratings, truth = noisy_campaign(rng, n_units=50, n_graders=6)
    means = ratings.groupby("unit")["value"].mean()
    outputs = pd.concat(
        [
            pd.DataFrame({"system": "oracle", "unit": means.index, "score": means.to_numpy()}),
            pd.DataFrame({"system": "noisy", "unit": range(50), "score": truth + rng.normal(0, 4, 50)}),
        ]
    )
    result = system_comparison(ratings, outputs)
    assert result.per_system.loc["oracle", "rho_unit_means"] == pytest.approx(1.0)
    g0 = ratings[ratings["grader"] == "g0"].sort_values("unit")["value"].to_numpy()
    expected = stats.pearsonr(g0, outputs[outputs["system"] == "noisy"]["score"].to_numpy()).statistic
    assert result.per_grader.loc["g0", "noisy"] == pytest.approx(expected, abs=1e-12)
    test = result.tests.iloc[0]
    t, p = stats.ttest_rel(result.per_grader[test["system_a"]], result.per_grader[test["system_b"]])
    assert (test["t"], test["p"]) == (pytest.approx(t), pytest.approx(p))
    assert test["distinguishable"] and test["verdict"] == "distinguishable"


def test_systems_closer_than_the_precision_are_not_distinguishable():
    rng = np.random.default_rng(5)
    ratings, truth = noisy_campaign(rng, n_units=40, n_graders=4, noise=3.0)
    outputs = pd.concat(
        [pd.DataFrame({"system": s, "unit": range(40), "score": truth + rng.normal(0, 1, 40)}) for s in ("x", "y")]
    )
    verdict = system_comparison(ratings, outputs, method="spearman").tests.iloc[0]
    assert verdict["p"] >= 0.05
    assert verdict["verdict"] == "not distinguishable at this precision"


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: precision(pd.DataFrame({"unit": [1], "grader": [1]})), "lacks column"),
        (lambda: precision(long({"a": ["x", 1]})), "must be numeric"),
        (lambda: precision(long({"a": [1, 2]}), middle=1.5), "`middle` must lie in"),
        (lambda: reproducibility(long({"a": [1, 2]}), long({"b": [1, 2]})), "share 0 units"),
        (
            lambda: system_comparison(
                long({"a": [1, 2]}), pd.DataFrame({"system": ["s"], "unit": ["a"], "score": [1]}), method="kendall"
            ),
            "`method` must be one of",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
