"""What keeps a shard's memory bounded (docs/analysis.md, "Scaling"): the judgments sorted a column
at a time, and a shard's large arrays given back to the system once freed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

from analysis import selectors
from analysis.services import shards
from grading.models import Judgment
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign


def _judgments(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    fine = rng.integers(0, 101, n) / 10
    fine[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame(
        {
            # Few units and graders, so that many rows tie on (unit, grader) and the sort's stability shows.
            "unit": rng.integers(1, 30, n),
            "grader": rng.integers(1, 4, n),
            "query": rng.integers(1, 5, n),
            "broad": rng.choice(np.array(["NS", "SS", "VS", None], dtype=object), n),
            "fine": fine,
            "label": np.full(n, None, dtype=object),
        }
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_judgments_are_sorted_as_pandas_sorts_them_ties_in_their_order(seed: int) -> None:
    frame = _judgments(500, seed)
    expected = frame.sort_values(["unit", "grader"], kind="stable", ignore_index=True)
    got = selectors._sorted_by_unit_grader(frame.copy())
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert isinstance(got.index, pd.RangeIndex)


def test_no_judgment_sorts_to_the_same_empty_frame() -> None:
    frame = _judgments(0, 0)
    expected = frame.sort_values(["unit", "grader"], kind="stable", ignore_index=True)
    pd.testing.assert_frame_equal(selectors._sorted_by_unit_grader(frame.copy()), expected, check_exact=True)


# Run in a process of its own: glibc serves a large allocation from a free chunk of its heap when it
# has one, whatever the threshold, and a process that ran other tests has them.
_MAPPINGS = """
import ctypes, json
import django
import numpy as np

django.setup()
from analysis.services import values


class Mallinfo2(ctypes.Structure):
    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in names.split()]


libc = values._glibc()
if libc is None or not hasattr(libc, "mallinfo2"):
    print(json.dumps(None))
    raise SystemExit
libc.mallinfo2.restype = Mallinfo2


def mapped():  # what glibc holds in blocks mapped on their own
    return libc.mallinfo2().hblkhd


def grows(size, freed_before):
    # Freeing a larger mapped block first would raise glibc's own threshold above ``size``.
    large = np.ones(freed_before, dtype=np.uint8)
    del large
    before = mapped()
    array = np.ones(size, dtype=np.uint8)
    grown = mapped() - before
    del array
    return [grown, mapped() - before]


with values.large_allocations_mapped():
    inside = grows(2 << 20, 16 << 20)
after = {"small": grows(2 << 20, 16 << 20), "column": grows(16 << 20, 32 << 20), "large": grows(96 << 20, 128 << 20)}
print(json.dumps({"inside": inside, **after}))
"""


def test_inside_a_large_array_has_its_own_mapping_even_after_a_larger_one_was_freed_and_after_not() -> None:
    done = subprocess.run([sys.executable, "-c", _MAPPINGS], capture_output=True, text=True, check=True, timeout=120)
    grown = json.loads(done.stdout.splitlines()[-1])
    if grown is None:
        pytest.skip("glibc (2.33 or later) only: elsewhere it does nothing")
    assert grown["inside"][0] >= 2 << 20 and grown["inside"][1] == 0  # mapped, and given back at once
    # After it, arrays of a few MB and per-unit columns of 16 MiB come from the heap, to be used
    # again without a new mapping, and one of 96 MiB is mapped on its own even after a larger one
    # was freed.
    assert grown["small"][0] == 0 and grown["column"][0] == 0
    assert grown["large"][0] >= 96 << 20 and grown["large"][1] == 0


@pytest.mark.django_db
def test_a_shard_reads_inside_and_leaves_it_whatever_happens(monkeypatch) -> None:
    campaign = make_campaign(n_queries=2, n_candidates=3, graders=3, overlap=3)
    judge_broad_fine(campaign, seed=3)
    calls: list[str] = []

    @contextmanager
    def recorded() -> Iterator[None]:
        calls.append("in")
        try:
            yield
        finally:
            calls.append("out")

    monkeypatch.setattr(shards, "large_allocations_mapped", recorded)
    real = selectors.unit_events_frame
    monkeypatch.setattr(selectors, "unit_events_frame", lambda **kw: calls.append("read") or real(**kw))
    part = shards.shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5)
    assert calls == ["in", "read", "out"] and part.rows == Judgment.objects.filter(campaign=campaign).count()

    def failing(**kw: object) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(selectors, "unit_events_frame", failing)
    with pytest.raises(RuntimeError):
        shards.shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5)
    assert calls[-2:] == ["in", "out"]
