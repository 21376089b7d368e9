"""A run's judgments as the sections read them: a slice of whole units at a time.

``Judgments`` is what every section of the report reads (docs/analysis.md, "Scaling"). It gives
the judgments in slices of whole units (``chunks``), each slice exactly the rows that
``values.unit_chunks`` cuts from the one frame of every judgment, in the same order and with the
value columns ``cat``, ``place`` and ``num`` (``values.with_values``): a per-unit figure, and a sum taken
slice by slice, come out the same whichever holds the judgments.

- ``FrameJudgments`` holds that one frame (the ``agreement`` command's ratings file, tests).
- ``StoredJudgments`` holds the shards' parts as they came (Parquet, a few bytes a judgment) and
  reads each slice from them when it is asked for: the combining step never holds every judgment
  at once (0.56 GB at 10^7 judgments, with transients of a gigabyte on top). Its first full pass
  also writes each slice, merged and with its value columns, to files of its own (``_Spill``),
  from which the later passes read it back (at 10^7 judgments a pass from the parts took 1.3 s
  of CPU, one from the files 0.3 s; the combining step makes eight).

Reading everything at once (``frame``) is there for what needs it, and says so.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from analysis.services import slice_memo, values
from analysis.services.values import ValueSpec, memory_release, unit_chunks, value_sources, with_values
from grading.models.choices import Scheme


class ShardPart(Protocol):
    """What a shard's part gives (``shards.ShardPart``): its judgments as a frame, or only their
    columns with the rows still Parquet (``stored``)."""

    judgments: pd.DataFrame
    stored: bytes | None
    graders: np.ndarray | None  # those with a judgment in the part, when known without reading it

    @property
    def rows(self) -> int: ...

    def column(self, name: str) -> np.ndarray: ...


logger = logging.getLogger(__name__)

VALUE_COLUMNS = ("cat", "place", "num")  # in the order values.with_values adds them


class Judgments:
    """The judgments of a run (long shape: one row per unit and grader, in (unit, grader) order
    when they come from the database), with the value columns ``spec`` derives."""

    spec: ValueSpec

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def empty(self) -> bool:
        return len(self) == 0

    @property
    def columns(self) -> list[str]:
        """Every column a slice has (the value columns included)."""
        raise NotImplementedError

    def chunks(
        self, columns: Sequence[str] | None = None, only: Collection[int] | None = None
    ) -> Iterator[pd.DataFrame]:
        """Slices of whole units, in order; each has at least ``columns`` (every column: None).
        ``only``: the slices of these places in that order, the others left out.

        A slice's index is its rows' positions in the whole. Slices are made as they are asked
        for: keep what a slice gives, not the slice."""
        raise NotImplementedError

    def slice_keys(self, memo: slice_memo.SliceMemo) -> list[str] | None:
        """A digest of each slice's rows, in the order of ``chunks`` (``slice_memo``): slices of
        equal keys hold the same rows, with the same columns, read by the same code. None: not
        known here. ``memo`` lends what a run before kept (the parts' digests among it)."""
        return None

    def slice_spans(self) -> list[tuple[int, int]] | None:
        """Each slice's first and last unit, in the order of ``chunks``, before any is read; None:
        not known here (only with ``slice_keys``)."""
        return None

    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """The units judged, sorted, and how many judgments each has (O(units), not O(judgments))."""
        ids, counts = [], []
        for chunk in self.chunks(["unit"]):
            u, c = np.unique(chunk["unit"].to_numpy(), return_counts=True)
            ids.append(u)
            counts.append(c)
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        return np.concatenate(ids), np.concatenate(counts)

    def frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Every judgment at once, as one frame: only where the campaign is known to be small
        (a linked campaign's comparison, a ratings file)."""
        raise NotImplementedError

    def graders(self) -> np.ndarray:
        """The graders with a judgment here, sorted."""
        found = [np.unique(chunk["grader"].to_numpy()) for chunk in self.chunks(["grader"])]
        return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)

    def without(self, graders: set[int]) -> Judgments:
        """These judgments less those of ``graders`` (graders excluded after they were read)."""
        raise NotImplementedError


def judgments_of(judgments: pd.DataFrame | Judgments, spec: ValueSpec) -> Judgments:
    """``judgments`` as a ``Judgments``: a frame (that went through ``values.with_values``) wrapped."""
    return judgments if isinstance(judgments, Judgments) else FrameJudgments(judgments, spec)


@dataclass
class FrameJudgments(Judgments):
    """Judgments held as one frame, sliced by ``values.unit_chunks``."""

    data: pd.DataFrame
    spec: ValueSpec
    rows: int | None = None  # a slice's rows (values.CHUNK_ROWS)

    def __len__(self) -> int:
        return len(self.data)

    @property
    def columns(self) -> list[str]:
        return list(self.data.columns)

    def chunks(
        self, columns: Sequence[str] | None = None, only: Collection[int] | None = None
    ) -> Iterator[pd.DataFrame]:
        if self.data.empty:
            return
        slices = unit_chunks(self.data, self.rows)
        for i in range(len(slices)) if only is None else only:
            yield self.data.iloc[slices[i]]

    def units(self) -> tuple[np.ndarray, np.ndarray]:
        ids, counts = np.unique(self.data["unit"].to_numpy(), return_counts=True)
        return ids, counts

    def frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        return self.data if columns is None else self.data[list(columns)]

    def graders(self) -> np.ndarray:
        return np.unique(self.data["grader"].to_numpy())

    def without(self, graders: set[int]) -> Judgments:
        if not graders:
            return self
        kept = ~self.data["grader"].isin(graders).to_numpy()
        return FrameJudgments(self.data[kept].reset_index(drop=True), self.spec, self.rows)


# Unit ids are counted over their range (``StoredJudgments._unit_counts``) while it is at most four times
# the rows and this many more.
UNIT_RANGE_SLACK = 1 << 16


class StoredJudgments(Judgments):
    """The judgments of the shards' ``parts`` (``shards.ShardPart``, in the order of their spans),
    less the graders ``excluded``, read a slice at a time.

    Each part holds its graders' judgments in (unit, grader) order and the parts come in the order
    of their graders, so the rows of every judgment in (unit, grader) order are the parts' rows
    merged by unit, each unit's rows in the order of the parts. The slices are cut where
    ``values.unit_chunks`` cuts that whole (``values.slice_ends``, from each unit's number of
    judgments, found once: O(units)). Each part is then read once per pass, in order, as far as
    the slice reaches."""

    def __init__(
        self, parts: list[ShardPart], spec: ValueSpec, *, excluded: set[int] | None = None, rows: int | None = None
    ) -> None:
        self.parts = [p for p in parts if p.rows] or list(parts[:1])
        self.spec = spec
        self.excluded = {int(g) for g in excluded or ()}
        self.rows = rows
        self._dtypes = _common_dtypes([_part_dtypes(p) for p in self.parts])
        self._units, self._counts = self._unit_counts()
        self._n = int(self._counts.sum())
        self._bounds = values.slice_ends(self._units, self._counts, rows).tolist()
        self._spill: _Spill | None = None  # every slice, once a full pass has written it
        self._as_is = _derived_as_is(spec, self._dtypes)
        self._keys: list[str] | None = None
        self._graders: np.ndarray | None = None
        memory_release()  # the parts' unit columns, read to count (190 MB of C heap at 10^7)

    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> list[str]:
        return [*self._dtypes, *(c for c in VALUE_COLUMNS if c not in self._dtypes and self._derives(c))]

    def _derives(self, column: str) -> bool:
        return self.spec.has_categories if column in ("cat", "place") else self.spec.has_numbers

    def units(self) -> tuple[np.ndarray, np.ndarray]:
        return self._units, self._counts

    def graders(self) -> np.ndarray:
        if self._graders is None:  # asked for by the overview and the model: each part's read once
            found = [_part_graders(p) for p in self.parts if p.rows]
            every = np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
            self._graders = every[~np.isin(every, list(self.excluded))] if self.excluded else every
        return self._graders.copy()

    def without(self, graders: set[int]) -> Judgments:
        if not graders:
            return self
        return StoredJudgments(self.parts, self.spec, excluded=self.excluded | set(graders), rows=self.rows)

    def chunks(
        self, columns: Sequence[str] | None = None, only: Collection[int] | None = None
    ) -> Iterator[pd.DataFrame]:
        if not self._n:
            return
        wanted = self._slice_columns(columns)
        if self._spill is not None and self._spill.complete:
            for i in range(len(self._bounds)) if only is None else only:
                yield self._spill.read(i, wanted)
            return
        if only is not None and list(only) != sorted(set(only)):
            raise ValueError("slices are read from the parts in order: ask for them in order")
        asked = None if only is None else set(only)
        # With more than one slice, a pass while no other is writing reads every column and writes
        # each slice to the spill, for the passes after it to read; a pass left before its end
        # (a consumer that took what it needed) leaves no spill, and the next pass writes one.
        spill = _Spill() if self._spill is None and len(self._bounds) > 1 else None
        self._spill = spill or self._spill
        stored = self._stored_columns(None if spill else columns)
        derive = frozenset(VALUE_COLUMNS if columns is None or spill else set(columns) & set(VALUE_COLUMNS))
        readers = [_PartReader(part, stored, self.excluded) for part in self.parts]
        start = 0
        try:
            for i, last in enumerate(self._bounds):  # the last unit of each slice
                if asked is not None and not asked and spill is None:
                    break  # every slice asked for is given, and no spill is being written
                pieces = [reader.through(last) for reader in readers]
                pieces = [p for p in pieces if len(p["unit"])] or pieces[:1]
                chunk, texts = self._merged(pieces, stored)
                del pieces
                chunk.index = pd.RangeIndex(start, start + len(chunk))
                start += len(chunk)
                text = _text_factorized(chunk, self.spec, derive, texts) if spill is not None else None
                chunk = with_values(chunk, self.spec, copy=False, only=derive, factorized=text) if derive else chunk
                known = {self.spec.cat_column: text} if text is not None else None
                if spill is not None and not spill.write(chunk, same=self._as_is, factorized=known):
                    spill = None  # no room for it: this pass and every later one read the parts
                if asked is None or i in asked:
                    yield chunk if list(chunk.columns) == wanted else _selected(chunk, wanted)
                if asked is not None:
                    asked.discard(i)
                del chunk  # not held while the next slice is read
            if spill is not None:
                spill.finish()
        finally:
            if spill is not None and not spill.complete:
                spill.close()
                self._spill = None
        del readers
        memory_release()

    def slice_keys(self, memo: slice_memo.SliceMemo) -> list[str] | None:
        """Each slice's key: a digest of what decides its rows (the scheme, the graders left out,
        the columns' types, the slice's span of units) and of each part's rows in the slice
        (``_part_slices``), in the parts' order. None while a part is held as a frame (a run of
        one shard, which keeps nothing for the next)."""
        if not self._n or any(p.stored is None for p in self.parts):
            return None
        if self._keys is None:
            ends = np.asarray(self._bounds, dtype=np.int64)
            context = repr((self.spec, sorted(self.excluded), {c: str(t) for c, t in self._dtypes.items()}))
            digests = [_part_slices(part, ends, memo) for part in self.parts]
            # a part with no row in a slice (b"") adds nothing to it: a new grader's part leaves the
            # keys of the slices it has no judgment in as they were
            self._keys = [
                slice_memo.key(
                    "slices", context, ends[max(i - 1, 0) : i + 1].tobytes(), *(d[i] for d in digests if d[i])
                )
                for i in range(ends.size)
            ]
        return self._keys

    def slice_spans(self) -> list[tuple[int, int]] | None:
        if not self._n:
            return []
        # every slice has a unit judged (``values.slice_ends`` cuts only where units are)
        last = np.searchsorted(self._units, self._bounds, side="right") - 1
        first = np.concatenate([[0], last[:-1] + 1])
        return list(zip(self._units[first].tolist(), self._units[last].tolist(), strict=True))

    def _slice_columns(self, columns: Sequence[str] | None) -> list[str]:
        """The columns of a slice asked for with ``columns``: the parts' columns it needs, then the
        value columns derived from them, in the order ``values.with_values`` adds them."""
        stored = self._stored_columns(columns)
        asked = VALUE_COLUMNS if columns is None else set(columns)
        return [*stored, *(c for c in VALUE_COLUMNS if c in asked and self._derives(c))]

    def frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        chunks = list(self.chunks(columns))
        if not chunks:
            return self._empty(columns)
        out = pd.concat(chunks) if len(chunks) > 1 else chunks[0]
        return out if columns is None else out[list(columns)]

    def _empty(self, columns: Sequence[str] | None) -> pd.DataFrame:
        frame = pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in self._dtypes.items()})
        frame = with_values(frame, self.spec, copy=False)
        return frame if columns is None else frame[[c for c in columns if c in frame.columns]]

    def _stored_columns(self, columns: Sequence[str] | None) -> list[str]:
        """The parts' columns a slice with ``columns`` needs: the value columns are derived from the
        scheme's own (``values.with_values``), and every slice has unit (and grader, to leave out
        the excluded)."""
        if columns is None:
            return list(self._dtypes)
        wanted = {"unit", "grader", *columns}
        for value in wanted & set(VALUE_COLUMNS):
            wanted |= value_sources(self.spec, value)
        return [c for c in self._dtypes if c in wanted]

    def _merged(self, pieces: list[_Piece], columns: list[str]) -> tuple[pd.DataFrame, dict[str, _Text]]:
        """The pieces (one per part, each in (unit, grader) order) as the rows of every judgment
        are: merged by unit, each unit's rows in the order of the parts. And the text columns that
        came as Parquet's dictionaries, as codes into their words (``_Text``): factorized already."""
        order = None
        if len(pieces) > 1:
            order = np.argsort(np.concatenate([p["unit"] for p in pieces]), kind="stable")
        merged: dict[str, np.ndarray] = {}
        texts: dict[str, _Text] = {}
        for c in columns:
            column = _joined([p[c] for p in pieces], self._dtypes[c])
            column = column if order is None else column[order]
            if isinstance(column, _Text):
                texts[c], column = column, column.objects()
            merged[c] = column
        # copy=False: the arrays are the slice's own (the parts' rows of it, or a merge of them),
        # not stacked (copied) by dtype, as in ``read``
        return pd.DataFrame(merged, copy=False), texts

    def _unit_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Every unit judged (sorted) and its number of judgments, summed over the parts one part at
        a time. Unit ids are close together in a campaign, so each part's ids are counted into one
        array over the ids' range (O(rows + range), no sort: 2.5 s of sorting at 10^7 judgments);
        ids spread over more than a few times the rows are merged part by part instead."""
        ends = [e for e in map(_unit_range, self.parts) if e is not None]  # of all their rows: a range as good
        if not ends:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        low, high, rows = min(e[0] for e in ends), max(e[1] for e in ends), sum(e[2] for e in ends)
        if high - low + 1 > 4 * rows + UNIT_RANGE_SLACK:
            return self._unit_counts_merged()
        counts = np.zeros(high - low + 1, dtype=np.int64)
        for part in self.parts:
            counts += np.bincount(self._kept_units(part) - low, minlength=counts.size)
        units = np.flatnonzero(counts)
        return units + low, counts[units]

    def _kept_units(self, part: ShardPart) -> np.ndarray:
        """The part's unit column, less the rows of excluded graders."""
        column = part.column("unit")
        if self.excluded:
            column = column[~np.isin(part.column("grader"), list(self.excluded))]
        return column.astype(np.int64, copy=False)

    def _unit_counts_merged(self) -> tuple[np.ndarray, np.ndarray]:
        """``_unit_counts`` by merging each part's distinct units (sorting them) into the others'."""
        units, counts = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        for part in self.parts:
            u, c = np.unique(self._kept_units(part), return_counts=True)
            if not units.size:
                units, counts = u, c.astype(np.int64)
                continue
            merged = np.union1d(units, u)
            summed = np.zeros(merged.size, dtype=np.int64)
            summed[np.searchsorted(merged, units)] += counts
            summed[np.searchsorted(merged, u)] += c
            units, counts = merged, summed
        return units, counts


def _part_graders(part: ShardPart) -> np.ndarray:
    """The graders with a judgment in ``part``: as its bytes list them, else read (hashed, not sorted)."""
    return part.graders if part.graders is not None else pd.unique(part.column("grader"))


def _text_factorized(
    chunk: pd.DataFrame, spec: ValueSpec, derive: frozenset[str], texts: Mapping[str, _Text]
) -> tuple[np.ndarray, Any] | None:
    """``pd.factorize`` of a slice's categorical answers when they are text and both their places
    (``with_values``) and the spill need it: made once, not once each (0.2 s of the first pass at
    10^7 judgments), and not made at all when the parts' Parquet gave them as codes (``texts``)."""
    column = spec.cat_column
    if column is None or spec.scheme == Scheme.NUMERIC or "place" not in derive or column not in chunk:
        return None
    if column in texts:
        return texts[column].factorized()
    values = chunk[column].to_numpy()
    return pd.factorize(values) if values.dtype == object else None


def _selected(chunk: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``chunk[columns]`` without its copy: a frame of the same column arrays (``chunk`` is not
    read again once its slice is given; copying five columns of every slice was 0.15 s of the
    first pass at 10^7 judgments)."""
    return pd.DataFrame({c: chunk[c].to_numpy() for c in columns}, index=chunk.index, copy=False)


class _Spill:
    """Every slice of a ``StoredJudgments`` as its first full pass made it (merged by unit, less the
    excluded, with the value columns), written column by column to unnamed temporary files (gone
    with the process, whatever ends it), for the later passes to read back instead of merging the
    parts again. Numbers are written as they are; text as codes into the slice's distinct values.
    A value column that is a column of the parts as it is (``_derived_as_is``) is read back from that
    column's file, not written twice. The files sit in the system's page cache, not in the process's
    memory: 17 bytes a judgment of BROAD+FINE (0.17 GB at 10^7; 34 before ids were narrowed)."""

    def __init__(self) -> None:
        self.files: dict[str, Any] = {}
        self.sizes: dict[str, int] = {}
        self.slices: list[tuple[int, int, dict[str, _Stored]]] = []  # (first row, rows, columns)
        self.complete = False

    def write(
        self,
        chunk: pd.DataFrame,
        *,
        same: Mapping[str, str] | None = None,
        factorized: Mapping[str, tuple[np.ndarray, Any]] | None = None,
    ) -> bool:
        """Add the next slice; False when it could not be written (the spill is then closed).
        ``same``: columns that hold another column's values as they are (``_derived_as_is``), read
        back from that column's file instead of written again. ``factorized``: ``pd.factorize`` of
        text columns, made already."""
        same, factorized = same or {}, factorized or {}
        stored: dict[str, _Stored] = {}
        try:
            for name in chunk.columns:
                source = same.get(name)
                stored[name] = (
                    stored[source]
                    if source in stored
                    else self._written(name, chunk[name].to_numpy(), factorized.get(name))
                )
        except OSError as exc:  # a full disk: the passes read the parts instead
            logger.warning("the judgments' slices are read from the parts on every pass: %s", exc)
            self.close()
            return False
        self.slices.append((int(chunk.index[0]) if len(chunk) else 0, len(chunk), stored))
        return True

    def _written(self, name: str, values: np.ndarray, factorized: tuple[np.ndarray, Any] | None = None) -> _Stored:
        uniques = fill = None
        dtype = values.dtype
        if values.dtype == object:
            codes, uniques = factorized if factorized is not None else pd.factorize(values)
            fill = _missing_fill(values[codes < 0]) if (codes < 0).any() else None
            values = codes.astype(np.min_scalar_type(-max(len(uniques), 1)))
        elif values.dtype.kind in "iu" and values.size:
            values = _narrowed(values)
        values = np.ascontiguousarray(values)
        if name not in self.files:
            self.files[name] = tempfile.TemporaryFile(prefix="evalutron-slices-")
            self.sizes[name] = 0
        offset = self.sizes[name]
        self.files[name].write(values.data)
        self.sizes[name] += values.nbytes
        return _Stored(name, offset, values.dtype, uniques, fill, dtype)

    def finish(self) -> None:
        for file in self.files.values():
            file.flush()
        self.complete = True

    def read(self, i: int, columns: list[str]) -> pd.DataFrame:
        start, rows, stored = self.slices[i]
        columns_read = {name: self._read(name, stored[name], rows) for name in columns}
        # copy=False: the columns, read fresh, are kept as they are, not stacked into one block per
        # dtype (a copy of every slice each pass: 0.75 s of the combining step at 10^7 judgments)
        return pd.DataFrame(columns_read, index=pd.RangeIndex(start, start + rows), copy=False)

    def _read(self, name: str, stored: _Stored, rows: int) -> np.ndarray:
        values = np.empty(rows, dtype=stored.dtype)
        buffer, done = memoryview(values).cast("B"), 0
        while done < values.nbytes:
            got = os.preadv(self.files[stored.column].fileno(), [buffer[done:]], stored.offset + done)
            if not got:
                raise OSError(f"the spilled column {name} ends before its slice")
            done += got
        if stored.uniques is None:
            return values if values.dtype == stored.read_as else values.astype(stored.read_as)
        every = np.empty(len(stored.uniques) + 1, dtype=object)  # code -1 (missing) takes the last
        every[:-1], every[-1] = stored.uniques, stored.fill if not isinstance(stored.fill, np.ndarray) else None
        out = every[values]
        if isinstance(stored.fill, np.ndarray):  # missing values of more than one kind, as they were
            out[values < 0] = stored.fill
        return out

    def close(self) -> None:
        for file in self.files.values():
            file.close()
        self.files.clear()
        self.sizes.clear()
        self.slices.clear()
        self.complete = False


@dataclass(frozen=True)
class _Stored:
    """Where a slice's column is (the spill file of ``column``, from ``offset``), and how to read it
    back: ``uniques`` and ``fill`` for text (the codes' values, and what a missing value was)."""

    column: str
    offset: int
    dtype: np.dtype
    uniques: np.ndarray | None
    fill: Any
    read_as: np.dtype  # the column's own dtype: integers are written as narrow as the slice's values allow


def _narrowed(values: np.ndarray) -> np.ndarray:
    """Integers in the narrowest type that holds every one of them (``values`` itself when that is
    its own): ids are int64 in the parts, and a slice's unit, grader and query ids fit in 4 bytes or
    fewer, so the spill writes and reads half as many bytes of them."""
    low, high = int(values.min()), int(values.max())
    for narrow in _NARROW:
        if narrow.itemsize >= values.itemsize:
            break
        if np.iinfo(narrow).min <= low and high <= np.iinfo(narrow).max:
            return values.astype(narrow)
    return values


_NARROW = [np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32)]


def _missing_fill(missing: np.ndarray) -> Any:
    """What the missing values of a text column were: one value when they are all the same kind
    (None, or NaN), else all of them."""
    first = missing[0]
    if first is None and all(v is None for v in missing):
        return None
    if isinstance(first, float) and all(isinstance(v, float) and v != v for v in missing):
        return first
    return missing.copy()


def _derived_as_is(spec: ValueSpec, dtypes: Mapping[str, Any]) -> dict[str, str]:
    """The value columns ``values.with_values`` sets to one of the parts' columns as it is: ``cat``
    to the scheme's categorical answer (a NUMERIC campaign's are its rounded scores), ``num`` to a
    numeric answer already of floats. The spill writes each such pair once: for BROAD+FINE, a
    hashing of every BROAD label and 8 bytes a judgment less (0.45 s of the first pass at 10^7)."""
    out = {}
    if spec.cat_column is not None and spec.scheme != Scheme.NUMERIC and spec.cat_column in dtypes:
        out["cat"] = spec.cat_column
    if spec.num_column in dtypes and dtypes[spec.num_column] == np.dtype(float):
        out["num"] = spec.num_column
    return out


def _part_slices(part: ShardPart, ends: np.ndarray, memo: slice_memo.SliceMemo) -> list[bytes]:
    """A digest of the part's rows in each slice (``ends``: each slice's last unit), every column
    as stored; b"" for a slice it has no row in. Lent by the run before when it read the same part
    (the same bytes) with the same slices; computed from the part's columns otherwise (a part read
    by this run), one column at a time."""
    stored = slice_memo.key("part slices", hashlib.blake2b(part.stored, digest_size=16).digest(), ends.tobytes())
    lent = memo.lend(stored)
    if lent is None:
        file = _parquet_file(part.stored)
        digests = [hashlib.blake2b(digest_size=16) for _ in range(ends.size)]
        for name in ["unit", *(n for n in file.schema_arrow.names if n != "unit")]:
            values = _digested(file.read(columns=[name], use_threads=False).column(name))
            if name == "unit":
                stops = np.searchsorted(values, ends, side="right")
                starts = np.append(0, stops[:-1])
            data = memoryview(values).cast("B")
            width = values.dtype.itemsize
            for digest, start, stop in zip(digests, starts.tolist(), stops.tolist(), strict=True):
                digest.update(f"{name}:{values.dtype.str}".encode())
                digest.update(data[start * width : stop * width])
            del values, data
        empty = starts == stops
        lent = b"".join(bytes(16) if none else d.digest() for d, none in zip(digests, empty, strict=True))
    memo.keep(stored, lent)
    digests = [lent[i * 16 : (i + 1) * 16] for i in range(ends.size)]
    return [b"" if d == bytes(16) else d for d in digests]


_NULL_HASH = np.uint64(0x9E3779B97F4A7C15)  # a missing text value's, where every other has pandas' hash


def _digested(column: Any) -> np.ndarray:
    """A column's values as the bytes ``_part_slices`` digests: numbers as they are, text (read as
    an Arrow dictionary) as each value's 64-bit hash (pandas' ``hash_array``), taken from the hashes
    of each chunk's few distinct values (never an object a row)."""
    import pyarrow as pa

    if not pa.types.is_dictionary(column.type):
        values = _as_numpy(column.combine_chunks())
        return np.ascontiguousarray(pd.util.hash_array(values) if values.dtype == object else values)
    out = []
    for coded in column.chunks:
        words = coded.dictionary.to_numpy(zero_copy_only=False)
        hashes = np.append(pd.util.hash_array(words.astype(object)), _NULL_HASH)
        out.append(hashes[coded.indices.fill_null(len(words)).to_numpy(zero_copy_only=False)])
    return np.concatenate(out) if out else np.empty(0, dtype=np.uint64)


@dataclass(frozen=True)
class _Text:
    """A text column as Parquet's dictionary holds it: each row's code into ``words`` (distinct
    values, none missing), -1 for a missing value. Its rows are read, cut and merged as codes; the
    objects a slice hands out are made once per slice (``objects``), from a few distinct ones."""

    codes: np.ndarray
    words: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows: Any) -> _Text:
        return _Text(self.codes[rows], self.words)

    def objects(self) -> np.ndarray:
        """The values as ``to_pandas`` makes them: the words' objects, None for a missing value."""
        every = np.empty(len(self.words) + 1, dtype=object)  # code -1 (missing) takes the last: None
        every[:-1] = self.words
        return every[self.codes]

    def factorized(self) -> tuple[np.ndarray, np.ndarray]:
        """``pd.factorize`` of ``objects()``, up to the order of the uniques (and uniques no row
        has): what the spill and the categories' places need of it."""
        return self.codes, self.words


_Column = np.ndarray | _Text
_Piece = dict[str, _Column]  # a part's rows, column by column


def _joined(columns: list[_Column], dtype: Any) -> _Column:
    """The columns one after the other: codes when every one is ``_Text`` (into the union of their
    words, when they differ), else arrays of ``dtype`` (None: of their own dtypes, joined)."""
    if all(isinstance(c, _Text) for c in columns):
        return _texts_joined(columns)  # type: ignore[arg-type]
    arrays = [c.objects() if isinstance(c, _Text) else c for c in columns]
    arrays = arrays if dtype is None else [_as(a, dtype) for a in arrays]
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _texts_joined(texts: list[_Text]) -> _Text:
    first = texts[0].words
    if all(t.words is first or np.array_equal(t.words, first) for t in texts[1:]):
        return texts[0] if len(texts) == 1 else _Text(np.concatenate([t.codes for t in texts]), first)
    found: dict[Any, int] = {}
    codes = []
    for t in texts:
        lookup = np.array([found.setdefault(w, len(found)) for w in t.words] + [-1], dtype=np.int32)
        codes.append(lookup[t.codes])  # -1 takes the last: still -1
    words = np.empty(len(found), dtype=object)
    words[:] = list(found)
    return _Text(np.concatenate(codes), words)


class _PartReader:
    """One part's rows in order, handed out up to a unit at a time (``through``), column by column:
    arrays, and text that came as a dictionary as codes (``_Text``). No frame is made of a part's
    batches: cutting and joining them as frames was 0.4 s of the first pass at 10^7 judgments."""

    # Rows read from the part at a time: every part's unread rest of a batch is held while a slice is
    # cut, so smaller batches hold less (a pass over 10^7 judgments in five parts peaked 30 MB lower
    # at 32,768 than at 131,072, in the same time).
    BATCH = 32_768

    def __init__(self, part: ShardPart, columns: list[str], excluded: set[int]) -> None:
        self.columns = [c for c in columns if c in part.judgments.columns]
        self.excluded = excluded
        self.pending: list[_Piece] = []
        if part.stored is None:
            frame = part.judgments
            arrays = {c: frame[c].to_numpy() for c in self.columns}
            self.batches: Iterator[_Piece] = (  # copies: a slice's columns are its own, not the part's
                {c: v[i : i + self.BATCH].copy() for c, v in arrays.items()} for i in range(0, len(frame), self.BATCH)
            )
        else:
            self.batches = _parquet_batches(part.stored, self.columns, self.BATCH)
        self.done = False

    def through(self, last_unit: int) -> _Piece:
        """The part's next rows of units up to ``last_unit``."""
        while not self.done and (not self.pending or self.pending[-1]["unit"][-1] <= last_unit):
            batch = next(self.batches, None)
            if batch is None:
                self.done = True
            elif len(batch["unit"]):
                self.pending.append(batch)
        if not self.pending:
            return {c: np.empty(0, dtype=object) for c in self.columns}
        held = self.pending[0]
        if len(self.pending) > 1:
            held = {c: _joined([b[c] for b in self.pending], None) for c in self.columns}
        cut = int(np.searchsorted(held["unit"], last_unit, side="right"))
        out = {c: v[:cut] for c, v in held.items()}
        self.pending = [{c: v[cut:] for c, v in held.items()}] if cut < len(held["unit"]) else []
        if self.excluded and cut:
            kept = ~np.isin(out["grader"], list(self.excluded))
            if not kept.all():
                out = {c: v[kept] for c, v in out.items()}
        return out


def _unit_range(part: ShardPart) -> tuple[int, int, int] | None:
    """The least and the greatest unit id of the part's rows, and how many rows (None: no row):
    from the Parquet statistics of the unit column where every row group has them (reading the
    column for them read each part's units twice, 0.1 s at 10^7 judgments), else from the column."""
    if part.stored is not None:
        meta = _parquet_file(part.stored).metadata
        if not meta.num_rows:
            return None
        j = meta.schema.names.index("unit")
        stats = [meta.row_group(i).column(j).statistics for i in range(meta.num_row_groups)]
        if all(s is not None and s.has_min_max for s in stats):
            return int(min(s.min for s in stats)), int(max(s.max for s in stats)), meta.num_rows
    column = part.column("unit")
    return (int(column.min()), int(column.max()), column.size) if column.size else None


def _parquet_batches(data: bytes, columns: list[str], size: int) -> Iterator[_Piece]:
    """The part's rows ``size`` at a time, column by column as ``to_pandas`` gives them (the same
    dtypes and values: integers with a missing value as floats), except text.

    Text is read as a dictionary and kept as codes into its few distinct values (``_Text``; a BROAD
    label is one of three): the objects of a slice are made once it is merged, all taken from those
    few values, and the codes serve as the values' factorization (the spill, the categories'
    places)."""
    for batch in _parquet_file(data).iter_batches(batch_size=size, columns=columns):
        yield {name: _column(batch.column(name)) for name in batch.schema.names}


def _column(array: Any) -> _Column:
    """An Arrow column as ``_as_numpy`` makes it, or a dictionary's as codes (``_Text``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(array.type):
        return _as_numpy(array)
    codes = pc.fill_null(array.indices.cast(pa.int32()), -1).to_numpy(zero_copy_only=False)
    return _Text(codes, array.dictionary.to_numpy(zero_copy_only=False).astype(object, copy=False))


def _parquet_file(data: bytes) -> Any:
    """A part's Parquet (``pyarrow.parquet.ParquetFile``), its text columns read as Arrow dictionaries."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(io.BytesIO(data))
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    return pq.ParquetFile(io.BytesIO(data), read_dictionary=text)


def _as_numpy(array: Any) -> np.ndarray:
    """An Arrow column, not a dictionary (``_column`` keeps those as ``_Text``), as ``to_pandas``
    makes it, writable."""
    import pyarrow as pa

    if pa.types.is_null(array.type):
        return np.full(len(array), None, dtype=object)
    return array.to_numpy(zero_copy_only=False, writable=True)


def _part_dtypes(part: ShardPart) -> dict[str, Any]:
    """The dtype each column of the part's judgments has when read: a Parquet column of integers
    with a missing value (a NULL query) reads as floats."""
    if part.stored is None:
        return dict(part.judgments.dtypes)
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(io.BytesIO(part.stored)).metadata
    out = dict(part.judgments.dtypes)
    for j in range(meta.num_columns):
        name = meta.schema.column(j).name
        if name in out and np.issubdtype(out[name], np.integer):
            stats = [meta.row_group(i).column(j).statistics for i in range(meta.num_row_groups)]
            if all(s is not None and s.has_null_count for s in stats):
                if sum(s.null_count for s in stats):
                    out[name] = np.dtype(float)
            else:  # no statistics: the column itself says
                out[name] = part.column(name).dtype
    return out


def _common_dtypes(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Each column's dtype once the parts are put together: a column of integers in one part and
    floats in another (a NULL query) is float, as ``pd.concat`` makes it; text stays object."""
    names = list(parts[0]) if parts else []
    out: dict[str, Any] = {}
    for name in names:
        dtypes = [p[name] for p in parts if name in p]
        if any(d == np.dtype(object) for d in dtypes):
            out[name] = np.dtype(object)
        else:
            out[name] = np.result_type(*dtypes)
    return out


def _as(values: np.ndarray, dtype: Any) -> np.ndarray:
    return values if values.dtype == dtype else values.astype(dtype)
