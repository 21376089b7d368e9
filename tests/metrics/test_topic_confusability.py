"""Confusability-aware means over topics (docs/design.md §5.8): a hand-computed example, the weighted
mean of equally confusable topics is the plain mean, the bands partition the topics, bad input named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.topic_confusability import normalised_weights, tertile_bands, topics_by_confusability


def _units(rows: list[tuple[str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["topic", "confusability"])


VALUES = pd.Series({"t1": 0.5, "t2": 1.0, "t3": 0.0, "t4": 0.25})
# t1's units 0 and 2 (c = 1), t2's unit 0 (c = 0), t3's units 3, 3, 3 (c = 3); t4 read no judged unit;
# t9 has no value (not a topic of the measure) and is ignored.
UNITS = _units([("t1", 0.0), ("t1", 2.0), ("t2", 0.0), ("t3", 3.0), ("t3", 3.0), ("t3", 3.0), ("t9", 5.0)])


def test_a_hand_computed_example_gives_each_figure_exactly() -> None:
    out = topics_by_confusability(VALUES, UNITS)
    assert out["n_topics"] == 3 and out["topics_left_out"] == ["t4"] and out["n_units"] == 6
    assert out["mean"] == pytest.approx(0.5)  # (0.5 + 1 + 0) / 3, t4 left out
    assert out["mean_confusability"] == pytest.approx(11 / 6)  # (0 + 2 + 0 + 3 + 3 + 3) / 6 units
    # c = (1, 0, 3); tertiles of {0, 1, 3} at 2/3 and 5/3: one topic per band.
    expected = [(0.0, 2 / 3, 1, 1.0, 0.0), (2 / 3, 5 / 3, 1, 0.5, 1.0), (5 / 3, 3.0, 1, 0.0, 3.0)]
    for band, (low, high, n, mean, conf) in zip(out["bands"], expected, strict=True):
        assert band == pytest.approx({"low": low, "high": high, "n": n, "mean": mean, "mean_confusability": conf})
    # the median of c is 1: t1 and t2
    assert out["low_subset"] == pytest.approx({"threshold": 1.0, "n": 2, "mean": 0.75, "mean_confusability": 0.5})
    # weights 1 - c/3 = (2/3, 1, 0): (2/3 · 0.5 + 1 · 1 + 0 · 0) / (5/3) = 0.8
    assert out["weighted_mean"] == pytest.approx(0.8)
    chosen = topics_by_confusability(VALUES, UNITS, threshold=0.0)
    assert chosen["low_subset"] == pytest.approx({"threshold": 0.0, "n": 1, "mean": 1.0, "mean_confusability": 0.0})


def test_equally_confusable_topics_are_weighted_alike_and_make_one_band() -> None:
    rng = np.random.default_rng(3)
    values = pd.Series(rng.random(12), index=[f"q{i}" for i in range(12)])
    # 0.7 three times sums to a mean of 0.6999999999999998: still equal to the others
    units = _units([(f"q{i}", 0.7) for i in range(12) for _ in range(i % 3 + 1)])
    out = topics_by_confusability(values, units)
    assert out["weighted_mean"] == pytest.approx(values.mean(), abs=1e-15)
    assert out["mean"] == pytest.approx(values.mean(), abs=1e-15)
    assert [(b["n"], b["low"], b["high"]) for b in out["bands"]] == [(12, 0.7, 0.7)]
    assert out["low_subset"]["n"] == 12
    assert np.array_equal(normalised_weights(np.full(4, 2.5)), np.ones(4))


@pytest.mark.parametrize("seed", range(5))
def test_the_bands_partition_the_topics(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    values = pd.Series(rng.random(n), index=[f"q{i}" for i in range(n)])
    levels = rng.choice([0.0, 0.5, 1.0, 1.5], size=3 * n)  # ties among topics, as small judgment counts make
    units = _units([(f"q{i % n}", float(v)) for i, v in enumerate(levels)])
    out = topics_by_confusability(values, units)
    c = units.groupby("topic")["confusability"].mean().round(12)
    band, cuts = tertile_bands(c.to_numpy())
    assert sum(b["n"] for b in out["bands"]) == out["n_topics"] == n
    assert [b["n"] for b in out["bands"]] == np.bincount(band, minlength=cuts.size + 1).tolist()
    for b, band_out in enumerate(out["bands"]):
        inside = c[band == b]
        assert ((inside >= band_out["low"]) & (inside <= band_out["high"])).all()
        if band_out["n"]:
            assert band_out["mean"] == pytest.approx(values[inside.index].mean())
    assert out["bands"][0]["low"] == c.min() and out["bands"][-1]["high"] == c.max()
    assert min(values) - 1e-12 <= out["weighted_mean"] <= max(values) + 1e-12


def test_no_evaluated_unit_leaves_every_topic_out_and_bad_input_is_named() -> None:
    out = topics_by_confusability(VALUES, _units([]))
    assert out["n_topics"] == 0 and out["topics_left_out"] == ["t1", "t2", "t3", "t4"]
    assert out["mean"] is None and out["bands"] == [] and out["weighted_mean"] is None
    with pytest.raises(ValueError, match="`values` must be a pandas Series"):
        topics_by_confusability({"t1": 1.0}, UNITS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`units` lacks column\(s\) \['confusability'\]"):
        topics_by_confusability(VALUES, pd.DataFrame({"topic": ["t1"]}))
    with pytest.raises(ValueError, match="must be numbers ≥ 0"):
        topics_by_confusability(VALUES, _units([("t1", float("nan"))]))
