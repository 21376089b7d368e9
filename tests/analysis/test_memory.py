"""What keeps a shard's memory bounded (docs/analysis.md, "Scaling"): the judgments sorted a column
at a time, and a shard's large arrays given back to the system once freed."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

from analysis import selectors
from analysis.services import shards, values
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


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def _mapped_bytes(libc: ctypes.CDLL) -> int:
    """What glibc holds in blocks mapped on their own (``mallinfo2().hblkhd``)."""
    libc.mallinfo2.restype = _Mallinfo2
    return libc.mallinfo2().hblkhd


def test_inside_a_large_array_has_its_own_mapping_even_after_a_larger_one_was_freed_and_after_not() -> None:
    libc = values._glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("glibc (2.33 or later) only: elsewhere it does nothing")
    with values.large_allocations_mapped():
        # Without a fixed threshold, freeing a 16 MiB mapped block raises glibc's threshold to 16 MiB,
        # and the 2 MiB array below would come from the heap.
        large = np.ones(16 << 20, dtype=np.uint8)
        del large
        before = _mapped_bytes(libc)
        array = np.ones(2 << 20, dtype=np.uint8)
        assert _mapped_bytes(libc) - before >= 2 << 20
        del array
        assert _mapped_bytes(libc) == before  # given back at once
    # After it, arrays that size come from the heap again, to be used again without a new mapping,
    # and one of 16 MiB is mapped on its own even after a larger one was freed.
    array = np.ones(2 << 20, dtype=np.uint8)
    assert _mapped_bytes(libc) == before
    del array
    large = np.ones(32 << 20, dtype=np.uint8)
    del large
    array = np.ones(16 << 20, dtype=np.uint8)
    assert _mapped_bytes(libc) - before >= 16 << 20
    del array


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
