"""PostgreSQL's COPY: the one fast path for bulk reads and writes; on other databases, the ORM.

- ``query_frame``: a values_list query as a DataFrame. On PostgreSQL through ``COPY (…) TO STDOUT``
  into a temporary file (not memory) and Arrow's CSV reader (no Python object per row; floats arrive
  as PostgreSQL's shortest exact text and Arrow parses them with correct rounding, so they are the
  stored doubles to the last bit). Elsewhere the ORM in chunks. Both give the same frame.
- ``copy_out``: the blocks of ``COPY (…) TO STDOUT WITH (FORMAT csv)``, for a response to stream.
- ``copy_out_into``: the same rows written into a file at once (``query_frame``'s read).
- ``rows_binary``: the rows of a values_list query whose bytes are large, fetched in binary.
- ``server_bound``: a cursor whose parameters the server binds, for statements that send large bytes.
- ``update_bound``: ``QuerySet.update`` through such a cursor.

A COPY CSV writes NULL as an unquoted empty field and an empty string as ``""``; the reader keeps
the two apart.
"""

from __future__ import annotations

import select
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any, BinaryIO, Literal

import pandas as pd
import psycopg
from django.db import connection, transaction
from django.db.models import QuerySet
from django.db.models.sql import UpdateQuery

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


def _sent(pgconn: Any) -> None:
    """Wait until libpq has sent what it holds: the connection does not block on writes."""
    while pgconn.flush():
        select.select([], [pgconn.socket], [])


def rows_binary(qs: QuerySet) -> list[tuple[Any, ...]]:
    """The rows of ``qs``, a ``values_list`` query of plain fields (integers, booleans, bytes), as
    tuples. On PostgreSQL they are fetched in binary, bound by the server: bytea then arrives as
    its bytes, where in text it comes as hex, twice as long, to be decoded (28 MB took 0.16 s
    against 0.05 s). Elsewhere the ORM's rows, bytes as it gives them."""
    if not available():
        return list(qs)
    sql, params = qs.query.sql_with_params()
    with server_bound() as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall()


@contextmanager
def server_bound() -> Iterator[psycopg.Cursor]:
    """PostgreSQL: a cursor on Django's connection (in its transaction) whose parameters the server
    binds, in binary with ``%b``. Django's own cursors bind them on the client, bytea as quoted hex
    text twice as long."""
    with connection.cursor() as cursor, psycopg.Cursor(cursor.cursor.connection) as bound:
        yield bound


def update_bound(qs: QuerySet, **values: Any) -> int:
    """``qs.update(**values)``, the number of rows it changed. On PostgreSQL the statement Django
    makes is sent through ``server_bound``, so that large bytes travel in binary: 26 MB took 0.65 s
    to send as the quoted hex text of Django's own cursor and 0.15 s so, most of the difference the
    server's parsing of the text. Elsewhere ``qs.update`` itself."""
    if not available():
        return qs.update(**values)
    if qs.query.is_sliced or qs.query.combinator:
        raise TypeError("update_bound takes a plain filtered query, not a slice nor a combination of queries")
    query = qs.query.chain(UpdateQuery)
    query.add_update_values(values)
    if query.get_related_updates():  # a parent model's table too: QuerySet.update's own work
        raise TypeError("update_bound writes one table; the model inherits fields from another")
    query.clear_select_clause()
    sql, params = query.get_compiler(qs.db).as_sql()
    if not sql:  # nothing to set
        return 0
    with transaction.mark_for_rollback_on_error(using=qs.db), server_bound() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


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
