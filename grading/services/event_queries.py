"""The statements that record a batch of events, written as SQL (docs/design.md §5.6, "Cost of an event").

A request runs three of them between BEGIN and COMMIT, whatever the batch's size:

1. `assignments_locked`: the grader's assignments of the batch's units with their campaigns and
   units, whether the grader grades in each campaign, and the units' allocation-state rows, the
   assignment and the state row locked together in unit order (PostgreSQL; SQLite serialises
   writers anyway).
2. `judgments_read`: read after those locks are held, so that nothing a concurrent writer commits
   meanwhile is missed: the grader's judgments of the units, every other grader's values of them and
   the units' assignments (what a unit's state is counted from).
3. `batch_write`: the events, new and changed judgments, assignments' statuses and the units' new
   state; on PostgreSQL in one statement (data-modifying WITH), on SQLite one per table.

Built by the ORM they cost more CPU to compile than the database spent running them.
tests/grading/test_event_queries.py checks them against the ORM queries and writes they replace,
on both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from grading.models import Assignment, Campaign, CampaignRole, GradingEvent, Judgment, Unit
from grading.models.allocation import UnitAllocation
from grading.models.choices import Role
from grading.services.allocation_state import STATE_COLUMNS
from grading.services.sql_rows import Columns, cache_related, connection_for, insert_sql, read_cursor, update_sql

ASSIGNMENT = Columns(Assignment, "a")
CAMPAIGN = Columns(Campaign, "c")
UNIT = Columns(Unit, "u")
STATE = Columns(UnitAllocation, "s")
JUDGMENT = Columns(Judgment, "j")
VALUE_COLUMNS = ("broad", "fine", "score", "label", "verdict")  # every scheme's value field (payloads.VALUE_FIELD)


@dataclass
class Locked:
    """One of the grader's assignments with its campaign, unit and the unit's state row, locked."""

    assignment: Assignment
    campaign: Campaign
    graded: bool  # the grader has the grader role in the campaign
    state: UnitAllocation


def assignments_locked(*, grader_id: int, campaign_ids: Sequence[int], unit_ids: Sequence[int]) -> list[Locked]:
    """The grader's assignments of these units in these campaigns, each locked with its unit's state
    row, in unit order (then assignment id: a hidden repeat comes after the unit's first assignment).
    Units without a state row are left out (the caller takes the slower path for them)."""
    if not unit_ids or not campaign_ids:
        return []
    connection = connection_for(Assignment)
    sql = _locked_sql(connection.alias, *_sizes(connection, campaign_ids, unit_ids))
    with read_cursor(connection) as cursor:
        cursor.execute(sql, [Role.GRADER, grader_id, *_ids(connection, campaign_ids), *_ids(connection, unit_ids)])
        rows = cursor.fetchall()
    campaigns: dict[int, Campaign] = {}
    found = []
    starts = _starts(ASSIGNMENT, CAMPAIGN, UNIT, STATE)
    for row in rows:
        assignment = ASSIGNMENT.instance(row, starts[0], connection)
        campaign = campaigns.get(assignment.campaign_id)
        if campaign is None:
            campaign = campaigns[assignment.campaign_id] = CAMPAIGN.instance(row, starts[1], connection)
        unit = UNIT.instance(row, starts[2], connection)
        state = STATE.instance(row, starts[3], connection)
        cache_related(assignment, "campaign", campaign)
        cache_related(assignment, "unit", unit)
        cache_related(unit, "campaign", campaign)
        cache_related(state, "campaign", campaign)
        found.append(Locked(assignment=assignment, campaign=campaign, graded=bool(row[-1]), state=state))
    return found


@cache
def _locked_sql(alias: str, n_campaigns: int, n_units: int) -> str:
    connection = connection_for(Assignment)
    qn = connection.ops.quote_name
    a, c, u, s, r = (qn(m._meta.db_table) for m in (Assignment, Campaign, Unit, UnitAllocation, CampaignRole))
    lock = " FOR UPDATE OF a, s" if connection.features.has_select_for_update_of else ""
    return (
        f"SELECT {ASSIGNMENT.sql(connection)}, {CAMPAIGN.sql(connection)}, {UNIT.sql(connection)}, "
        f"{STATE.sql(connection)}, EXISTS (SELECT 1 FROM {r} r WHERE r.campaign_id = a.campaign_id"
        " AND r.user_id = a.grader_id AND r.role = %s)"
        f" FROM {a} a JOIN {c} c ON c.id = a.campaign_id JOIN {u} u ON u.id = a.unit_id"
        f" JOIN {s} s ON s.unit_id = a.unit_id"
        f" WHERE a.grader_id = %s AND {_in('a.campaign_id', n_campaigns)} AND {_in('a.unit_id', n_units)}"
        f" ORDER BY a.unit_id, a.id{lock}"
    )


@dataclass
class UnitsRead:
    """What `judgments_read` found: the grader's own judgments by unit; per unit, the other graders'
    values ({grader: {value field: value}}) and the status of every non-repeat assignment
    ({grader: status}), for the units asked to be counted."""

    own: dict[int, Judgment] = field(default_factory=dict)
    others: dict[int, dict[int, dict[str, Any]]] = field(default_factory=dict)
    statuses: dict[int, dict[int, str]] = field(default_factory=dict)


def judgments_read(*, grader_id: int, unit_ids: Sequence[int], counted: Sequence[int]) -> UnitsRead:
    """The grader's judgments of `unit_ids` and, for the units in `counted`, every other grader's
    values and the units' non-repeat assignments, in one statement."""
    found = UnitsRead()
    if not unit_ids:
        return found
    connection = connection_for(Judgment)
    sql = _read_sql(connection.alias, *_sizes(connection, unit_ids, counted), bool(counted))
    params: list[Any] = [grader_id, *_ids(connection, unit_ids)]
    if counted:
        params += [grader_id, *_ids(connection, counted), *_ids(connection, counted)]
    with read_cursor(connection) as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    grader_at, unit_at = JUDGMENT.attnames.index("grader_id") + 1, JUDGMENT.attnames.index("unit_id") + 1
    value_at = [(name, JUDGMENT.attnames.index(name) + 1) for name in VALUE_COLUMNS]
    for row in rows:
        kind = row[0]
        if kind == "j":
            judgment = JUDGMENT.instance(row, 1, connection)
            found.own[judgment.unit_id] = judgment
        elif kind == "v":
            values = JUDGMENT.values(row, 1, connection)
            found.others.setdefault(row[unit_at], {})[row[grader_at]] = {n: values[i - 1] for n, i in value_at}
        else:
            found.statuses.setdefault(row[unit_at], {})[row[grader_at]] = row[-1]
    for unit_id in counted:
        found.others.setdefault(unit_id, {})
        found.statuses.setdefault(unit_id, {})
    return found


@cache
def _read_sql(alias: str, n_units: int, n_counted: int, counting: bool) -> str:
    connection = connection_for(Judgment)
    qn = connection.ops.quote_name
    j, a = qn(Judgment._meta.db_table), qn(Assignment._meta.db_table)
    columns = [f"j.{qn(f.column)}" for f in JUDGMENT.fields]
    own = f"SELECT 'j', {', '.join(columns)}, NULL FROM {j} j WHERE j.grader_id = %s AND {_in('j.unit_id', n_units)}"
    if not counting:
        return own
    kept = {"grader_id", "unit_id", *VALUE_COLUMNS}
    others = [col if f.attname in kept else "NULL" for f, col in zip(JUDGMENT.fields, columns, strict=True)]
    statuses = [
        "a.grader_id" if f.attname == "grader_id" else "a.unit_id" if f.attname == "unit_id" else "NULL"
        for f in JUDGMENT.fields
    ]
    return (
        f"{own} UNION ALL SELECT 'v', {', '.join(others)}, NULL FROM {j} j"
        f" WHERE j.grader_id <> %s AND {_in('j.unit_id', n_counted)}"
        f" UNION ALL SELECT 'a', {', '.join(statuses)}, a.status FROM {a} a"
        f" WHERE {_in('a.unit_id', n_counted)} AND NOT a.{qn('repeat')}"
    )


@dataclass
class Writes:
    """Rows a batch writes. `judgments_changed` and `assignments` write only the given columns."""

    events: list[GradingEvent] = field(default_factory=list)
    judgments_new: list[Judgment] = field(default_factory=list)
    judgments_changed: list[Judgment] = field(default_factory=list)
    judgment_columns: Sequence[str] = ()
    assignments: list[Assignment] = field(default_factory=list)
    assignment_columns: Sequence[str] = ()
    states: list[UnitAllocation] = field(default_factory=list)


def batch_write(writes: Writes) -> None:
    """Write everything in `writes`; new judgments get their ids. On PostgreSQL one statement."""
    connection = connection_for(GradingEvent)
    parts = _parts(writes, connection)
    if not parts:
        return
    if connection.vendor == "postgresql" and len(parts) > 1:
        # Data-modifying WITH: every part runs once, all against the same snapshot; they touch
        # different rows, and foreign keys are checked at commit (Django makes them deferrable).
        names = [f"w{i}" for i in range(len(parts))]
        head = ", ".join(f"{n} AS ({sql})" for n, (sql, _) in zip(names, parts, strict=True))
        last = names[-1] if writes.judgments_new else None  # the new judgments' part comes last
        sql = f"WITH {head} " + (f"SELECT * FROM {last}" if last else "SELECT 1")
        statements = [(sql, [p for _, params in parts for p in params])]
    else:
        statements = parts
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
        if writes.judgments_new:
            ids = dict(cursor.fetchall())  # unit id -> new judgment id
            for judgment in writes.judgments_new:
                judgment.pk = ids[judgment.unit_id]
                judgment._state.adding, judgment._state.db = False, connection.alias


def _parts(writes: Writes, connection: BaseDatabaseWrapper) -> list[tuple[str, list[Any]]]:
    parts = []
    if writes.events:
        parts.append(insert_sql(GradingEvent, writes.events, connection))
        for event in writes.events:
            event._state.adding, event._state.db = False, connection.alias
    if writes.judgments_changed:
        parts.append(update_sql(Judgment, writes.judgments_changed, writes.judgment_columns, connection))
    if writes.assignments:
        parts.append(update_sql(Assignment, writes.assignments, writes.assignment_columns, connection))
    if writes.states:
        parts.append(update_sql(UnitAllocation, writes.states, STATE_COLUMNS, connection))
    if writes.judgments_new:
        parts.append(insert_sql(Judgment, writes.judgments_new, connection, returning=("unit_id", "id")))
    return parts


# Lists of ids: one array parameter on PostgreSQL (the statement's text and its number of parameters
# stay the same whatever the batch's size, so psycopg parses it once), placeholders on SQLite.
def _sizes(connection: BaseDatabaseWrapper, *lists: Sequence[int]) -> list[int]:
    """The sizes `_in` is built for: 0 (an array) on PostgreSQL."""
    return [0 if connection.vendor == "postgresql" else len(ids) for ids in lists]


def _in(column: str, n: int) -> str:
    return f"{column} = ANY(%s::bigint[])" if n == 0 else f"{column} IN ({', '.join(['%s'] * n)})"


def _ids(connection: BaseDatabaseWrapper, ids: Sequence[int]) -> list[Any]:
    """On PostgreSQL the array as text, '{1,2,3}', which the statement casts: psycopg's adaptation of a
    Python list inspects every element and cost more than the statement's other parameters."""
    if connection.vendor == "postgresql":
        return ["{" + ",".join([str(int(i)) for i in ids]) + "}"]
    return list(ids)


def _starts(*groups: Columns) -> list[int]:
    starts, at = [], 0
    for group in groups:
        starts.append(at)
        at += len(group)
    return starts
