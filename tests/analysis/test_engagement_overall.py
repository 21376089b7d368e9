"""The campaign-wide time on unit, read from the shards' parts a column at a time with each median
found in place, is ``metrics.engagement_summary`` of the opportunities' one frame, to the last bit."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis.services.sections.behaviour import Opportunities, _engagement_overall, column_median, count_median


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 100_001])
@pytest.mark.parametrize("kind", ["spread", "ties", "missing"])
def test_the_median_in_place_is_pandas_median(n, kind):
    rng = np.random.default_rng(n)
    values = rng.exponential(5.0, n) if kind != "ties" else np.round(rng.exponential(5.0, n), 1)
    if kind == "missing":
        values[rng.random(n) < 0.2] = np.nan
    expected = pd.Series(values).median()
    got = column_median(values.copy())
    assert got == expected or (np.isnan(got) and np.isnan(expected))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000, 100_001])
@pytest.mark.parametrize("kind", ["small", "one value", "wide", "negative", "unsigned"])
def test_the_median_from_counts_is_pandas_median(n, kind):
    """Odd and even numbers of values, the two middle ones equal or not, values far beyond their
    number and below 0 (left to the median of floats): pandas' median, as a float, every time."""
    rng = np.random.default_rng(n)
    values = {
        "small": rng.integers(0, 4, n),
        "one value": np.full(n, 3),
        "wide": rng.integers(0, 10**12, n),
        "negative": rng.integers(-5, 5, n),
        "unsigned": rng.integers(0, 7, n).astype(np.uint8),
    }[kind]
    expected = pd.Series(values).median()
    got = count_median(values)
    assert type(got) is float
    assert got == expected or (np.isnan(got) and np.isnan(expected))
    assert count_median(np.array([1, 2])) == 1.5 and count_median(np.array([0, 2, 2, 9])) == 2.0


def test_the_overall_figures_from_parts_equal_the_summary_of_the_one_frame():
    rng = np.random.default_rng(3)
    frames = [
        pd.DataFrame(
            {
                "grader": np.full(n, g, dtype=np.int64),
                "seconds": rng.exponential(20.0, n),
                "auditions": rng.integers(0, 4, n).astype(np.int64),
            }
        )
        for g, n in ((1, 5001), (2, 0), (3, 2500), (4, 1))
    ]
    whole = pd.concat(frames, ignore_index=True)
    sources = [_parquet(f) if i % 2 else f for i, f in enumerate(frames)]
    assert _engagement_overall(Opportunities(sources)) == m.engagement_summary(whole)
    without = Opportunities(sources).without({3})
    assert _engagement_overall(without) == m.engagement_summary(whole[whole["grader"] != 3])
