"""What a campaign's judgments mean to the metrics: a category per judgment, a number, or both.

- broad_fine: BROAD (NS < SS < VS; collapsed to NS / S for 2 levels) and FINE (0–10, interval);
- numeric: the score (interval); its scale points are categories too when there are at most 11;
- categorical: the label (ordinal positions when the labels are ordered, else nominal codes);
- pairwise: the verdict (B < equal < A);
- ordering: no per-unit values (orderings are analysed per query).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics import category_positions, factorized_positions
from analysis.selectors import JUDGMENT_COLUMNS
from grading.models import Campaign
from grading.models.choices import Scheme

BROAD = ["NS", "SS", "VS"]
OUTSIDE = -2  # the place of a category outside the scale (values.with_values); none is -1
BROAD_COLLAPSE = {"VS": "S", "SS": "S"}
MAX_NUMERIC_CATEGORIES = 11


@dataclass(frozen=True)
class ValueSpec:
    """How to read judgments: the category column and its levels, the numeric column and its level."""

    scheme: str
    cat_column: str | None = None
    categories: list[Any] = field(default_factory=list)
    collapse: dict[Any, Any] | None = None
    num_column: str | None = None
    num_label: str = ""
    alpha_level: str = "interval"
    ordered: bool = True

    @property
    def has_categories(self) -> bool:
        return self.cat_column is not None

    @property
    def has_numbers(self) -> bool:
        return self.num_column is not None


def value_spec(campaign: Campaign) -> ValueSpec:
    params = campaign.scheme_params or {}
    if campaign.scheme == Scheme.BROAD_FINE:
        return ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    if campaign.scheme == Scheme.NUMERIC:
        lo, hi, step = float(params.get("min", 0)), float(params.get("max", 10)), float(params.get("step", 1))
        points = int(round((hi - lo) / step)) + 1
        if points <= MAX_NUMERIC_CATEGORIES:
            grid = [round(lo + i * step, 10) for i in range(points)]
            return ValueSpec(Scheme.NUMERIC, "score", grid, None, "score", "score", "interval")
        return ValueSpec(Scheme.NUMERIC, None, [], None, "score", "score", "interval")
    if campaign.scheme == Scheme.CATEGORICAL:
        ordered = bool(params.get("ordered", False))
        return ValueSpec(
            Scheme.CATEGORICAL,
            "label",
            list(params.get("labels", [])),
            None,
            "label_position",
            "label position",
            "ordinal" if ordered else "nominal",
            ordered,
        )
    if campaign.scheme == Scheme.PAIRWISE:
        return ValueSpec(
            Scheme.PAIRWISE,
            "verdict",
            ["B", "equal", "A"],
            None,
            "verdict_position",
            "verdict (B=0, equal=1, A=2)",
            "ordinal",
        )
    return ValueSpec(campaign.scheme)


# Per scheme: the judgment column read as a category and the one read as a number (None: the scheme
# has none). The other value columns of ``selectors.JUDGMENT_COLUMNS`` are empty in its campaigns.
ANSWER_COLUMNS = {
    Scheme.BROAD_FINE: ("broad", "fine"),
    Scheme.NUMERIC: (None, "score"),
    Scheme.CATEGORICAL: ("label", None),
    Scheme.PAIRWISE: ("verdict", None),
}


def scheme_columns(frame: pd.DataFrame, scheme: str) -> pd.DataFrame:
    """``frame`` (``selectors.judgments_frame`` rows) without the value columns ``scheme`` leaves
    empty: each is as large as the frame's ids (80 MB at 10^7 judgments), and every filter of the
    judgments would copy it."""
    used = ["unit", "grader", "query", *(c for c in ANSWER_COLUMNS.get(scheme, ()) if c)]
    return frame.drop(columns=[c for c in JUDGMENT_COLUMNS if c not in used and c in frame.columns])


def with_values(
    judgments: pd.DataFrame,
    spec: ValueSpec,
    *,
    copy: bool = True,
    only: frozenset[str] | None = None,
    factorized: tuple[np.ndarray, Any] | None = None,
) -> pd.DataFrame:
    """The long frame with ``cat``, ``place`` and ``num`` columns added (rows lacking them kept, as
    NaN/None; ``place``: the category's place in the scale, -1 for none, ``OUTSIDE`` for a category
    outside it).

    ``label_position`` / ``verdict_position`` columns are derived from the label's place in the scale.
    ``copy=False`` adds them to ``judgments`` itself (a frame no one else reads: at 10^7 judgments a
    copy is most of a gigabyte). ``only``: just these of the three (``value_sources`` names the
    answer columns each needs). ``factorized``: ``pd.factorize`` of the categorical answer column
    (``spec.cat_column``), made by a caller that needs it too, so that it is not made twice.
    """
    frame = judgments.copy() if copy else judgments
    if spec.cat_column is not None and (only is None or {"cat", "place"} & only):
        cat = frame["score"].round(10) if spec.scheme == Scheme.NUMERIC else frame[spec.cat_column]
        if only is None or "cat" in only:
            frame["cat"] = cat
        if only is None or "place" in only:
            frame["place"] = (
                category_positions(cat, spec.categories, outside=OUTSIDE)
                if factorized is None or spec.scheme == Scheme.NUMERIC
                else factorized_positions(*factorized, spec.categories, outside=OUTSIDE)
            )
    if only is not None and "num" not in only:
        return frame
    if spec.num_column in ("label_position", "verdict_position"):
        positions = {label: float(i) for i, label in enumerate(spec.categories)}
        frame["num"] = frame[spec.cat_column].map(positions).astype(float)
    elif spec.num_column is not None:
        frame["num"] = frame[spec.num_column].astype(float)
    return frame


def value_sources(spec: ValueSpec, value: str) -> set[str]:
    """The answer columns ``with_values`` derives the value column ``value`` ("cat", "place" or "num")
    from."""
    if value in ("cat", "place"):
        return {"score"} if spec.scheme == Scheme.NUMERIC and spec.cat_column else {spec.cat_column} - {None}
    if spec.num_column in ("label_position", "verdict_position"):
        return {spec.cat_column}
    return {spec.num_column} - {None}


def valued(frame: pd.DataFrame, spec: ValueSpec) -> pd.DataFrame:
    """``frame`` itself, once checked to carry the value columns ``spec`` asks for: the sections
    read judgments that went through ``with_values`` once, where the campaign's data is loaded."""
    missing = [c for c, wanted in (("cat", spec.has_categories), ("num", spec.has_numbers)) if wanted]
    missing = [c for c in missing if c not in frame.columns]
    if missing:
        raise ValueError(
            f"`judgments` lacks the value column(s) {missing}: pass the frame through with_values(frame, spec) once."
        )
    return frame


def places(frame: pd.DataFrame, spec: ValueSpec) -> np.ndarray:
    """Each judgment's category as its place in ``spec.categories`` (-1: none; ``OUTSIDE``: one
    outside them; a count of the categories in the scale takes the places from 0 up),
    as ``with_values`` derives the column ``place`` (``metrics.category_positions``): read from
    that column, or found from ``cat`` in a frame made without it. Counting by place takes one
    hash of the few distinct categories, where ``isin`` or ``get_indexer`` over the labels takes
    one of every judgment (at 10^7, about half a second each time)."""
    if "place" in frame.columns:
        return frame["place"].to_numpy()
    return category_positions(frame["cat"], spec.categories, outside=OUTSIDE)


def categorical_long(frame: pd.DataFrame, spec: ValueSpec) -> pd.DataFrame:
    """Judgments with a category in the scale: columns unit, grader, query, value."""
    return _long(frame, frame["cat"].isin(spec.categories).to_numpy(), "cat")


def numeric_long(frame: pd.DataFrame) -> pd.DataFrame:
    """Judgments with a number: columns unit, grader, query, value (float)."""
    return _long(frame, frame["num"].notna().to_numpy(), "num", dtype=float)


def _long(frame: pd.DataFrame, keep: np.ndarray, column: str, dtype: Any = None) -> pd.DataFrame:
    """The rows ``keep`` of the four columns a long frame has, taken column by column: filtering
    ``frame`` first would copy each of its columns (at 10^7 judgments each is 80 MB). When every row
    is kept, the columns are ``frame``'s own arrays, not copies (no reader of a long frame writes
    to it: the copies were 0.25 s of alpha's pass at 10^7 judgments)."""
    every = bool(keep.all())
    columns = (
        ("unit", frame["unit"].to_numpy()),
        ("grader", frame["grader"].to_numpy()),
        ("query", frame["query"].to_numpy()),
        ("value", frame[column].to_numpy(dtype=dtype)),
    )
    return pd.DataFrame({name: values if every else values[keep] for name, values in columns}, copy=False)


CHUNK_ROWS = 500_000


def slice_ends(units: np.ndarray, counts: np.ndarray, rows: int | None = None) -> np.ndarray:
    """The last unit of each slice of judgments of these ``units`` (sorted, with their ``counts``
    of judgments): spans of unit ids of one width, a power of two, with about ``rows`` judgments
    each on average (every unit's rows in one slice).

    The spans are fixed ranges of ids (``unit // width``), not cut from the rows: new judgments on
    some units leave every other slice as it was, which is what lets a run take the sums of the
    slices that did not change (docs/analysis.md, "Reusing slices"). The width follows the average
    number of judgments per id, so it changes only when that crosses a power of two; a slice holds
    more than ``rows`` judgments only where its units are judged more often than the average."""
    rows = rows or CHUNK_ROWS
    n = int(counts.sum())
    if not n:
        return units[:0]
    if n <= rows:
        return units[-1:]
    ids = int(units[-1]) - int(units[0]) + 1
    shift = max(0, int(np.floor(np.log2(rows * ids / n))))  # the width: 2**shift ids
    spans = units >> shift
    last = np.flatnonzero(np.append(spans[1:] != spans[:-1], True))
    return units[last]


def unit_chunks(frame: pd.DataFrame, rows: int | None = None) -> list[slice]:
    """Row slices of ``frame``, every unit's rows in one slice, cut where ``slice_ends`` cuts.

    A per-unit statistic computed slice by slice equals the statistic of the whole frame (each
    unit's rows keep their order), while pandas' groupby and the long frames' copies need memory
    for one slice: at 10^7 judgments, a groupby over every row held more than a gigabyte. Units
    not sorted (``frame["unit"]`` not non-decreasing) are not split: the whole frame is one slice.
    """
    n, rows = len(frame), rows or CHUNK_ROWS
    if n <= rows or not frame["unit"].is_monotonic_increasing:
        return [slice(0, n)]
    units = frame["unit"].to_numpy().astype(np.int64, copy=False)
    starts = np.flatnonzero(np.append(True, units[1:] != units[:-1]))
    counts = np.diff(np.append(starts, n))
    stops = np.searchsorted(units, slice_ends(units[starts], counts, rows), side="right").tolist()
    return [slice(a, b) for a, b in zip([0, *stops[:-1]], stops, strict=True)]


def sorted_unit_codes(units: np.ndarray) -> tuple[np.ndarray, int]:
    """Each row's unit as 0.. in the order of sorted unit ids, and how many units: from the runs of
    equal ids when the rows are sorted by unit (the judgments are), else by sorting."""
    if units.size and (units[1:] >= units[:-1]).all():
        starts = np.empty(units.size, dtype=bool)
        starts[0], starts[1:] = True, units[1:] != units[:-1]
        codes = np.cumsum(starts, dtype=np.int64 if units.size >= 2**31 else np.int32)
        codes -= 1
        return codes, int(codes[-1]) + 1
    uniques, codes = np.unique(units, return_inverse=True)
    return codes.ravel(), uniques.size


def heap_release() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere, nothing).

    The slices of ``unit_chunks`` free their temporaries between small objects that outlive them,
    and glibc keeps such scattered free memory for later: 200 MB after the agreement stage at 10^7
    judgments, under every later stage's peak.
    """
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


MAPPED_BYTES = 1 << 20  # inside ``large_allocations_mapped``, an allocation this large or larger is mapped on its own
MAPPED_BYTES_AFTER = 64 << 20  # and after it
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


@contextmanager
def large_allocations_mapped() -> Iterator[None]:
    """Inside, every allocation of ``MAPPED_BYTES`` or more gets a mapping of its own, given back to
    the system as soon as it is freed (glibc's ``mallopt``; elsewhere, nothing). For reading a shard.

    glibc starts with such a threshold of 128 KiB but raises it, up to 32 MiB, to the size of each
    mapped block that is freed, so a shard's columns of a few MB (4,000,000 rows of 8 bytes are
    32 MB) soon come from the heap, where what they free stays held among what outlives them and
    adds to every later peak: 100 MiB more at the peak of reading one of the bench's shards of
    4,000,000 events (docs/analysis.md, "Scaling"). Only for the reading: the combining step frees
    and allocates a slice's temporaries (4 MB a column at 500,000 rows) thousands of times, and
    mapping each anew cost it a fifth more CPU. glibc cannot be given its moving threshold back, so
    on leaving it is fixed at ``MAPPED_BYTES_AFTER``: the slices' temporaries and the combining
    step's per-unit columns (16 MB at 2,000,000 units) come from the heap, to be used again, and only
    its largest arrays (the grader model's panels, 80 MB) are mapped and given back. At 8 MiB the
    per-unit columns were mapped anew each time: the combining step of the bench's run after new
    work took 0.6-0.9 s more (the model 0.3-0.6 s of it) at the same peak (docs/analysis.md,
    "Scaling")."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MAPPED_BYTES)
    try:
        yield
    finally:
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, MAPPED_BYTES_AFTER)


def _glibc() -> Any:
    """The C library when it is glibc (``malloc_trim`` and ``mallopt`` are its own), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim, libc.mallopt  # noqa: B018 -- both present, or not glibc
    except (OSError, AttributeError):
        return None
    return libc


def finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


def memory_release() -> None:
    """Give what Arrow's allocator and the C heap hold freed back to the system: between the tasks
    of a worker, so that a shard (or the combining step) after another starts from the worker's
    own memory, not from the last one's leftovers (a worker that read two shards of 2,000,000
    judgments peaked at 1.04 GB where one shard alone peaks at 0.77 GB)."""
    arrow_memory_release()
    heap_release()


def arrow_memory_release() -> None:
    """Give Arrow's freed memory back to the system. Its allocator keeps what it freed for Arrow's
    next allocation, which may not come soon: the parts' Parquet tables once left 390 MB held for
    the rest of the combining step at 10^7 judgments, on top of every stage's peak."""
    import pyarrow

    pyarrow.default_memory_pool().release_unused()
