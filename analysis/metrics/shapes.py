"""Conversions between the three data shapes of docs/design.md §3.

- long: a DataFrame with one row per judgment, columns ``unit``, ``grader``, ``value``;
- wide: an ``(n_units, n_graders)`` float matrix with NaN for missing;
- counts: an ``(n_units, n_categories)`` table, ``counts[i, j]`` = judgments of unit i in category j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._checks import as_count_table, as_wide, category_codes, check_in_scale, factorize_long, short


def long_to_wide(
    frame: pd.DataFrame,
    *,
    scale: tuple[float, float] | None = None,
) -> tuple[np.ndarray, pd.Index, pd.Index]:
    """Pivot a long frame of numeric values to the wide matrix.

    Parameters
    ----------
    frame : DataFrame with columns ``unit``, ``grader``, ``value`` (numeric), one row per pair.
    scale : the declared ``(low, high)`` of the rating scale; a value outside it is an error.

    Returns
    -------
    wide : (n_units, n_graders) float array, NaN where a grader did not judge a unit.
    units, graders : the row and column labels, sorted.
    """
    unit_codes, units, grader_codes, graders = factorize_long(frame)
    values = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(values).any():
        raise ValueError(f"`frame['value']` must be numeric; got {short(frame['value'][np.isnan(values)].iloc[0])}")
    if scale is not None:
        check_in_scale(values, low=scale[0], high=scale[1], name="frame['value']")
    wide = np.full((len(units), len(graders)), np.nan)
    wide[unit_codes, grader_codes] = values
    return wide, units, graders


def codes_for(values: ArrayLike, categories: Sequence[Any] | None, *, name: str) -> tuple[np.ndarray, list]:
    """Category codes 0..k-1 for ``values`` in the order of ``categories`` (default: sorted labels)."""
    if categories is None:
        categories = sorted(pd.unique(pd.Series(np.asarray(values))).tolist())
    return category_codes(values, categories, name=name), list(categories)


def long_to_counts(
    frame: pd.DataFrame,
    categories: Sequence[Any] | None = None,
) -> tuple[np.ndarray, pd.Index, list]:
    """Count table from a long frame of category labels.

    Returns
    -------
    counts : (n_units, n_categories) int64 array.
    units : sorted unit labels (rows).
    categories : the column labels, in the given order or sorted.
    """
    unit_codes, units, _, _ = factorize_long(frame)
    codes, categories = codes_for(frame["value"], categories, name="frame['value']")
    k = len(categories)
    flat = np.bincount(unit_codes * k + codes, minlength=len(units) * k)
    return flat.reshape(len(units), k), units, categories


def wide_to_counts(ratings: ArrayLike, n_categories: int | None = None) -> np.ndarray:
    """Count table from a wide matrix of integer category codes ``0..k-1`` (NaN missing).

    Returns
    -------
    counts : (n_units, n_categories) float array.
    """
    wide = as_wide(ratings)
    observed = ~np.isnan(wide)
    codes = wide[observed]
    if (codes < 0).any() or (codes != np.round(codes)).any():
        raise ValueError(
            f"`ratings` must hold category codes 0..k-1; got {codes[(codes < 0) | (codes != np.round(codes))][0]!r}"
        )
    k = int(codes.max()) + 1 if n_categories is None else n_categories
    if codes.max() >= k:
        raise ValueError(f"`ratings` has code {short(codes.max())} >= n_categories={k}")
    units = np.nonzero(observed)[0]
    flat = np.bincount(units * k + codes.astype(np.int64), minlength=wide.shape[0] * k)
    return flat.reshape(wide.shape[0], k).astype(float)


def collapse_counts(
    counts: ArrayLike,
    categories: Sequence[Any],
    mapping: Mapping[Any, Any],
) -> tuple[np.ndarray, list]:
    """Merge categories of a count table, e.g. ``{"VS": "S", "SS": "S"}`` turns NS/SS/VS into NS/S.

    Categories not named in ``mapping`` keep their label. The new categories keep the order in which
    they first appear along ``categories``.

    Returns
    -------
    counts : (n_units, n_new_categories) float array.
    categories : the new labels.
    """
    table = as_count_table(counts)
    categories = list(categories)
    if len(categories) != table.shape[1]:
        raise ValueError(f"`categories` has {len(categories)} labels for {table.shape[1]} columns: {short(categories)}")
    unknown = [key for key in mapping if key not in categories]
    if unknown:
        raise ValueError(f"`mapping` names categories that do not exist: {unknown}; categories are {categories}")
    target = [mapping.get(c, c) for c in categories]
    new_codes, new_categories = pd.factorize(pd.Index(target, dtype=object))
    collapsed = np.zeros((table.shape[0], len(new_categories)))
    np.add.at(collapsed.T, new_codes, table.T)
    return collapsed, list(new_categories)


def count_table(rows: ArrayLike, columns: ArrayLike, column_labels: Sequence[Any]) -> pd.DataFrame:
    """How often each (row, column) pair occurs: ``pd.crosstab(rows, columns)`` reindexed to
    ``column_labels`` (absent labels count 0, values outside them are not counted), by counting
    codes. Rows are the sorted distinct ``rows`` (missing ones left out). ``pd.crosstab`` counts
    each row's group in Python: seconds at 10^6 judgments, a minute at 10^7."""
    rows, columns = pd.Series(np.asarray(rows)), pd.Series(np.asarray(columns))
    observed = rows.notna().to_numpy() & columns.notna().to_numpy()
    row_index = pd.Index(np.sort(pd.unique(rows[observed])))
    r = row_index.get_indexer(rows[observed])
    c = pd.Index(list(column_labels)).get_indexer(columns[observed])
    kept = c >= 0
    k = len(column_labels)
    flat = np.bincount(r[kept] * k + c[kept], minlength=len(row_index) * k)
    return pd.DataFrame(flat.reshape(len(row_index), k), index=row_index, columns=list(column_labels))


def collapse_groups(
    rows: np.ndarray, sizes: np.ndarray, categories: Sequence[Any], mapping: Mapping[Any, Any]
) -> tuple[np.ndarray, np.ndarray, list]:
    """``collapse_counts`` of a table given as its distinct ``rows`` (``distinct_rows``) and how many
    units have each: the collapsed table's distinct rows, in ``distinct_rows``' order, how many units
    have each (rows that collapse alike merged), and the new categories. The same groups as
    ``distinct_rows`` of ``collapse_counts`` of the table of every unit, from a pass over the rows."""
    collapsed, new_categories = collapse_counts(rows, categories, mapping)
    merged, into, _ = distinct_rows(collapsed)  # each row's collapsed row among them
    return merged, np.bincount(into, weights=sizes, minlength=len(merged)).astype(np.int64), new_categories


def runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal consecutive ``keys`` starts, and its length (a group's rows when
    each group's rows are together)."""
    change = np.empty(keys.size, dtype=bool)
    change[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return starts, np.diff(np.r_[starts, keys.size])


def distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(table, axis=0, return_inverse=True, return_counts=True)`` of a count table
    (non-negative integers, as ``as_count_table`` gives them): the distinct rows in the same
    lexicographic order, each unit's row among them, and how many units share each.

    Each row is read as one number in mixed radix (a digit per column, the first the most
    significant), which orders rows as ``np.unique`` does; the numbers are counted with
    ``np.bincount`` when there are few possible rows, else sorted. ``np.unique`` with ``axis=0``
    compares rows as records, which took 0.7 of the 3.6 s of the agreement sections at 10^6
    judgments. A table whose rows do not fit in 62 bits goes to ``np.unique``."""
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        return np.unique(table, axis=0, return_inverse=True, return_counts=True)
    radix = table.max(axis=0).astype(np.int64) + 1
    if float(np.prod(radix.astype(float))) >= 2.0**62:
        return np.unique(table, axis=0, return_inverse=True, return_counts=True)
    codes = np.zeros(table.shape[0], dtype=np.int64)
    for j in range(table.shape[1]):
        codes *= radix[j]
        codes += table[:, j].astype(np.int64)
    possible = int(np.prod(radix))
    if possible <= max(1 << 20, 4 * table.shape[0]):
        counts = np.bincount(codes, minlength=possible)
        present = np.flatnonzero(counts)
        position = np.zeros(possible, dtype=np.intp)
        position[present] = np.arange(present.size)
        inverse, sizes = position[codes], counts[present]
        first = np.full(present.size, table.shape[0], dtype=np.intp)
        np.minimum.at(first, inverse, np.arange(table.shape[0]))
    else:
        _, first, inverse, sizes = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
    return table[first], inverse.astype(np.intp).reshape(-1), sizes.astype(np.intp)
