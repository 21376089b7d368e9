"""A run's per-unit results, stored as compressed blocks of consecutive units.

A run writes one row per unit of its per-unit table: the unit's aggregates, confusability and
model-based truth. They are kept as blocks of ``BLOCK_UNITS`` consecutive units (by id), each an
Arrow IPC stream compressed with zstd, in ``UnitBlock`` rows keyed by (run, block): at 10^7
judgments, storing a run's 2,000,000 units took 2.0–2.3 s as blocks against 10.0–11.5 s as rows,
in 56 MiB against 380 MiB (docs/analysis.md, "Storing a run's results").

A block's model columns (``MODEL_COLUMNS``) are a stream of their own (``UnitBlock.model``) beside the
others (``UnitBlock.data``, where they are then missing), so that a run can store its units' own
figures as soon as they are final and the model's columns once the model is fitted
(``write_model``). A block whose ``model`` is empty (stored before the model had its own stream,
or by a run with no model) has them in ``data``.

Everything reads them here. A block keeps its units as the run computed them; a unit deleted since
is left out when its block is read (``_present``), so no trigger has to reach into the blocks.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import astuple, dataclass, fields, replace
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from django.db import connection
from django.db.models import Subquery

from analysis import pgcopy
from analysis.models import AnalysisRun, UnitBlock
from grading.models import Unit

BLOCK_UNITS = 4096
# The per-unit table's columns as stored, in order; "unit" and "query" are ids, and "distribution"
# (a categorical campaign's label counts) JSON text.
INT_COLUMNS = ("unit", "query", "n", "n_ns", "n_ss", "n_vs")
FLOAT_COLUMNS = ("mean", "median", "majority", "dif", "std", "entropy")
MODEL_COLUMNS = ("model_label", "model_probability", "model_score", "model_se")
COLUMNS = ("unit", "query", "n", *FLOAT_COLUMNS, "n_ns", "n_ss", "n_vs", "distribution", *MODEL_COLUMNS)
SCHEMA = pa.schema(
    [(c, pa.int64() if c in INT_COLUMNS else pa.string() if c == "distribution" else pa.float64()) for c in COLUMNS]
)
MODEL_SCHEMA = pa.schema([SCHEMA.field(c) for c in MODEL_COLUMNS])
_WRITE_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


@dataclass(frozen=True)
class Block:
    """One block as stored: its position in the run, its first and last unit ids, its number of
    units, whether any of its units has a BROAD distribution, label counts, a model label or a
    model score (the export's optional columns), its bytes (``SCHEMA``), and the bytes of its
    model columns when they are apart (``MODEL_SCHEMA``; ``data`` then has them missing)."""

    index: int
    first_unit: int
    last_unit: int
    rows: int
    broad: bool
    distribution: bool
    model_label: bool
    model_score: bool
    data: bytes
    model: bytes | None = None


@dataclass(frozen=True)
class ModelBlock:
    """A block's model columns (``MODEL_SCHEMA``), apart from the rest: its position in the run, its
    first and last unit ids and number of units (which must be its block's), whether any has a model
    label or a model score, and its bytes."""

    index: int
    first_unit: int
    last_unit: int
    rows: int
    model_label: bool
    model_score: bool
    data: bytes


def encode(units: pd.DataFrame, *, size: int | None = None) -> list[Block]:
    """The per-unit table ``units`` (a column per name of ``COLUMNS``, those missing taken as all
    missing; NaN is missing) as blocks of ``size`` units (None: ``BLOCK_UNITS``) in unit order, every
    column in ``data``."""
    return list(encoded(units, size=size))


def encoded(units: pd.DataFrame, *, size: int | None = None, model: bool = True) -> Iterator[Block]:
    """``encode``'s blocks one at a time; with ``model`` False, without the model's columns (stored
    apart: ``encoded_model``). The table goes to Arrow ``_CONVERT`` blocks at a time: block by block
    through pandas was slower, and all at once held a copy of the whole table."""
    size, index = _size(size), 0
    for _, table in _converted(units, size, COLUMNS if model else _OWN_COLUMNS, SCHEMA):
        for at in range(0, table.num_rows, size):
            yield _block(index, table.slice(at, size))
            index += 1


def encoded_model(units: pd.DataFrame, *, size: int | None = None) -> Iterator[ModelBlock]:
    """The model's columns of ``units`` as blocks of their own, cut as ``encoded`` cuts the table."""
    size, index = _size(size), 0
    for ids, table in _converted(units, size, MODEL_COLUMNS, MODEL_SCHEMA):
        for at in range(0, table.num_rows, size):
            part = table.slice(at, size)
            label, score = (part.column(c).null_count < part.num_rows for c in ("model_label", "model_score"))
            first, last = int(ids[at]), int(ids[at + part.num_rows - 1])
            yield ModelBlock(index, first, last, part.num_rows, label, score, _stream(part, MODEL_SCHEMA))
            index += 1


_CONVERT = 16


def _size(size: int | None) -> int:
    return BLOCK_UNITS if size is None else size  # read when called, so that a test can set it


_OWN_COLUMNS = tuple(c for c in COLUMNS if c not in MODEL_COLUMNS)


def _converted(
    units: pd.DataFrame, size: int, columns: Sequence[str], schema: pa.Schema
) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """``units`` in unit order, ``_CONVERT`` blocks of ``size`` at a time: their unit ids, and a table
    of ``schema`` (of its fields, those not in ``columns`` or not in ``units`` all missing)."""
    if len(units) and not units["unit"].is_monotonic_increasing:
        units = units.sort_values("unit", kind="stable")
    step = size * _CONVERT
    for start in range(0, len(units), step):
        part = units.iloc[start : start + step]
        yield part["unit"].to_numpy(), _table(part, columns, schema)


def _block(index: int, part: pa.Table) -> Block:
    unit = part.column("unit")
    return Block(
        index=index,
        first_unit=unit[0].as_py(),
        last_unit=unit[-1].as_py(),
        rows=part.num_rows,
        broad=part.column("n_ns").null_count < part.num_rows,
        distribution=part.column("distribution").null_count < part.num_rows,
        model_label=part.column("model_label").null_count < part.num_rows,
        model_score=part.column("model_score").null_count < part.num_rows,
        data=_stream(part, SCHEMA),
    )


def stream(table: pa.Table) -> bytes:
    """A table of every column (``SCHEMA``) as a block's data."""
    return _stream(table, SCHEMA)


def _stream(part: pa.Table, schema: pa.Schema) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=_WRITE_OPTIONS) as writer:
        writer.write_table(part)
    return sink.getvalue().to_pybytes()


def _table(units: pd.DataFrame, columns: Sequence[str], schema: pa.Schema) -> pa.Table:
    rows = len(units)
    arrays = []
    for name in schema.names:
        if name not in units or name not in columns:
            arrays.append(pa.nulls(rows, schema.field(name).type))
        elif name == "distribution":
            arrays.append(_texts(units[name]))
        elif name in INT_COLUMNS and pd.api.types.is_integer_dtype(units[name].dtype):  # ids beyond 2**53 exact
            arrays.append(pa.array(units[name], type=pa.int64(), from_pandas=True))  # Int64's missing as null
        else:
            values = units[name].to_numpy(dtype=float, na_value=np.nan)
            missing = np.isnan(values)
            if name in INT_COLUMNS:
                values = np.where(missing, 0, values).astype(np.int64)
            arrays.append(pa.array(values, mask=missing if missing.any() else None))
    return pa.Table.from_arrays(arrays, schema=schema)


def _texts(column: pd.Series) -> pa.Array:
    """The label counts as JSON text (a dict or list dumped, text as it is; None, NaN and NA as
    null). The missing are found in one pass over the column, and only the others are dumped one by
    one: a BROAD or numeric campaign has none, and dumping or testing each of its 2,000,000 units
    took 0.8 s of the 1.3 s that encoding its blocks took at 10^7 judgments."""
    values = column.to_numpy(dtype=object)
    missing = pd.isna(values)  # element by element: a dict or a list is not missing
    if missing.all():
        return pa.nulls(len(values), pa.string())
    texts = [
        None if gone else v if isinstance(v, str) else json.dumps(v) for v, gone in zip(values, missing, strict=True)
    ]
    return pa.array(texts, type=pa.string())


def decode(
    data: bytes | memoryview, columns: Sequence[str] | None = None, model: bytes | memoryview | None = None
) -> pa.Table:
    """A block's units (only ``columns`` of them, if given, in ``COLUMNS``' order), the model's
    columns taken from ``model`` when the block has them apart."""
    wanted = list(COLUMNS) if columns is None else _known(columns)
    theirs = [c for c in wanted if c in MODEL_COLUMNS] if model is not None else []
    if not theirs:
        return _read(data, wanted, COLUMNS)
    apart = _read(model, theirs, MODEL_COLUMNS)
    own = [c for c in wanted if c not in theirs]
    table = _read(data, own, COLUMNS) if own else None
    return pa.table([apart.column(c) if c in theirs else table.column(c) for c in wanted], names=wanted)


def _read(data: bytes | memoryview, wanted: Sequence[str], stored: Sequence[str]) -> pa.Table:
    """The ``wanted`` columns of a stream of the ``stored`` columns: only they are decompressed."""
    if len(wanted) == len(stored):
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    options = pa.ipc.IpcReadOptions(included_fields=[stored.index(c) for c in wanted])
    return pa.ipc.open_stream(pa.py_buffer(data), options=options).read_all()


# --- storing ---------------------------------------------------------------------------------------


def write(run_id: int, units: pd.DataFrame) -> int:
    """Store ``units`` as the run's blocks, in place of any it had (inside the caller's transaction);
    the number of blocks. The model's columns, if ``units`` has any, go apart (``Block.model``):
    the blocks are then those of ``write`` without them followed by ``write_model``."""
    UnitBlock.objects.filter(run_id=run_id).delete()
    blocks = encoded(units, model=False)
    if any(c in units for c in MODEL_COLUMNS):
        blocks = (_joined(b, m) for b, m in zip(blocks, encoded_model(units), strict=True))
    if connection.vendor == "postgresql":
        return _copy(run_id, blocks)
    written = 0
    while batch := [UnitBlock(run_id=run_id, **vars(block)) for block in islice(blocks, 64)]:
        UnitBlock.objects.bulk_create(batch)
        written += len(batch)
    return written


def write_model(run_id: int, units: pd.DataFrame) -> int:
    """Store the model's columns of ``units`` in the run's blocks, which ``write`` stored from the same
    units in the same transaction without them; the number of blocks. Refused, with nothing
    written, if the blocks are not those of ``units``."""
    blocks = list(encoded_model(units))
    stored = list(UnitBlock.objects.filter(run_id=run_id).order_by("index").values_list("pk", *_BOUNDS))
    given = [(b.index, b.first_unit, b.last_unit, b.rows) for b in blocks]
    if given != [tuple(bounds) for _, *bounds in stored]:
        raise ValueError(
            f"run {run_id}: the model's columns are of {len(given)} blocks of units, which are not the "
            f"{len(stored)} blocks the run stored"
        )
    if connection.vendor == "postgresql":
        sql = (
            f"UPDATE {connection.ops.quote_name(UnitBlock._meta.db_table)} AS b"
            " SET model = m.model, model_label = m.model_label, model_score = m.model_score"
            " FROM unnest(%b::integer[], %b::bytea[], %b::boolean[], %b::boolean[])"
            " AS m(index, model, model_label, model_score)"
            " WHERE b.run_id = %b AND b.index = m.index"
        )
        columns = [[b.index for b in blocks], [b.data for b in blocks]]
        columns += [[b.model_label for b in blocks], [b.model_score for b in blocks]]
        with pgcopy.server_bound() as cursor:  # the bytes in binary, not as quoted text
            cursor.execute(sql, [*columns, run_id])
        return len(blocks)
    updated = [  # the stored blocks in the order of ``blocks``, as checked above
        UnitBlock(pk=pk, model=b.data, model_label=b.model_label, model_score=b.model_score)
        for (pk, *_), b in zip(stored, blocks, strict=True)
    ]
    UnitBlock.objects.bulk_update(updated, ["model", "model_label", "model_score"], batch_size=64)
    return len(blocks)


def _joined(block: Block, model: ModelBlock) -> Block:
    """``block`` (its model columns missing) with ``model``'s, apart."""
    return replace(block, model_label=model.model_label, model_score=model.model_score, model=model.data)


_BOUNDS = ("index", "first_unit", "last_unit", "rows")
_FLAGS = ("broad", "distribution", "model_label", "model_score")  # Block's and UnitBlock's own fields
_TYPES = ("bigint", "integer", "bigint", "bigint", "integer", *["boolean"] * 4, "bytea", "bytea")  # Block's, in order


def _copy(run_id: int, blocks: Iterable[Block]) -> int:
    """PostgreSQL: COPY in binary, so the bytes travel as they are (bytea as text is twice as long)."""
    table = connection.ops.quote_name(UnitBlock._meta.db_table)
    given = ("run_id", *(f.name for f in fields(Block)))  # in the order of Block's fields
    names = ", ".join(connection.ops.quote_name(UnitBlock._meta.get_field(f).column) for f in given)
    sql = f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        copy.set_types(list(_TYPES))
        written = 0
        for b in blocks:
            copy.write_row((run_id, *astuple(b)))
            written += 1
    return written


# --- reading ---------------------------------------------------------------------------------------


class RunUnits:
    """One run's stored per-unit results, read a block at a time, without the units deleted since."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self._blocks = list(
            UnitBlock.objects.filter(run_id=run_id)
            .order_by("index")
            .values_list("pk", "first_unit", "last_unit", "rows", *_FLAGS, named=True)
        )

    @property
    def stored(self) -> int:
        """The number of units the run stored (deleted units included)."""
        return sum(b.rows for b in self._blocks)

    def has(self, column: str) -> bool:
        """Whether any stored unit has a value in ``column``: "broad", "distribution", "model_label", "model_score"."""
        if column not in _FLAGS:
            raise KeyError(f"no such flag of a block: {column}; the flags are {', '.join(_FLAGS)}")
        return any(getattr(b, column) for b in self._blocks)

    def blocks(self, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """Each block's units in unit order, as a frame of ``columns`` and "unit" (in ``COLUMNS``' order)."""
        wanted = None if columns is None else _wanted(columns)
        present = self._present()
        for start in range(0, len(self._blocks), _FETCH):
            ids = [b.pk for b in self._blocks[start : start + _FETCH]]
            datas = _fetched(ids, wanted)
            for pk in ids:
                frame = _frame(_decoded(datas.pop(pk), wanted))
                keep = present(frame["unit"].to_numpy())
                yield frame if keep.all() else frame[keep].reset_index(drop=True)

    def frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """All the run's units in unit order (an empty frame with the columns if there are none)."""
        frames = list(self.blocks(columns))
        if not frames:
            wanted = COLUMNS if columns is None else _wanted(columns)
            return _frame(SCHEMA.empty_table().select(list(wanted)))
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    def span(self, low: int, high: int, columns: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored values of the units ``low``..``high`` as the run stored them (units deleted
        since included), in unit order: ``columns`` and "unit", each an array (a missing number
        NaN). Only the blocks that hold them are read, and made into arrays once, together."""
        wanted = _wanted(columns)
        ids = [b.pk for b in self._blocks if b.first_unit <= high and b.last_unit >= low]
        datas = _fetched(ids, wanted) if ids else {}
        tables = [_decoded(datas.pop(pk), wanted) for pk in ids]
        table = pa.concat_tables(tables) if tables else SCHEMA.empty_table().select(list(wanted))
        units = table.column("unit").to_numpy()
        inside = (units >= low) & (units <= high)
        out = {}
        for name in wanted:
            values = table.column(name)
            values = values.to_numpy() if values.null_count == 0 else values.to_numpy(zero_copy_only=False)
            out[name] = values if inside.all() else values[inside]
        return out

    def spans(self, ranges: Sequence[tuple[int, int]], columns: Sequence[str]) -> Iterator[dict[str, np.ndarray]]:
        """``span`` of each of ``ranges``, in their order. On PostgreSQL, outside a transaction, they
        are fetched and decompressed ahead (``_AHEAD`` at most) on a thread with a connection of
        its own, while the caller works on the one before: the database's reply and zstd let go of
        the GIL (at 10^7 judgments, 0.55 s of the 0.8 s that reading the figures of 29 slices took
        the combining step). Inside a transaction (a test's) another connection would not see what
        it has not committed: read here, one after another."""
        if not ranges:
            return
        if not pgcopy.available() or connection.in_atomic_block:
            for low, high in ranges:
                yield self.span(low, high, columns)
            return
        ahead: queue.Queue[Any] = queue.Queue(maxsize=_AHEAD)
        stop = threading.Event()

        def hand(item: Any) -> bool:
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def read() -> None:
            try:
                for low, high in ranges:
                    if not hand(self.span(low, high, columns)):
                        return
            except BaseException as exc:  # raised where the spans are taken
                hand(exc)
            finally:
                connection.close()  # this thread's own

        thread = threading.Thread(target=read, name=f"unit-rows-{self.run_id}", daemon=True)
        thread.start()
        try:
            for _ in ranges:
                item = ahead.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            thread.join()

    def row(self, unit_id: int) -> dict[str, Any] | None:
        """One unit's values (None where missing, the distribution as a dict), or None if the run has
        no row for it."""
        block = UnitBlock.objects.filter(run_id=self.run_id, first_unit__lte=unit_id, last_unit__gte=unit_id)
        stored = pgcopy.rows_binary(block.order_by("index").values_list("data", "model")[:1])
        if not stored:
            return None
        ((data, model),) = stored
        table = decode(data, None, model)
        units = table.column("unit").to_numpy()
        at = int(np.searchsorted(units, unit_id))
        if at >= len(units) or units[at] != unit_id or not Unit.objects.filter(pk=unit_id).exists():
            return None
        values = {name: table.column(name)[at].as_py() for name in COLUMNS}
        values["distribution"] = None if values["distribution"] is None else json.loads(values["distribution"])
        return values

    def _present(self) -> Any:
        """A test of unit ids: which still exist (the ids of the run's campaign in the run's range,
        read once: another campaign's units among them would only cost their reading)."""
        if not self._blocks:
            return lambda units: np.ones(len(units), dtype=bool)
        low, high = self._blocks[0].first_unit, self._blocks[-1].last_unit
        campaign = AnalysisRun.objects.filter(pk=self.run_id).values("campaign_id")
        qs = (
            Unit.objects.filter(campaign_id=Subquery(campaign), pk__gte=low, pk__lte=high)
            .order_by("pk")
            .values_list("pk")
        )
        existing = pgcopy.query_frame(qs, ["unit"], {"unit": "int"})["unit"].to_numpy(dtype=np.int64)
        if not len(existing):
            return lambda units: np.zeros(len(units), dtype=bool)

        def present(units: np.ndarray) -> np.ndarray:
            at = np.searchsorted(existing, units)
            return (at < len(existing)) & (existing[np.minimum(at, len(existing) - 1)] == units)

        return present


_FETCH = 16  # blocks a query fetches (a few MB)
_AHEAD = 2  # spans read ahead of the one being used (``RunUnits.spans``)


def _fetched(ids: Sequence[int], wanted: Sequence[str] | None) -> dict[int, tuple[Any, Any]]:
    """The bytes of the blocks ``ids`` by id, with those of their model columns apart when one of
    the ``wanted`` columns (None: all) is the model's, else None for them."""
    blocks = UnitBlock.objects.filter(pk__in=ids)
    if wanted is None or any(c in MODEL_COLUMNS for c in wanted):
        return {pk: (data, model) for pk, data, model in pgcopy.rows_binary(blocks.values_list("pk", "data", "model"))}
    return {pk: (data, None) for pk, data in pgcopy.rows_binary(blocks.values_list("pk", "data"))}


def _decoded(stored: tuple[Any, Any], wanted: Sequence[str] | None) -> pa.Table:
    data, model = stored
    return decode(data, wanted, model)


def _known(columns: Sequence[str]) -> list[str]:
    """``columns`` in ``COLUMNS``' order (the order Arrow reads them in); a name it has not, refused."""
    unknown = sorted(set(columns) - set(COLUMNS))
    if unknown:
        raise ValueError(f"no such per-unit column: {', '.join(unknown)}; the columns are {', '.join(COLUMNS)}")
    return [c for c in COLUMNS if c in columns]


def _wanted(columns: Sequence[str]) -> list[str]:
    """``columns`` and "unit", in ``COLUMNS``' order."""
    return _known(["unit", *columns])


def _frame(table: pa.Table) -> pd.DataFrame:
    """A block's table as pandas: ids as int64, other integers as Int64 where any is missing, floats as float64."""
    frame = table.to_pandas()
    for name in frame.columns:
        column = table.column(name)
        if name in INT_COLUMNS and column.null_count:
            values = column.fill_null(0).to_numpy()
            frame[name] = pd.arrays.IntegerArray(values, column.is_null().to_numpy(zero_copy_only=False))
    return frame
