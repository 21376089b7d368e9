"""Turning metric output into plain JSON: AnalysisRun.result, and the commands' reports."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

# Values that are plain JSON as they are, found by their exact type first: a run's result holds
# hundreds of thousands of them (a row per query at 10^7 judgments), each of which went through five
# isinstance checks.
_AS_THEY_ARE = frozenset({str, int, bool, type(None)})


def jsonable(value: Any) -> Any:
    """Plain JSON: numpy scalars and arrays to Python, NaN/inf to None (PostgreSQL's jsonb has no NaN)."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind in _AS_THEY_ARE:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value
