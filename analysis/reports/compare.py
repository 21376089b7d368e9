"""Two analysis runs' results side by side: where they differ, as readable paths.

A sharded run must give a one-process run's figures (docs/analysis.md): these functions say which
figures differ, and by what. Numbers compare within a tolerance (floating-point sums in another
order differ in the last bits); everything else compares exactly.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from numbers import Real
from typing import Any

from analysis import unit_blocks
from analysis.models import AnalysisRun

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNIT_FIELDS = [c for c in unit_blocks.COLUMNS if c != "unit"]


def results_differences(a: Any, b: Any, *, tolerance: float = 1e-9) -> list[str]:
    """Where two result documents differ: ``["agreement.levels[0].kappa.value: 0.4121 != 0.4122", ...]``.

    The documents are JSON-like (dicts, lists, strings, numbers, booleans, None). Numbers x and y
    are equal when |x − y| ≤ tolerance · max(1, |x|, |y|) (relative for large numbers, absolute for
    small ones); NaN equals NaN and None (a stored result holds NaN as None). Anything else must be
    equal, and of the same kind. An empty list: the documents are the same.
    """
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be a number ≥ 0; got {tolerance!r}")
    return list(_differences(a, b, "", tolerance))


def unit_results_differences(run_a: AnalysisRun | int, run_b: AnalysisRun | int, tolerance: float = 1e-9) -> list[str]:
    """Where two runs' per-unit results (``unit_blocks``) differ, unit by unit, as ``results_differences``
    compares values: ``["unit 17.mean: 2.5 != 2.75", "unit 18: only in the first run", ...]``.
    The units are read in unit order, a block at a time, so that 10^6 units fit in memory."""
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be a number ≥ 0; got {tolerance!r}")
    found = []
    rows_a, rows_b = _unit_rows(run_a), _unit_rows(run_b)
    row_a, row_b = next(rows_a, None), next(rows_b, None)
    while row_a is not None or row_b is not None:
        if row_b is None or (row_a is not None and row_a[0] < row_b[0]):
            found.append(f"unit {row_a[0]}: only in the first run")
            row_a = next(rows_a, None)
        elif row_a is None or row_b[0] < row_a[0]:
            found.append(f"unit {row_b[0]}: only in the second run")
            row_b = next(rows_b, None)
        else:
            if row_a[1] != row_b[1]:  # most rows are the same to the bit: compared at C speed
                found += _differences(_named(row_a[1]), _named(row_b[1]), f"unit {row_a[0]}", tolerance)
            row_a, row_b = next(rows_a, None), next(rows_b, None)
    return found


def _unit_rows(run: AnalysisRun | int) -> Iterator[tuple[int, tuple[Any, ...]]]:
    run_id = run if isinstance(run, int) else run.pk
    for block in unit_blocks.RunUnits(run_id).blocks():
        block = block.astype(object).where(block.notna(), None)  # missing as None: equal rows compare equal
        for unit_id, *values in block.itertuples(index=False, name=None):
            yield int(unit_id), tuple(values)


def _named(values: tuple[Any, ...]) -> dict[str, Any]:
    named = dict(zip(_UNIT_FIELDS, values, strict=True))
    if named["distribution"] is not None:  # stored as JSON text: compared as what it says
        named["distribution"] = json.loads(named["distribution"])
    return named


def _differences(a: Any, b: Any, path: str, tolerance: float) -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            where = _key_path(path, key)
            if key not in b:
                yield f"{where}: only in the first"
            elif key not in a:
                yield f"{where}: only in the second"
            else:
                yield from _differences(a[key], b[key], where, tolerance)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path or '(top)'}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            yield from _differences(x, y, f"{path}[{i}]", tolerance)
    elif not _same(a, b, tolerance):
        yield f"{path or '(top)'}: {_show(a)} != {_show(b)}"


def _same(a: Any, b: Any, tolerance: float) -> bool:
    if _is_nan(a) or _is_nan(b):
        return _is_nan(a) and _is_nan(b)
    if _is_number(a) and _is_number(b):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return a == b or abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))
    return type(a) is type(b) and a == b


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _is_nan(value: Any) -> bool:
    """None or a float NaN: how a result holds a figure that could not be computed."""
    return value is None or (_is_number(value) and math.isnan(value))


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str) and _NAME.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
