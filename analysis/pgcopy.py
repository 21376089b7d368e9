"""PostgreSQL's COPY: the one fast path for bulk reads and writes; on other databases, the ORM.

- ``query_frame``: a values_list query as a DataFrame. On PostgreSQL through ``COPY (…) TO STDOUT``
  into a temporary file (not memory) and Arrow's CSV reader (no Python object per row; floats arrive
  as PostgreSQL's shortest exact text and Arrow parses them with correct rounding, so they are the
  stored doubles to the last bit). Elsewhere the ORM in chunks. Both give the same frame.
- ``copy_out``: the blocks of ``COPY (…) TO STDOUT WITH (FORMAT csv)``, for a response to stream.
- ``copy_out_into``: the same rows written into a file at once (``query_frame``'s read).
- ``copy_in_binary`` with ``binary_rows``: columns of numbers (and JSON) into a table with COPY's
  binary format, laid out by NumPy: no text to write nor for the server to parse.

A COPY CSV writes NULL as an unquoted empty field and an empty string as ``""``; the reader keeps
the two apart.
"""

from __future__ import annotations

import select
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, BinaryIO, Literal

import numpy as np
import pandas as pd
import psycopg
from django.db import connection
from django.db.models import QuerySet

CHUNK = 50_000
TIMESTAMP = "datetime64[us, UTC]"
ColumnType = Literal["int", "float", "text", "code", "timestamp"]


def available() -> bool:
    return connection.vendor == "postgresql"


def copy_out(sql: str, params: Sequence[Any] = ()) -> Iterator[bytes]:
    """The CSV blocks of ``COPY (sql) TO STDOUT`` (PostgreSQL only)."""
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", params) as stream,
    ):
        for block in stream:
            yield bytes(block)


def copy_out_into(sql: str, params: Sequence[Any], out: BinaryIO) -> None:
    """Write the CSV rows of ``COPY (sql) TO STDOUT`` into ``out`` (PostgreSQL only).

    libpq hands COPY data out a row per call whichever way it is read. psycopg's ``Copy`` iterator
    takes each row through its general wait machinery (about 1 µs a row: most of what reading an
    analysis shard cost); this loop asks libpq for the next row and blocks in it, the same protocol
    without the machinery (0.37 -> 0.09 s of CPU for 400,000 events, the same bytes). The query's
    parameters are bound on the client (``ClientCursor.mogrify``), as COPY takes none."""
    with connection.cursor() as cursor:
        conn = cursor.cursor.connection
        query = psycopg.ClientCursor(conn).mogrify(sql, params)
        with conn.lock:
            pgconn = conn.pgconn
            pgconn.send_query(f"COPY ({query}) TO STDOUT WITH (FORMAT csv)".encode(conn.info.encoding))
            _sent(pgconn)
            started = pgconn.get_result()
            read, write = pgconn.get_copy_data, out.write
            if started is not None and started.status == psycopg.pq.ExecStatus.COPY_OUT:
                while (size_and_row := read(0))[0] > 0:
                    write(size_and_row[1])
            failed = None if started is None or started.status == psycopg.pq.ExecStatus.COPY_OUT else started
            while (result := pgconn.get_result()) is not None:  # COPY's own result, then the end
                if result.status != psycopg.pq.ExecStatus.COMMAND_OK and failed is None:
                    failed = result
        if failed is not None:
            raise psycopg.errors.error_from_result(failed, encoding=conn.info.encoding)


# COPY's binary format (PostgreSQL's documentation, "COPY", "Binary Format"): a signature, flags and
# the length of an extension (both zero), rows, and -1 as the trailer; every number big-endian.
BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
BINARY_TRAILER = b"\xff\xff"
# The PostgreSQL types ``binary_rows`` writes, as NumPy's big-endian types; jsonb is written as text.
BINARY_TYPES = {"bigint": ">i8", "integer": ">i4", "smallint": ">i2", "double precision": ">f8"}
BinaryColumn = tuple[str, Any, Any]  # (PostgreSQL type, values, missing: a bool per row, or None)


def copy_in_binary(table: str, columns: Sequence[str], blocks: Iterable[np.ndarray]) -> None:
    """Write ``binary_rows`` blocks (``columns`` in order) with ``COPY table (columns) FROM STDIN
    WITH (FORMAT binary)``. The server reads each value as it is stored (a double's eight bytes),
    so it parses no text, and nothing is formatted as text here (PostgreSQL only)."""
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT binary)"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        pgconn = cursor.cursor.connection.pgconn
        copy.write(BINARY_HEADER)
        for block in blocks:
            copy.write(block.data)  # a memoryview: psycopg asks a block whether it is empty
            # psycopg flushes a COPY only on macOS: whatever the server has not taken yet stays in
            # libpq's buffer, which grows to the whole table's rows when the server is the slower side
            # (0.3 GB for 2,000,000 per-unit rows). Once the block is sent, one block at most is held.
            _sent(pgconn)
        copy.write(BINARY_TRAILER)


def binary_rows(columns: Sequence[BinaryColumn]) -> np.ndarray:
    """The rows of ``columns`` in COPY's binary format, as bytes (``np.uint8``), without a Python
    object per value: per row the number of fields, then per field its length (-1 for NULL) and its
    bytes. Each column is (PostgreSQL type, values, missing): a type of ``BINARY_TYPES`` with a
    NumPy array of values (any numeric dtype that holds them exactly; a missing row's value is not
    read), or "jsonb" with a list of JSON texts as bytes, None for NULL (``missing`` unused)."""
    rows = len(columns[0][1]) if columns else 0
    lengths, payloads = [], []
    for kind, values, missing in columns:
        if kind == "jsonb":  # jsonb's binary form: a version byte (1), then the text
            texts = [None if t is None else b"\x01" + t for t in values]
            length = np.fromiter((-1 if t is None else len(t) for t in texts), dtype=np.int64, count=rows)
            payloads.append(texts)
        else:
            dtype = np.dtype(BINARY_TYPES[kind])
            length = np.full(rows, dtype.itemsize, dtype=np.int64)
            if missing is not None:
                length[np.asarray(missing, dtype=bool)] = -1
            payloads.append(np.asarray(values))
        lengths.append(length)
    if rows and all(length[0] == length[-1] and (length == length[0]).all() for length in lengths):
        return _binary_rows_alike(columns, [int(length[0]) for length in lengths], payloads)
    sizes = [np.maximum(length, 0) for length in lengths]
    row_size = 2 + sum(4 + size for size in sizes)
    out = np.empty(int(row_size.sum()), dtype=np.uint8)
    at = np.cumsum(row_size) - row_size
    _put(out, at, np.full(rows, len(columns), dtype=">i2"))
    at = at + 2
    for (kind, _, _), length, size, values in zip(columns, lengths, sizes, payloads, strict=True):
        _put(out, at, length.astype(">i4"))
        at = at + 4
        present = length >= 0
        if kind == "jsonb":
            texts = [t for t in values if t is not None]
            if texts:
                starts, data = at[present], np.frombuffer(b"".join(texts), dtype=np.uint8)
                offsets = np.arange(data.size) - np.repeat(np.cumsum(size[present]) - size[present], size[present])
                out[np.repeat(starts, size[present]) + offsets] = data
        elif present.any():
            _put(out, at[present], values[present].astype(BINARY_TYPES[kind]))
        at = at + size
    return out


def _binary_rows_alike(columns: Sequence[BinaryColumn], lengths: list[int], payloads: list[Any]) -> np.ndarray:
    """``binary_rows`` when every row has the same fields NULL (most blocks: a column is missing in
    every row or in none): every row has one layout, so the rows are one packed structured array,
    each column copied into its field at once, 20 times faster than placing each value's bytes."""
    fields: list[tuple[str, str]] = [("fields", ">i2")]
    for i, ((kind, _, _), length) in enumerate(zip(columns, lengths, strict=True)):
        fields.append((f"length{i}", ">i4"))
        if length >= 0:
            fields.append((f"value{i}", BINARY_TYPES[kind] if kind != "jsonb" else f"S{length}"))
    out = np.empty(len(columns[0][1]), dtype=np.dtype(fields))  # packed: no padding between fields
    out["fields"] = len(columns)
    for i, ((kind, _, _), length, values) in enumerate(zip(columns, lengths, payloads, strict=True)):
        out[f"length{i}"] = length
        if length >= 0:
            out[f"value{i}"] = values if kind != "jsonb" else np.array(values, dtype=f"S{length}")
    return out.view(np.uint8)


def _put(out: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    """Write each of ``values``' bytes (a fixed-size dtype) into ``out`` from the offset ``at`` of its row."""
    width = values.dtype.itemsize
    out[at[:, None] + np.arange(width)] = values.view(np.uint8).reshape(-1, width)


def _sent(pgconn: Any) -> None:
    """Wait until libpq has sent what it holds: the connection does not block on writes."""
    while pgconn.flush():
        select.select([], [pgconn.socket], [])


def query_frame(
    qs: QuerySet, columns: Sequence[str], types: Mapping[str, ColumnType], *, use_copy: bool = True
) -> pd.DataFrame:
    """The rows of a values_list query as a DataFrame with ``columns``.

    ``types`` gives each column's kind: "int" (int64; float64 with NaN when a value is NULL), "float",
    "timestamp" (a timestamptz as datetime64[us, UTC], NaT for NULL: microseconds are what
    PostgreSQL stores, and they reach year 1, which nanoseconds do not), "text" (object, None for
    NULL) or "code" (text of few distinct values as a categorical, ``code_dtype``: a byte a row where
    "text" takes a pointer, and no Python object per row while it is read).
    ``use_copy=False`` forces the ORM path (for JSON values, and to compare the two).
    """
    if use_copy and available():
        return _frame_by_copy(qs, list(columns), types)
    return _frame_by_orm(qs, list(columns), types)


def _frame_by_orm(qs: QuerySet, columns: list[str], types: Mapping[str, ColumnType]) -> pd.DataFrame:
    rows = qs.iterator(chunk_size=CHUNK)
    parts = []
    while batch := list(islice(rows, CHUNK)):
        parts.append(pd.DataFrame.from_records(batch, columns=columns))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    for column in columns:
        kind = types.get(column, "text")
        if kind == "float" or (kind == "int" and frame[column].isna().any()):
            frame[column] = pd.to_numeric(frame[column]).astype(float)
        elif kind == "int":
            frame[column] = frame[column].astype("int64")
        elif kind == "timestamp":
            frame[column] = pd.Series(frame[column].to_numpy(dtype=object), dtype=TIMESTAMP, index=frame.index)
        elif kind == "code":  # text, as COPY gives it: a JSON number or boolean arrives here as one
            present = frame[column].notna().to_numpy()
            texts = [str(v) if p else None for v, p in zip(frame[column].to_numpy(dtype=object), present, strict=True)]
            dtype = code_dtype(t for t in texts if t is not None)
            frame[column] = pd.Series(pd.Categorical(texts, dtype=dtype), index=frame.index)
        else:
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame


def _frame_by_copy(qs: QuerySet, columns: list[str], types: Mapping[str, ColumnType]) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    sql, params = qs.query.sql_with_params()
    # Timestamps parsed by Arrow from PostgreSQL's text ("2026-11-26 05:16:30.123456+00"; the
    # connection's time zone is UTC): no Python string per value, the largest cost of reading events.
    arrow = {
        "int": pa.int64(),
        "float": pa.float64(),
        "text": pa.string(),
        "code": pa.dictionary(pa.int32(), pa.string()),  # each distinct text once, an index a row
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    with tempfile.TemporaryFile() as buffer:
        copy_out_into(sql, params, buffer)
        if buffer.tell() == 0:
            return _frame_by_orm(qs.none(), columns, types)
        buffer.seek(0)
        table = pa_csv.read_csv(
            buffer,
            read_options=pa_csv.ReadOptions(column_names=columns),
            convert_options=pa_csv.ConvertOptions(
                column_types={c: arrow[types.get(c, "text")] for c in columns},
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            ),
        )
    # Column by column, each Arrow buffer freed once converted: the peak is the frame, not twice it.
    frame = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    # Arrow's pool keeps what the read freed for its next allocation; the rest of an analysis uses
    # numpy's, so it goes back to the system now and is no part of the next step's peak.
    pa.default_memory_pool().release_unused()
    for column in columns:
        kind = types.get(column, "text")
        if kind == "text" and frame[column].dtype != object:
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
        elif kind == "code":  # Arrow's categories come in the order met: sorted, as the ORM path's
            categories = frame[column].cat.categories
            frame[column] = frame[column].cat.set_categories(code_dtype(categories).categories)
    return frame


def code_dtype(texts: Iterable[str]) -> pd.CategoricalDtype:
    """The dtype of a "code" column holding ``texts``: the distinct texts, sorted, as categories
    (object), so that one column reads the same through COPY and through the ORM."""
    return pd.CategoricalDtype(pd.Index(sorted(set(texts)), dtype=object))
