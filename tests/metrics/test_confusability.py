"""Per-unit confusability, aggregates and confusability-aware evaluation (docs/design.md §5.3)."""

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import ca_corr, confusability_summary, ground_truth, metric_by_band, unit_confusability


def long(units: dict) -> pd.DataFrame:
    rows = [(u, f"g{i}", v) for u, values in units.items() for i, v in enumerate(values)]
    return pd.DataFrame(rows, columns=["unit", "grader", "value"])


def test_design_examples():
    table = unit_confusability(long({"a": [5, 5, 5, 5, 1], "b": [4, 3, 3, 2, 2]}))
    assert table.loc["a", ["dif", "std", "entropy"]].round(2).tolist() == [4, 1.79, 0.72]
    assert table.loc["b", ["dif", "std", "entropy"]].round(2).tolist() == [2, 0.84, 1.52]
    assert table.loc["a", "majority"] == 5 and table.loc["a", "median"] == 5


def _majority_by_sorting(frame: pd.DataFrame) -> pd.Series:
    """The majority rule as one sort of every (unit, value) by four keys: count (most first),
    distance to the unit's mean, value; each unit's first row."""
    tally = frame.groupby(["unit", "value"]).size().rename("count").reset_index()
    means = frame.groupby("unit")["value"].mean()
    tally = tally.assign(distance=(tally["value"] - tally["unit"].map(means)).abs())
    tally = tally.sort_values(["unit", "count", "distance", "value"], ascending=[True, False, True, True])
    return tally.drop_duplicates("unit").set_index("unit")["value"]


@pytest.mark.parametrize("units_together", [True, False])
def test_majority_is_the_first_of_the_four_key_sort_with_ties_everywhere(units_together):
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        units = rng.integers(0, max(1, n // 4), n)
        units = np.sort(units) if units_together else units
        values = rng.integers(0, int(rng.integers(1, 6)), n) * rng.choice([1.0, 0.5, 0.1])
        frame = pd.DataFrame({"unit": units, "grader": np.arange(n), "value": values})
        got = unit_confusability(frame)["majority"]
        expected = _majority_by_sorting(frame)
        assert got.index.tolist() == expected.index.tolist() and got.tolist() == expected.tolist()


def _grouped(frame: pd.DataFrame) -> pd.DataFrame:
    """``unit_confusability`` by pandas' groupby over the rows, whatever their order."""
    from analysis.metrics.confusability import COLUMNS, _entropy, _majority, _tally

    frame = pd.DataFrame({"unit": frame["unit"].to_numpy(), "value": frame["value"].to_numpy(dtype=float)})
    groups = frame.groupby("unit")["value"]
    out = pd.DataFrame({"n": groups.size(), "mean": groups.mean(), "median": groups.median()})
    tally = _tally(frame)
    out["majority"] = _majority(tally, out["mean"])
    out["dif"] = groups.max() - groups.min()
    out["std"] = groups.std(ddof=1)
    out["entropy"] = _entropy(tally, out["n"])
    return out[COLUMNS]


@pytest.mark.parametrize("values", ["few, tied", "tenths", "continuous", "one crowded unit"])
def test_units_in_order_give_the_groupbys_figures_to_the_last_bit(values):
    """Rows whose units come in increasing order (a slice of the judgments) are not grouped but read
    a row of every unit at a time: every figure is the groupby's, bit for bit (compensated mean,
    Welford's std, the entropy summed in the order of the tally)."""
    from analysis.metrics import confusability

    rng = np.random.default_rng(len(values))
    for _ in range(100):
        sizes = rng.integers(1, 9, int(rng.integers(1, 300)))
        if values == "one crowded unit":  # too wide to sort as a matrix: sorted by two keys
            sizes[rng.integers(sizes.size)] = 50 * sizes.size + 20
        units = np.repeat(np.sort(rng.choice(100_000, sizes.size, replace=False)), sizes)
        graders = np.concatenate([rng.permutation(max(20, k))[:k] for k in sizes])
        value = {
            "few, tied": rng.integers(0, 4, units.size).astype(float),
            "tenths": rng.integers(0, 101, units.size) / 10,
            "continuous": rng.normal(size=units.size) * 10.0 ** rng.integers(-3, 4),
            "one crowded unit": rng.integers(0, 11, units.size).astype(float),
        }[values]
        frame = pd.DataFrame({"unit": units, "grader": graders, "value": value})
        assert confusability._in_unit_order(units, value) is not None
        pd.testing.assert_frame_equal(unit_confusability(frame), _grouped(frame), check_exact=True)
        shuffled = frame.sample(frac=1.0, random_state=1)  # units apart: grouped, the same figures
        if not shuffled["unit"].is_monotonic_increasing:
            assert confusability._in_unit_order(shuffled["unit"].to_numpy(), shuffled["value"].to_numpy()) is None
        pd.testing.assert_frame_equal(unit_confusability(shuffled), _grouped(shuffled), check_exact=True)


def test_majority_ties_go_to_the_value_nearest_the_mean_then_the_lower():
    table = unit_confusability(long({"near": [1, 1, 4, 4, 5], "lower": [2, 2, 4, 4], "b": [4, 3, 3, 2, 2]}))
    assert table.loc["near", "majority"] == 4  # mean 3.0: 4 is nearer than 1
    assert table.loc["lower", "majority"] == 2  # mean 3.0: equidistant, take the lower
    assert table.loc["b", "majority"] == 3  # mean 2.8: 3 is nearer than 2


def test_single_judgment_has_nan_std_and_is_excluded_from_the_summary():
    table = unit_confusability(long({"a": [3], "b": [1, 3]}))
    assert np.isnan(table.loc["a", "std"]) and table.loc["a", "entropy"] == 0
    summary = confusability_summary(table)
    assert summary == {
        "mean_dif": 2.0,
        "mean_std": pytest.approx(np.sqrt(2)),
        "mean_entropy": 1.0,
        "n_units": 1,
        "n_excluded": 1,
    }


def test_matches_a_direct_computation_on_random_data():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(200), 5),
            "grader": np.tile(np.arange(5), 200),
            "value": rng.integers(0, 5, 1000).astype(float),
        }
    )
    table = unit_confusability(frame.sample(frac=1, random_state=1))
    values = frame["value"].to_numpy().reshape(200, 5)
    assert table["std"].to_numpy() == pytest.approx(values.std(axis=1, ddof=1))
    assert table["dif"].to_numpy() == pytest.approx(np.ptp(values, axis=1))
    p = np.stack([(values == v).mean(1) for v in range(5)], axis=1)
    entropy = -(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0)).sum(1)
    assert table["entropy"].to_numpy() == pytest.approx(entropy)


def test_ca_corr_is_pearson_with_confusability_weights():
    rng = np.random.default_rng(4)
    truth, system, conf = rng.normal(size=30), rng.normal(size=30), rng.random(30)
    w = 1 - (conf - conf.min()) / np.ptp(conf)
    expected = np.cov(system, truth, aweights=w)[0, 1] / np.sqrt(np.cov(system, aweights=w) * np.cov(truth, aweights=w))
    assert ca_corr(system, truth, conf) == pytest.approx(expected)
    assert ca_corr(system, truth, np.ones(30)) == pytest.approx(np.corrcoef(system, truth)[0, 1])


def test_metric_by_band_and_ground_truth():
    rng = np.random.default_rng(6)
    truth, conf = rng.normal(size=40), np.linspace(0, 2, 40)
    bands = metric_by_band(truth + rng.normal(size=40) * conf, truth, conf, [0, 1, 2.01])
    assert bands["n"].tolist() == [20, 20] and bands["pearson"].iloc[0] > bands["pearson"].iloc[1]
    table = unit_confusability(long({"a": [1, 2, 2]}))
    assert ground_truth(table, "majority").tolist() == [2]


def test_errors():
    with pytest.raises(ValueError, match="`aggregate` must be one of 'mean', 'median', 'majority'"):
        ground_truth(unit_confusability(long({"a": [1, 2]})), "mode")
    with pytest.raises(ValueError, match="must be numeric"):
        unit_confusability(long({"a": ["x", "y"]}))
    with pytest.raises(ValueError, match="differ in length"):
        ca_corr([1, 2], [1, 2], [1])
    with pytest.raises(ValueError, match="`edges` must be an increasing"):
        metric_by_band([1, 2], [1, 2], [0, 1], [1, 0])
