"""The consensus category: majority, ties toward the mean position, then the lower."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.confusability import unit_confusability
from analysis.metrics.consensus import consensus_category

BROAD = ["NS", "SS", "VS"]


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ([3, 1, 0], "NS"),  # a plain majority
        ([2, 0, 2], "NS"),  # NS and VS tie, both 1 from the mean (SS): the lower
        ([1, 2, 2], "SS"),  # mean 1.2: SS is nearer than VS
        ([0, 1, 1], "SS"),  # mean 1.5: equally near, the lower
        ([0, 0, 0], None),  # no judgments
    ],
)
def test_worked_examples(counts, expected):
    assert consensus_category([counts], BROAD) == [expected]


def test_it_agrees_with_the_numeric_majority_of_the_positions():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 4, size=(300, 3))
    counts[counts.sum(axis=1) == 0, 1] = 1
    rows = [(u, g, float(c)) for u in range(len(counts)) for c in range(3) for g in range(counts[u, c])]
    long = pd.DataFrame(rows, columns=["unit", "grader", "value"])
    long["grader"] = long.groupby("unit").cumcount()
    majority = unit_confusability(long)["majority"].to_numpy().astype(int)
    assert consensus_category(counts, BROAD) == [BROAD[m] for m in majority]


def test_it_checks_the_categories():
    with pytest.raises(ValueError, match="3 columns but 2 categories"):
        consensus_category([[1, 0, 0]], ["a", "b"])
