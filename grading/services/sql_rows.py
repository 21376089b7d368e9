"""Hand-written SQL that reads and writes model rows the way the ORM does, without compiling a query.

The event path runs a few statements per request; built by the ORM, compiling them cost more CPU than
the database spent running them (docs/design.md §5.6, "Cost of an event"). `Columns` selects a
model's concrete columns and turns a slice of a result row into an instance with the same
conversions the ORM applies (`from_db_value`, the backend's converters), and `insert_sql` /
`update_sql` write many rows with one statement. tests/grading/test_event_queries.py checks them
against the ORM on both backends.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import psycopg
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

Converter = Callable[[Any, Any, BaseDatabaseWrapper], Any]


class Columns:
    """A model's concrete columns under a table alias, and the instances made from them."""

    def __init__(self, model: type[Model], alias: str, *, only: Sequence[str] | None = None) -> None:
        self.model = model
        self.alias = alias
        self.fields: list[Field] = [f for f in model._meta.concrete_fields if only is None or f.attname in only]
        self.attnames = [f.attname for f in self.fields]
        self._converters: dict[str, list[tuple[int, list[Converter], Any]]] = {}
        self._plain_model: bool | None = None

    def __len__(self) -> int:
        return len(self.fields)

    def sql(self, connection: BaseDatabaseWrapper) -> str:
        qn = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{qn(f.column)}" for f in self.fields)

    def converters(self, connection: BaseDatabaseWrapper) -> list[tuple[int, list[Converter], Any]]:
        """Per column that needs one: its index, the converters and the expression they expect (what
        the ORM's compiler applies to a selected column)."""
        found = self._converters.get(connection.alias)
        if found is None:
            found = []
            for i, field in enumerate(self.fields):
                column = field.get_col(self.alias)
                chain = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
                if chain:
                    found.append((i, chain, column))
            self._converters[connection.alias] = found
        return found

    def values(self, row: Sequence[Any], start: int, connection: BaseDatabaseWrapper) -> list[Any]:
        """The converted values of this model's columns in `row`, from index `start`."""
        values = list(row[start : start + len(self.fields)])
        for i, chain, column in self.converters(connection):
            value = values[i]
            for convert in chain:
                value = convert(value, column, connection)
            values[i] = value
        return values

    def instance(self, row: Sequence[Any], start: int, connection: BaseDatabaseWrapper) -> Model:
        """What `Model.from_db` makes of the columns. Model.__init__ sets each field through its
        descriptor and sends pre_init and post_init, about 15 us a row: with every field given, no
        receiver of those signals and no from_db of the model's own, the attribute dictionary is
        filled directly instead, the same instance in a tenth of the time."""
        values = self.values(row, start, connection)
        if not self._plain():
            return self.model.from_db(connection.alias, self.attnames, values)
        obj = self.model.__new__(self.model)
        obj.__dict__.update(zip(self.attnames, values, strict=True))
        state = obj._state = ModelState()
        state.adding, state.db = False, connection.alias
        return obj

    def _plain(self) -> bool:
        if self._plain_model is None:
            model = self.model
            self._plain_model = (
                len(self.fields) == len(model._meta.concrete_fields)
                and model.from_db.__func__ is Model.from_db.__func__
                and not pre_init.has_listeners(model)
                and not post_init.has_listeners(model)
            )
        return self._plain_model


def new_instance(model: type[Model], **values: Any) -> Model:
    """`model(**values)` for a new row, filled the way `Columns.instance` fills a stored one: `values` by
    attribute name, every other concrete field at its default (as Model.__init__ sets it), when
    nothing listens to the model's init signals."""
    plain = _plain_fields(model)
    if plain is None or not values.keys() <= plain.keys():
        return model(**values)
    obj = model.__new__(model)
    state = obj.__dict__
    for attname, field in plain.items():
        state[attname] = values[attname] if attname in values else field.get_default()
    obj._state = ModelState()
    return obj


def stored_instance(model: type[Model], db: str, values: dict[str, Any]) -> Model:
    """What `model.from_db(db, names, values)` makes of a stored row given as {attribute name: value}
    for every concrete field; filled directly, as `Columns.instance` does, when the model has no
    from_db of its own and nothing listens to its init signals."""
    plain = _plain_fields(model)
    if plain is None or model.from_db.__func__ is not Model.from_db.__func__ or values.keys() != plain.keys():
        return model.from_db(db, list(values), list(values.values()))
    obj = model.__new__(model)
    obj.__dict__.update(values)
    state = obj._state = ModelState()
    state.adding, state.db = False, db
    return obj


@lru_cache(maxsize=64)
def _plain_fields(model: type[Model]) -> dict[str, Field] | None:
    """The concrete fields by attribute name, or None when instances need Model.__init__ (init signals)."""
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return None
    return {f.attname: f for f in model._meta.concrete_fields}


def cache_related(obj: Model, name: str, value: Model) -> None:
    """Attach `value` as obj's related object `name` when obj's foreign key already holds its id (the
    descriptor's assignment checks and re-sets the id; this only fills the relation's cache, as
    `field.set_cached_value` does)."""
    attname, cache_name = _relation(type(obj), name)
    if getattr(obj, attname) != value.pk:
        raise ValueError(f"{type(obj).__name__}.{name} is {getattr(obj, attname)}, not {value.pk}")
    obj._state.fields_cache[cache_name] = value


@lru_cache(maxsize=64)
def _relation(model: type[Model], name: str) -> tuple[str, str]:
    """A foreign key's attribute name and the key of its related object in an instance's cache."""
    field = model._meta.get_field(name)
    return field.attname, field.cache_name


def insert_sql(
    model: type[Model], rows: Sequence[Model], connection: BaseDatabaseWrapper, *, returning: Sequence[str] = ()
) -> tuple[str, list[Any]]:
    """One INSERT of every concrete column (the primary key too, unless it is an AutoField) for all
    `rows`, optionally returning some columns."""
    fields = _insert_fields(model)
    if connection.vendor == "postgresql":
        return _insert_text(model, connection.alias, 0, tuple(returning)), [recordset(rows, fields, add=True)]
    sql = _insert_text(model, connection.alias, len(rows), tuple(returning))
    return sql, [value for row in rows for value in prepared(row, fields, connection, add=True)]


def update_sql(
    model: type[Model], rows: Sequence[Model], columns: Sequence[str], connection: BaseDatabaseWrapper
) -> tuple[str, list[Any]]:
    """One UPDATE of `columns` for all `rows`, matched by primary key. (Django's bulk_update builds a
    CASE expression per row and column, which costs far more.)"""
    fields = [model._meta.pk] + [model._meta.get_field(c) for c in columns]
    if connection.vendor == "postgresql":
        return _update_text(model, connection.alias, 0, tuple(columns)), [recordset(rows, fields, add=False)]
    sql = _update_text(model, connection.alias, len(rows), tuple(columns))
    return sql, [value for row in rows for value in prepared(row, fields, connection, add=False)]


# PostgreSQL gets the rows as one JSON parameter, unpacked by jsonb_to_recordset: the statement's text
# stays short and the same for any number of rows (psycopg parses a statement's placeholders again
# for every long text, which cost more than the database spent), and the values are serialised by
# the json module's C encoder instead of being quoted one by one. SQLite gets VALUES lists.


def recordset(rows: Sequence[Model], fields: Sequence[Field], *, add: bool) -> str:
    """`rows` as a JSON array of objects keyed by column, with auto_now fields set as save() sets them,
    to one moment for all rows, as QuerySet.update() would (the caller casts it to the columns' types)."""
    stamped = [f for f in fields if getattr(f, "auto_now", False) or (add and getattr(f, "auto_now_add", False))]
    columns = [(f.column, f.attname) for f in fields if f not in stamped]
    stamps: dict[str, tuple[Any, str]] = {}  # by attribute name: the moment, and as JSON text
    out = []
    for row in rows:
        values = row.__dict__  # what the fields' descriptors return, without calling them
        try:
            record = {column: values[attname] for column, attname in columns}
        except KeyError:  # a deferred field: its descriptor loads it
            record = {column: getattr(row, attname) for column, attname in columns}
        for f in stamped:
            stamp = stamps.get(f.attname)
            if stamp is None:
                moment = f.pre_save(row, add)  # sets it on the row
                stamp = stamps[f.attname] = (moment, _json_default(moment))
            else:
                values[f.attname] = stamp[0]
            record[f.column] = stamp[1]
        out.append(record)
    return json.dumps(out, default=_memo_default(), allow_nan=False, separators=(",", ":"))


def _memo_default() -> Callable[[Any], Any]:
    """_json_default, writing each datetime object once: a batch's moment recurs in every row (its
    events' server_ts, its assignments' completed_at), and an aware datetime's isoformat is slow.
    Keyed by identity: every value stays alive, in the rows, while the record set is encoded."""
    texts: dict[int, str] = {}

    def default(value: Any) -> Any:
        if type(value) is datetime.datetime:
            text = texts.get(id(value))
            if text is None:
                text = texts[id(value)] = value.isoformat()
            return text
        return _json_default(value)

    return default


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} through a JSON record set")


def prepared(obj: Model, fields: Sequence[Field], connection: BaseDatabaseWrapper, *, add: bool) -> list[Any]:
    """The values the ORM would send for these fields of `obj` (auto_now fields set as save() sets them)."""
    return [f.get_db_prep_save(f.pre_save(obj, add), connection) for f in fields]


def _insert_fields(model: type[Model]) -> list[Field]:
    fields = model._meta.concrete_fields
    return [f for f in fields if not (f.primary_key and f.get_internal_type().endswith("AutoField"))]


@lru_cache(maxsize=256)
def _insert_text(model: type[Model], alias: str, n_rows: int, returning: tuple[str, ...]) -> str:
    """INSERT from a JSON record set (PostgreSQL, n_rows 0) or a VALUES list of n_rows."""
    connection = connections[alias]
    qn = connection.ops.quote_name
    meta = model._meta
    fields = _insert_fields(model)
    names = ", ".join(qn(f.column) for f in fields)
    if connection.vendor == "postgresql":
        source = f"SELECT {names} FROM {_recordset_from(fields, connection)}"
    else:
        source = "VALUES " + ", ".join(["(" + ", ".join(["%s"] * len(fields)) + ")"] * n_rows)
    sql = f"INSERT INTO {qn(meta.db_table)} ({names}) {source}"
    if returning:
        sql += " RETURNING " + ", ".join(qn(meta.get_field(name).column) for name in returning)
    return sql


@lru_cache(maxsize=256)
def _update_text(model: type[Model], alias: str, n_rows: int, columns: tuple[str, ...]) -> str:
    """UPDATE ... FROM a JSON record set (PostgreSQL, n_rows 0) or a VALUES list of n_rows."""
    connection = connections[alias]
    qn = connection.ops.quote_name
    meta = model._meta
    fields = [meta.pk] + [meta.get_field(c) for c in columns]
    table = qn(meta.db_table)
    if connection.vendor == "postgresql":
        names = [qn(f.column) for f in fields]
        source = _recordset_from(fields, connection)
    else:  # VALUES names its columns column1, column2, ...
        names = [f"column{i}" for i in range(1, len(fields) + 1)]
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        source = f"(VALUES {', '.join([row] * n_rows)}) AS v"
    assignments = ", ".join(f"{qn(f.column)} = v.{name}" for f, name in zip(fields[1:], names[1:], strict=True))
    return f"UPDATE {table} SET {assignments} FROM {source} WHERE {table}.{qn(meta.pk.column)} = v.{names[0]}"


def _recordset_from(fields: Sequence[Field], connection: BaseDatabaseWrapper) -> str:
    qn = connection.ops.quote_name
    types = ", ".join(f"{qn(f.column)} {f.db_type(connection)}" for f in fields)
    return f"jsonb_to_recordset(%s::jsonb) AS v({types})"


def read_cursor(connection: BaseDatabaseWrapper) -> CursorWrapper:
    """A cursor for a hand-written read. On PostgreSQL its timestamps are read by psycopg's own loader
    (compiled) instead of the one Django registers on the connection, a Python subclass that gives
    each value the connection's time zone, which costs several microseconds a value. That is only
    done when the two agree: Django's zone is UTC and so is the session's, whose timestamps psycopg
    reads as UTC (datetime.UTC), as Django's loader does."""
    cursor = connection.cursor()
    if connection.vendor == "postgresql" and _timestamps_alike(connection):
        cursor.cursor.adapters.register_loader(_TIMESTAMPTZ, _base_timestamp_loader())
    return cursor


def _timestamps_alike(connection: BaseDatabaseWrapper) -> bool:
    pgconn = connection.connection.pgconn
    return connection.timezone is datetime.UTC and pgconn.parameter_status(b"TimeZone") == b"UTC"


_TIMESTAMPTZ = 1184  # the type's oid, fixed in PostgreSQL's catalog


@lru_cache(maxsize=1)
def _base_timestamp_loader() -> type:
    return psycopg.adapters.get_loader(_TIMESTAMPTZ, psycopg.pq.Format.TEXT)


def connection_for(model: type[Model]) -> BaseDatabaseWrapper:
    from django.db import router

    return connections[router.db_for_write(model)]
