"""count_table counts as pd.crosstab does, reindexed to the given columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics import count_table
from analysis.metrics.shapes import distinct_rows


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


def _unique_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.unique(table, axis=0, return_inverse=True, return_counts=True)


def test_distinct_rows_equals_numpys_unique_rows_in_order_inverse_counts_and_dtypes():
    """Both of its ways (counting few possible rows, sorting many) and the fallback for rows too
    wide for 62 bits give np.unique's answer exactly: the bootstrap draws groups in this order."""
    rng = np.random.default_rng(20261126)
    shapes = [(1, 1), (7, 3), (300, 3), (2_000, 5), (3_000, 9), (500, 2)]
    for n, k in shapes:
        for high in (1, 2, 6, 12):
            table = rng.integers(0, high, size=(n, k)).astype(float)
            for got, want in zip(distinct_rows(table), _unique_rows(table), strict=True):
                assert np.array_equal(got, want) and got.dtype == want.dtype, (n, k, high)
    wide = np.vstack([np.full(40, 50.0), np.zeros(40), np.full(40, 50.0)])  # 51^40 possible rows
    for got, want in zip(distinct_rows(wide), _unique_rows(wide), strict=True):
        assert np.array_equal(got, want)


def test_distinct_rows_of_an_empty_table():
    table = np.zeros((0, 3))
    distinct, inverse, sizes = distinct_rows(table)
    assert distinct.shape == (0, 3) and inverse.size == 0 and sizes.size == 0
