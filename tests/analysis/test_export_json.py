"""The ground-truth JSON writer: the same text as json.dumps of each row, whatever the values."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.export import frame_to_json_objects
from tests.analysis.test_export_csv import tricky_frame


def reference(frame: pd.DataFrame) -> str:
    """What the writer replaces: each row through json.dumps, numpy scalars made Python's."""
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return ", ".join(
        json.dumps(
            {k: v.item() if hasattr(v, "item") else v for k, v in row.items()}, ensure_ascii=False, allow_nan=False
        )
        for row in rows
    )


def trickier_frame() -> pd.DataFrame:
    frame = tricky_frame()
    n = len(frame)
    frame["adjudicated"] = [i % 3 == 0 for i in range(n)]
    frame["adjudicated_value"] = [None if i % 2 else ["VS", 'ü \\ "é"', "7.5"][i % 3] for i in range(n)]
    frame["model_label"] = ["NS" if i % 4 else None for i in range(n)]
    frame["majority_broad"] = pd.Series(["SS"] * n, dtype=object)
    frame["mixed"] = [[None, 1, 1.0, True, "1", {"a": [1, 2]}, np.int64(3), np.float64(0.1)][i % 8] for i in range(n)]
    frame["zeros"] = [-0.0 if i % 2 else 0.0 for i in range(n)]
    frame['tab\tname "q"'] = np.arange(n, dtype=np.int64)
    return frame


def test_it_writes_exactly_what_json_dumps_writes():
    frame = trickier_frame()
    text = frame_to_json_objects(frame)
    assert text == reference(frame)
    back = json.loads("[" + text + "]")
    assert len(back) == len(frame) > 0
    assert back[2]["mean"] == 1e-05 and back[1]["mean"] == 0.1 + 0.2  # floats read back exactly


def test_a_chunk_of_rows_is_the_same_wherever_it_starts():
    frame = trickier_frame()
    assert frame_to_json_objects(frame.iloc[10:20]) == reference(frame.iloc[10:20])


def test_an_empty_frame_writes_nothing():
    assert frame_to_json_objects(trickier_frame().iloc[0:0]) == ""


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_an_infinite_value_is_refused_as_json_dumps_refuses_it(bad):
    frame = pd.DataFrame({"mean": [1.0, bad]})
    with pytest.raises(ValueError, match="not JSON compliant"):
        reference(frame)
    with pytest.raises(ValueError, match="not JSON compliant"):
        frame_to_json_objects(frame)
