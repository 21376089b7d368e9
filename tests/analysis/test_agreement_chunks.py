"""The agreement sections computed a slice of whole units at a time (``values.unit_chunks``) equal
them computed over all judgments at once, on awkward judgments: units without a number, labels
outside the scale, units of one judgment, several graders' gaps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.services import values
from analysis.services.sections.agreement import agreement_report
from analysis.services.values import BROAD, BROAD_COLLAPSE, ValueSpec, unit_chunks, with_values
from grading.models.choices import Scheme


def _judgments(seed: int, n_units: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for unit in range(100, 100 + n_units):
        for grader in sorted(rng.choice(np.arange(1, 7), size=int(rng.integers(1, 6)), replace=False)):
            broad = rng.choice([*BROAD, None])
            fine = float(rng.integers(0, 11)) if rng.random() > 0.1 else np.nan
            rows.append((unit, int(grader), unit // 7, broad, fine))
    frame = pd.DataFrame(rows, columns=["unit", "grader", "query", "broad", "fine"])
    return with_values(frame, ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval"))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slices_give_the_same_sections_and_units(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _judgments(seed)
    spec = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    whole = agreement_report(frame, spec, n_boot=50, confidence=0.9, seed=3)
    monkeypatch.setattr(values, "CHUNK_ROWS", 7)
    assert len(unit_chunks(frame)) > 10
    sliced = agreement_report(frame, spec, n_boot=50, confidence=0.9, seed=3)
    assert _same(sliced[0], whole[0])
    assert sliced[1].equals(whole[1]) and list(sliced[1].dtypes) == list(whole[1].dtypes)


def test_unit_chunks_keep_units_whole_and_leave_unsorted_frames_whole() -> None:
    frame = pd.DataFrame({"unit": [1, 1, 1, 2, 3, 3, 4, 4, 4, 4, 5]})
    chunks = unit_chunks(frame, rows=2)
    assert [(c.start, c.stop) for c in chunks] == [(0, 4), (4, 6), (6, 10), (10, 11)]
    assert unit_chunks(frame.iloc[::-1], rows=2) == [slice(0, 11)]


def test_heap_release_runs_wherever_it_is_called() -> None:
    values.heap_release()  # glibc's malloc_trim, or nothing where there is none
