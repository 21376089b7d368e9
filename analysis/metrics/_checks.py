"""Input validation shared by the public metric functions.

Every public function calls one of these once, at its entry, so the numeric code below it can assume
clean arrays. Errors are ``ValueError`` naming the argument and showing the offending value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

T = TypeVar("T")


class Undefined(float):
    """A NaN that says why the statistic is undefined.

    It behaves as ``float("nan")`` everywhere (``np.isnan`` is true, it serialises as NaN) and carries
    the explanation in ``.reason``, e.g. "all judgments are identical (expected agreement is 1)".
    """

    reason: str

    def __new__(cls, reason: str) -> Undefined:
        obj = super().__new__(cls, float("nan"))
        obj.reason = reason
        return obj

    def __repr__(self) -> str:
        return f"nan ({self.reason})"


def reason_of(value: float) -> str | None:
    """The reason a statistic is undefined, or None when it is a number."""
    return getattr(value, "reason", None)


def short(value: Any, limit: int = 80) -> str:
    """A repr cut to ``limit`` characters, for error messages (numpy scalars shown as Python ones)."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def choice(value: str, options: Mapping[str, T], *, name: str) -> T:
    """Look ``value`` up in ``options``; the error lists the valid choices."""
    try:
        return options[value]
    except (KeyError, TypeError):
        valid = ", ".join(repr(k) for k in options)
        raise ValueError(f"`{name}` must be one of {valid}; got {short(value)}") from None


def _as_2d_float(values: ArrayLike, *, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"`{name}` must be a rectangular numeric array (ragged or non-numeric input): {short(values)}"
        ) from exc
    if array.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"`{name}` is empty (shape {array.shape})")
    return array


def as_count_table(counts: ArrayLike, *, name: str = "counts") -> np.ndarray:
    """An ``(n_units, n_categories)`` table of non-negative integer counts, as float."""
    raw = np.asarray(counts) if not isinstance(counts, list) else counts
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "iu" and raw.ndim == 2 and raw.size:
        bad = raw < 0  # integer input: only the sign can be wrong
        table = raw.astype(float)
    else:
        table = _as_2d_float(counts, name=name)
        bad = ~np.isfinite(table) | (table < 0) | (table != np.round(table))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"`{name}` must hold non-negative integer counts; {name}[{row}, {col}] = {table[row, col]:g}")
    return table


def as_wide(ratings: ArrayLike, *, name: str = "ratings") -> np.ndarray:
    """An ``(n_units, n_graders)`` float matrix, NaN for missing; infinities are rejected."""
    wide = _as_2d_float(ratings, name=name)
    if np.isinf(wide).any():
        row, col = np.argwhere(np.isinf(wide))[0]
        raise ValueError(f"`{name}` must be finite or NaN; {name}[{row}, {col}] = {wide[row, col]:g}")
    if np.isnan(wide).all():
        raise ValueError(f"`{name}` holds no ratings (all NaN, shape {wide.shape})")
    return wide


def as_labels(values: ArrayLike, *, name: str, dtype: Any = None) -> np.ndarray:
    """A non-empty 1-D array."""
    array = np.asarray(values, dtype=dtype)
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"`{name}` is empty")
    return array


def as_long(
    frame: pd.DataFrame, *, name: str = "frame", columns: Sequence[str] = ("unit", "grader", "value")
) -> pd.DataFrame:
    """A non-empty DataFrame with the given columns and no missing values in them."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`{name}` must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"`{name}` lacks column(s) {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"`{name}` is empty")
    for column in columns:
        if frame[column].hasnans:
            row = frame.index[np.argmax(frame[column].isna().to_numpy())]
            raise ValueError(f"`{name}` has a missing {short(column)} in row {short(row)}")
    return frame


def sorted_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(column, sort=True)``, with a hash-free path for compact integer ids."""
    values = column.to_numpy()
    if values.dtype.kind in "iu" and values.size:
        low, high = values.min(), values.max()
        if int(high) - int(low) <= 4 * values.size:  # e.g. database ids: rank by a presence table
            present = np.zeros(int(high) - int(low) + 1, dtype=bool)
            offset = (values - low).astype(np.int64)
            present[offset] = True
            rank = np.cumsum(present) - 1
            return rank[offset], pd.Index(np.flatnonzero(present) + low)
    return pd.factorize(column, sort=True)


def factorize_long(
    frame: pd.DataFrame,
    *,
    name: str = "frame",
) -> tuple[np.ndarray, pd.Index, np.ndarray, pd.Index]:
    """Unit and grader codes of a long frame (sorted labels), with one judgment per (unit, grader).

    Returns
    -------
    unit_codes, units, grader_codes, graders
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`{name}` must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in ("unit", "grader", "value") if c not in frame.columns]
    if missing:
        raise ValueError(f"`{name}` lacks column(s) {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"`{name}` is empty")
    unit_codes, units = sorted_codes(frame["unit"])
    grader_codes, graders = sorted_codes(frame["grader"])
    for column, codes in (("unit", unit_codes), ("grader", grader_codes)):
        if codes.min() < 0:  # factorize marks missing values with -1
            raise ValueError(f"`{name}` has a missing {column!r} in row {short(frame.index[np.argmin(codes)])}")
    key = unit_codes.astype(np.int64) * len(graders) + grader_codes
    seen = np.bincount(key)
    if seen.max() > 1:
        row = frame.iloc[int(np.nonzero(seen[key] > 1)[0][1])]
        raise ValueError(
            f"`{name}` has more than one judgment for unit {short(row['unit'])} by grader {short(row['grader'])}"
        )
    return unit_codes, units, grader_codes, graders


def check_in_scale(values: np.ndarray, *, low: float, high: float, name: str) -> None:
    """Raise when a (non-NaN) value lies outside the declared scale ``[low, high]``."""
    outside = ~np.isnan(values) & ((values < low) | (values > high))
    if outside.any():
        raise ValueError(f"`{name}` has a value outside the scale [{low}, {high}]: {values[outside].flat[0]:g}")


def category_positions(values: ArrayLike, categories: Sequence[Any], *, outside: int = -1) -> np.ndarray:
    """Each value's position in ``categories``, -1 for a missing value or one outside them:
    ``pd.Index(categories).get_indexer(values)``, found by factorizing the values (a hash table of
    the few distinct ones) rather than hashing every value into a table of its own (400 MB for 10^7
    judgments). int8 when the categories are fewer than 127. ``outside``: what a value outside them
    (not a missing one) is given instead of -1."""
    codes, uniques = pd.factorize(np.asarray(values) if not isinstance(values, pd.Series) else values)
    return factorized_positions(codes, uniques, categories, outside=outside)


def factorized_positions(
    codes: np.ndarray, uniques: Any, categories: Sequence[Any], *, outside: int = -1
) -> np.ndarray:
    """``category_positions`` of values already factorized (``pd.factorize``'s codes and uniques):
    a caller that needs the factorization too (the spill of a slice's text) makes it once."""
    positions = pd.Index(list(categories)).get_indexer(pd.Index(uniques))
    positions[positions < 0] = outside
    lookup = np.append(positions, -1).astype(np.int8 if len(categories) < 127 else np.int64)
    return lookup[codes]  # factorize's -1 (missing) takes the appended -1


def category_codes(values: ArrayLike, categories: Sequence[Any], *, name: str) -> np.ndarray:
    """Codes 0..k-1 of ``values`` in the order of ``categories``; raise on an undeclared value."""
    known = pd.Index(list(categories))
    if known.has_duplicates:
        raise ValueError(f"`categories` has duplicates: {short(list(categories))}")
    codes = category_positions(values, categories)
    unplaced = codes < 0
    if unplaced.any():
        missing = pd.isna(np.asarray(values))
        if missing.any():
            raise ValueError(f"`{name}` has a missing value at position {int(np.argmax(missing))}")
        raise ValueError(
            f"`{name}` has a value outside the declared categories {list(categories)}: "
            f"{short(np.asarray(values)[np.argmax(unplaced)])}"
        )
    return codes.astype(np.int64)


def as_rng(rng: np.random.Generator) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"`rng` must be a numpy.random.Generator (np.random.default_rng(seed)); got {short(rng)}")
    return rng


def as_positive_int(value: int, *, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer, got {short(value)}")
    return int(value)
