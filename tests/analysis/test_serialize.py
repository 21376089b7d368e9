"""``reports.serialize.jsonable``: a run's result as plain JSON, whichever path a value takes (its
exact type first, then the isinstance checks)."""

from __future__ import annotations

import json
import math
from collections import OrderedDict

import numpy as np
import pandas as pd

from analysis.reports.serialize import jsonable


def test_every_kind_of_value_becomes_plain_json():
    value = {
        1: [1.5, math.nan, math.inf, -math.inf, 0.0, -0.0],
        "numpy": [np.float64(2.5), np.float64("nan"), np.float32(0.5), np.int64(7), np.bool_(True)],
        "array": np.array([[1.0, np.nan], [3.0, 4.0]]),
        "plain": ("text", 3, True, False, None),
        "ordered": OrderedDict([(2, np.int32(4))]),
        "when": pd.Timestamp("2026-12-05T06:00:00Z"),
    }
    out = jsonable(value)
    assert out == {
        "1": [1.5, None, None, None, 0.0, -0.0],
        "numpy": [2.5, None, 0.5, 7, True],
        "array": [[1.0, None], [3.0, 4.0]],
        "plain": ["text", 3, True, False, None],
        "ordered": {"2": 4},
        "when": "2026-12-05T06:00:00+00:00",
    }
    assert [type(v) for v in out["numpy"]] == [float, type(None), float, int, bool]
    assert [type(v) for v in out["plain"]] == [str, int, bool, bool, type(None)]
    json.dumps(out, allow_nan=False)  # nothing json refuses


def test_records_of_a_section_keep_their_values():
    """The queries section's rows (``to_dict("records")``, the largest part of a result)."""
    table = pd.DataFrame({"query": [1, 2], "label": ["q1", None], "mean_std": [0.5, np.nan], "units": [3, 4]})
    assert jsonable(table.to_dict("records")) == [
        {"query": 1, "label": "q1", "mean_std": 0.5, "units": 3},
        {"query": 2, "label": None, "mean_std": None, "units": 4},
    ]
