"""A level's figures from its distinct count rows and how many units have each (``sizes=``), as the
agreement section computes them (docs/analysis.md, "Scaling"): the same as from the table of every
unit, to the last few bits, and the bootstrap's interval the same to the bit (the same groups, in
the same order, drawn from the same generator)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import metrics as m
from analysis.metrics.shapes import collapse_counts, collapse_groups, distinct_rows


def _table(seed: int, units: int = 5000, k: int = 3) -> np.ndarray:
    """Counts of 0-6 judgments a unit (so some units have fewer than two), leaning to a category."""
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 7, units)
    shares = rng.dirichlet(np.ones(k) * 0.7, units)
    return np.array([rng.multinomial(size, share) for size, share in zip(n, shares, strict=True)], dtype=np.uint8)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_grouped_figures_are_those_of_every_unit(seed):
    table = _table(seed)
    rows, _, sizes = distinct_rows(table)
    assert len(rows) < len(table) // 10  # the point of it
    assert m.fleiss_kappa(rows, sizes=sizes) == pytest.approx(m.fleiss_kappa(table), abs=1e-13)
    np.testing.assert_allclose(
        m.fleiss_kappa_per_category(rows, sizes=sizes), m.fleiss_kappa_per_category(table), rtol=0, atol=1e-13
    )
    labels = ["NS", "SS", "VS"]
    grouped, every = m.pattern_table(rows, labels, sizes=sizes), m.pattern_table(table, labels)
    assert grouped[["pattern", "kind", "count"]].equals(every[["pattern", "kind", "count"]])
    np.testing.assert_allclose(grouped["percent"], every["percent"], rtol=1e-15)
    assert m.kind_summary(rows, sizes=sizes) == m.kind_summary(table)


@pytest.mark.parametrize("seed", [4, 5])
def test_the_grouped_bootstrap_draws_what_the_table_of_every_unit_draws(seed):
    table = _table(seed)
    rows, _, sizes = distinct_rows(table)
    grouped = m.fleiss_kappa_ci(rows, sizes=sizes, rng=np.random.default_rng(seed), n_boot=300)
    every = m.fleiss_kappa_ci(table, rng=np.random.default_rng(seed), n_boot=300)
    assert grouped.value == pytest.approx(every.value, abs=1e-13)
    assert (grouped.ci_low, grouped.ci_high) == (every.ci_low, every.ci_high)


def test_collapsed_distinct_rows_merged_are_the_collapsed_tables(seed=6):
    """The collapsed level's groups: the distinct rows collapsed, equal ones merged, are the distinct
    rows of the collapsed table, with the same sizes."""
    table = _table(seed)
    rows, _, sizes = distinct_rows(table)
    merged, merged_sizes, names = collapse_groups(rows, sizes, ["NS", "SS", "VS"], {"SS": "S", "VS": "S"})
    every, expected_names = collapse_counts(table, ["NS", "SS", "VS"], {"SS": "S", "VS": "S"})
    expected_rows, _, expected_sizes = distinct_rows(every)
    np.testing.assert_array_equal(merged, expected_rows)
    np.testing.assert_array_equal(merged_sizes, expected_sizes)
    assert names == expected_names


def test_rows_of_no_unit_or_fewer_than_two_judgments_count_for_nothing():
    rows = np.array([[2, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 3]])
    assert m.fleiss_kappa(rows, sizes=np.array([3, 2, 9, 0])) == pytest.approx(
        m.fleiss_kappa(np.array([[2, 0, 0]] * 3 + [[1, 1, 0]] * 2))
    )
    assert m.kind_summary(rows, sizes=np.array([3, 2, 9, 0]))["full"]["count"] == 3


@pytest.mark.parametrize(
    ("sizes", "says"),
    [
        (np.array([1, 2]), "for each of the 3 rows"),
        (np.array([1, -1, 2]), "non-negative integer"),
        (np.array([1.0, 2.5, 1.0]), "non-negative integer"),
        (np.array([[1, 1, 1]]), "for each of the 3 rows"),
    ],
)
def test_sizes_that_do_not_fit_the_rows_are_refused(sizes, says):
    rows = np.array([[2, 0, 0], [1, 1, 0], [0, 0, 3]])
    for call in (
        lambda: m.fleiss_kappa(rows, sizes=sizes),
        lambda: m.fleiss_kappa_per_category(rows, sizes=sizes),
        lambda: m.fleiss_kappa_ci(rows, sizes=sizes, rng=np.random.default_rng(0), n_boot=10),
        lambda: m.pattern_table(rows, ["NS", "SS", "VS"], sizes=sizes),
        lambda: m.kind_summary(rows, sizes=sizes),
    ):
        with pytest.raises(ValueError, match=says):
            call()
