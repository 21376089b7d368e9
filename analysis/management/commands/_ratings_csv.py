"""Read a long ratings CSV (``unit,grader,value`` or ``unit,grader,broad,fine``, optional ``query``).

Crowd files are read too: crowd-kit's ``worker,task,label`` (recognised by its header), or any three
columns named as (grader, unit, value), e.g. a Toloka export's
``ASSIGNMENT:worker_id,INPUT:item,OUTPUT:result``. Errors name the line and the field as the file
names it: ``RatingsFileError("line 7, field 'label': 'x' is not one of a,b")``.
Line numbers count the header as line 1 (a quoted field spanning lines would shift them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REQUIRED = {
    "categorical": ("unit", "grader", "value"),
    "numeric": ("unit", "grader", "value"),
    "broad_fine": ("unit", "grader", "broad", "fine"),
}
FINE_SCALE = (0.0, 10.0)
CROWDKIT_COLUMNS = ("worker", "task", "label")


class RatingsFileError(ValueError):
    """A malformed ratings file; the message names the line and field."""


def read_ratings_csv(
    path: str | Path,
    *,
    scheme: str,
    categories: Sequence[Any] | None = None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The judgments of a ratings CSV as a long DataFrame (values as str, or float where numeric).

    ``columns``: the file's names of the grader, unit and value columns (a crowd file); without it a
    header ``worker,task,label`` (crowd-kit's) is read so, and any other as ``unit,grader,value``.
    """
    required = REQUIRED[scheme]
    if columns is None and _header_is_crowdkit(path):
        columns = CROWDKIT_COLUMNS
    if columns is not None:
        if scheme == "broad_fine":
            raise RatingsFileError(
                f"{path}: a crowd file has one label column; read it with --scheme categorical (or numeric)"
            )
        if len(columns) != 3 or len(set(columns)) != 3 or not all(columns):
            raise RatingsFileError(f"--columns names three different columns WORKER,TASK,LABEL; got {list(columns)}")
    ours = dict(zip(columns or (), ("grader", "unit", "value"), strict=False))
    try:
        frame = read_table_csv(
            path,
            required,
            optional=("query",) if columns is None else (),
            needs=f"a {scheme} file needs {','.join(required)}" if columns is None else "",
            rows="judgments",
            rename=ours,
        )
        _check_values(frame, path, scheme, categories)
        _check_unique(frame, path)
    except RatingsFileError as exc:
        raise RatingsFileError(_theirs(str(exc), {v: k for k, v in ours.items()})) from None
    return frame


def _header_is_crowdkit(path: str | Path) -> bool:
    try:
        header = pd.read_csv(path, nrows=0, dtype=str, skipinitialspace=True).columns
    except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError):
        return False  # the full read reports what is wrong
    names = {str(c).strip() for c in header}
    return set(CROWDKIT_COLUMNS) <= names and not {"unit", "grader"} & names


def _theirs(message: str, names: dict[str, str]) -> str:
    """A message about our columns, with the file's names of them."""
    if not names:
        return message
    message = re.sub(r"field '(\w+)'", lambda m: f"field {names.get(m[1], m[1])!r}", message)
    return message.replace("fields 'unit','grader'", f"fields {names['unit']!r},{names['grader']!r}").replace(
        "expected unit,grader,value", f"expected {names['grader']},{names['unit']},{names['value']}"
    )


def read_table_csv(
    path: str | Path,
    required: Sequence[str],
    *,
    optional: Sequence[str] = (),
    numeric: Sequence[str] = (),
    needs: str = "",
    rows: str = "rows",
    rename: dict[str, str] | None = None,
) -> pd.DataFrame:
    """A CSV's ``required`` (and present ``optional``) columns as stripped strings, none empty, the
    ``numeric`` ones parsed as finite floats. Errors name the file, the line and the field."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False, skipinitialspace=True)
    except FileNotFoundError:
        raise RatingsFileError(f"{path}: no such file") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise RatingsFileError(f"{path}: {str(exc).strip()}") from None
    except pd.errors.EmptyDataError:
        raise RatingsFileError(f"{path}: the file is empty (expected a header line)") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if rename:
        frame = frame.drop(columns=[c for c in rename.values() if c in frame.columns and c not in rename])
        frame = frame.rename(columns=rename)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise RatingsFileError(
            f"{path}: line 1 (header) lacks field {missing[0]!r}; {needs or 'expected ' + ','.join(required)}"
        )
    columns = [*required, *(c for c in optional if c in frame.columns)]
    frame = frame[columns].apply(lambda column: column.str.strip())
    if frame.empty:
        raise RatingsFileError(f"{path}: no {rows} after the header")
    _check_filled(frame, path)
    for column in numeric:
        frame[column] = _numbers(frame, path, column)
    return frame


def _line(frame: pd.DataFrame, mask: np.ndarray) -> int:
    return int(frame.index[np.argmax(mask)]) + 2


def _check_filled(frame: pd.DataFrame, path: str | Path) -> None:
    for column in frame.columns:
        empty = frame[column].isna().to_numpy() | (frame[column] == "").to_numpy()
        if empty.any():
            raise RatingsFileError(f"{path}: line {_line(frame, empty)}, field {column!r}: empty")


def _numbers(frame: pd.DataFrame, path: str | Path, column: str) -> pd.Series:
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna().to_numpy() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        raise RatingsFileError(
            f"{path}: line {_line(frame, bad)}, field {column!r}: {frame[column].to_numpy()[bad][0]!r} is not a number"
        )
    return values


def _check_values(frame: pd.DataFrame, path: str | Path, scheme: str, categories: Sequence[Any] | None) -> None:
    numeric = {"numeric": "value", "broad_fine": "fine"}.get(scheme)
    if numeric:
        values = _numbers(frame, path, numeric)
        if scheme == "broad_fine":
            outside = ((values < FINE_SCALE[0]) | (values > FINE_SCALE[1])).to_numpy()
            if outside.any():
                raise RatingsFileError(
                    f"{path}: line {_line(frame, outside)}, field 'fine': "
                    f"{values.to_numpy()[outside][0]:g} is outside the scale 0-10"
                )
        frame[numeric] = values
    label = {"categorical": "value", "broad_fine": "broad"}.get(scheme)
    if label and categories is not None:
        unknown = ~frame[label].isin([str(c) for c in categories]).to_numpy()
        if unknown.any():
            raise RatingsFileError(
                f"{path}: line {_line(frame, unknown)}, field {label!r}: "
                f"{frame[label].to_numpy()[unknown][0]!r} is not one of "
                f"{','.join(map(str, categories))}"
            )


def _check_unique(frame: pd.DataFrame, path: str | Path) -> None:
    repeated = frame.duplicated(["unit", "grader"]).to_numpy()
    if repeated.any():
        row = frame.iloc[int(np.argmax(repeated))]
        first = frame[(frame["unit"] == row["unit"]) & (frame["grader"] == row["grader"])].index[0] + 2
        raise RatingsFileError(
            f"{path}: line {_line(frame, repeated)}, fields 'unit','grader': second "
            f"judgment of unit {row['unit']!r} by grader {row['grader']!r} "
            f"(first on line {first})"
        )
