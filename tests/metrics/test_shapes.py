"""count_table counts as pd.crosstab does, reindexed to the given columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics import count_table


def test_count_table_equals_crosstab_reindexed_with_missing_rows_and_unknown_values_left_out():
    rng = np.random.default_rng(4)
    rows = rng.choice([3.0, 1.0, 7.0, np.nan], size=500)
    values = rng.choice(["NS", "SS", "VS", "XX"], size=500)
    expected = pd.crosstab(rows, values).reindex(columns=["VS", "SS", "NS", "ZZ"], fill_value=0)
    got = count_table(rows, values, ["VS", "SS", "NS", "ZZ"])
    assert got.index.tolist() == [1.0, 3.0, 7.0]
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
    assert got.columns.tolist() == ["VS", "SS", "NS", "ZZ"] and got["ZZ"].sum() == 0


def test_count_table_of_nothing_is_empty():
    got = count_table(np.array([], dtype=float), np.array([], dtype=object), ["a", "b"])
    assert got.shape == (0, 2)
