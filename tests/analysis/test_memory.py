"""What keeps a shard's memory bounded (docs/analysis.md, "Scaling"): the judgments sorted a column
at a time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import selectors


def _judgments(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    fine = rng.integers(0, 101, n) / 10
    fine[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame(
        {
            # Few units and graders, so that many rows tie on (unit, grader) and the sort's stability shows.
            "unit": rng.integers(1, 30, n),
            "grader": rng.integers(1, 4, n),
            "query": rng.integers(1, 5, n),
            "broad": rng.choice(np.array(["NS", "SS", "VS", None], dtype=object), n),
            "fine": fine,
            "label": np.full(n, None, dtype=object),
        }
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_judgments_are_sorted_as_pandas_sorts_them_ties_in_their_order(seed: int) -> None:
    frame = _judgments(500, seed)
    expected = frame.sort_values(["unit", "grader"], kind="stable", ignore_index=True)
    got = selectors._sorted_by_unit_grader(frame.copy())
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert isinstance(got.index, pd.RangeIndex)


def test_no_judgment_sorts_to_the_same_empty_frame() -> None:
    frame = _judgments(0, 0)
    expected = frame.sort_values(["unit", "grader"], kind="stable", ignore_index=True)
    pd.testing.assert_frame_equal(selectors._sorted_by_unit_grader(frame.copy()), expected, check_exact=True)
