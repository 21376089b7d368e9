"""The ground-truth CSV writer: the same text as pandas' to_csv, whatever the values."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from analysis.export import frame_to_csv


def tricky_frame(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    floats = rng.normal(size=n) * 10.0 ** rng.integers(-8, 18, size=n)
    floats[::7] = np.nan
    floats[1:4] = [0.1 + 0.2, 1e-05, 3.0]
    return pd.DataFrame(
        {
            "unit": [f"u{i}" if i % 5 else f'say "hi", {i}\nnext' for i in range(n)],
            "unit_id": np.arange(n, dtype=np.int64) * 1_000_003,
            "query": [None if i % 4 == 0 else f"q{i % 3}" for i in range(n)],
            "n": rng.integers(1, 6, size=n),
            "mean": floats,
            "std": np.round(rng.random(n), 3),
            "n_ns": pd.array([None if i % 6 == 0 else i % 4 for i in range(n)], dtype="Int64"),
            "distribution": [None if i % 3 else '{"bad": 1, "good": 2}' for i in range(n)],
        }
    )


def test_it_writes_exactly_what_pandas_writes():
    frame = tricky_frame()
    assert frame_to_csv(frame) == frame.to_csv(index=False)


def test_it_reads_back_to_the_same_doubles():
    frame = tricky_frame()
    back = pd.read_csv(io.StringIO(frame_to_csv(frame)), float_precision="round_trip")
    assert len(back) == len(frame) > 0
    for a, b in zip(frame["mean"], back["mean"], strict=True):
        assert (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("columns", [["unit", "n"], ["mean"]])
def test_an_empty_frame_is_just_the_header(columns):
    frame = tricky_frame().iloc[0:0][columns]
    assert frame_to_csv(frame) == frame.to_csv(index=False)
