"""The consensus category of a unit: the majority, with a rule for ties (docs/design.md §5.3).

A tie between the most frequent categories goes to the one nearest the unit's mean position on the
ordered scale (NS = 0, SS = 1, VS = 2 for BROAD), then to the lower one — the same rule as the
numeric majority of :func:`unit_confusability`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_count_table


def consensus_category(counts: ArrayLike, categories: Sequence[Any]) -> list[Any]:
    """The majority category of each unit, ties toward the mean position, then the lower.

    Parameters
    ----------
    counts : (n_units, n_categories) judgment counts, columns in scale order.
    categories : the n_categories labels, in scale order.

    Returns
    -------
    list of n_units labels; None for a unit without judgments.
    """
    table = as_count_table(counts)
    if table.shape[1] != len(categories):
        raise ValueError(f"`counts` has {table.shape[1]} columns but {len(categories)} categories were given")
    n = table.sum(axis=1)
    positions = np.arange(table.shape[1], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (table @ positions) / n
    top = table == table.max(axis=1, keepdims=True)
    distance = np.where(top, np.abs(positions[None, :] - mean[:, None]), np.inf)
    # argmin takes the first (lowest) of equally near categories.
    chosen = np.argmin(np.round(distance, 12), axis=1)
    return [categories[c] if k > 0 else None for c, k in zip(chosen, n, strict=True)]
