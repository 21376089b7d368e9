"""The lookups of a request for more work, written as SQL (docs/design.md §5.6, "Cost of next").

They run on every such request. Built by the ORM, each cost about 2 ms of Python to compile and
well under 1 ms in the database (measured with bench/allocation.py), so they are plain SQL over the
models' tables, each one statement. On PostgreSQL the row they take is locked with FOR UPDATE SKIP
LOCKED, so two graders never take the same one; SQLite has no row locks and serialises writers
instead. tests/grading/test_allocation_queries.py checks them against the ORM queries they replace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.db import connection

from grading.models import Assignment, Judgment
from grading.models.allocation import UnitAllocation
from grading.models.choices import AssignmentSource, AssignmentStatus

A, J, U = Assignment._meta.db_table, Judgment._meta.db_table, UnitAllocation._meta.db_table


@dataclass(frozen=True)
class Wanted:
    """A unit that needs one more judgment, locked, with what the new assignment needs."""

    unit_id: int
    query_id: int | None
    reason: str
    n_judgments: int
    n_assigned: int
    n_open: int
    next_position: int  # after every assignment the grader has in the campaign


def own_open_take(*, grader_id: int, campaign_id: int, lease_expires_at: datetime) -> int | None:
    """The id of the grader's first open assignment (by position), now leased until `lease_expires_at`."""
    return _one(
        f"UPDATE {A} SET lease_expires_at = %s WHERE id = ("
        f" SELECT id FROM {A} WHERE campaign_id = %s AND grader_id = %s AND status = %s"
        f" ORDER BY position, id LIMIT 1{_lock(A)}) RETURNING id",
        [lease_expires_at, campaign_id, grader_id, AssignmentStatus.OPEN],
    )


def expired_slot_take(*, grader_id: int, campaign_id: int, now: datetime, lease_expires_at: datetime) -> int | None:
    """Hand the grader an adaptive slot whose grader let the lease run out without judging its unit
    (a unit the grader never had); returns its id, or None."""
    return _one(
        f"UPDATE {A} SET grader_id = %s, position = ({_NEXT_POSITION}), lease_expires_at = %s WHERE id = ("
        f" SELECT a.id FROM {A} a WHERE a.campaign_id = %s AND a.source = %s AND a.status = %s"
        " AND a.lease_expires_at < %s AND a.unit_id IS NOT NULL AND NOT a.repeat AND a.grader_id <> %s"
        f" AND NOT EXISTS (SELECT 1 FROM {A} m WHERE m.grader_id = %s AND m.unit_id = a.unit_id)"
        f" AND NOT EXISTS (SELECT 1 FROM {J} j WHERE j.grader_id = a.grader_id AND j.unit_id = a.unit_id)"
        f" ORDER BY a.lease_expires_at, a.id LIMIT 1{_lock('a')}) RETURNING id",
        [grader_id, campaign_id, grader_id, lease_expires_at]
        + [campaign_id, AssignmentSource.ADAPTIVE, AssignmentStatus.OPEN, now, grader_id, grader_id],
    )


def wanted_take(
    *, grader_id: int, campaign_id: int, limit: int = 1, query_ids: list[int | None] | None = None
) -> list[Wanted]:
    """Lock and return up to `limit` units that need more and that the grader never had, most wanted
    first (priority, then unit id); only of `query_ids` when given (None stands for units without one)."""
    where, params = "", []
    if query_ids is not None:
        ids = [q for q in query_ids if q is not None]
        alternatives = [f"u.query_id IN ({', '.join(['%s'] * len(ids))})"] if ids else []
        if None in query_ids:
            alternatives.append("u.query_id IS NULL")
        where = f" AND ({' OR '.join(alternatives) or 'FALSE'})"
        params = ids
    sql = (
        f"SELECT u.unit_id, u.query_id, u.reason, u.n_judgments, u.n_assigned, u.n_open, ({_NEXT_POSITION})"
        f" FROM {U} u WHERE u.campaign_id = %s AND u.needs_more"
        f" AND NOT EXISTS (SELECT 1 FROM {A} m WHERE m.grader_id = %s AND m.unit_id = u.unit_id){where}"
        f" ORDER BY u.priority DESC, u.unit_id LIMIT %s{_lock('u')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [campaign_id, grader_id, campaign_id, grader_id, *params, limit])
        return [Wanted(*row) for row in cursor.fetchall()]


# The position after every assignment the grader has in the campaign (parameters: campaign, grader):
# selectors.assignment_next_position, as a subquery that rides along with a take.
_NEXT_POSITION = f"SELECT COALESCE(MAX(p.position), 0) + 1 FROM {A} p WHERE p.campaign_id = %s AND p.grader_id = %s"


def _one(sql: str, params: list) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return row[0] if row else None


def _lock(alias: str) -> str:
    return _lock_clause(connection.vendor, alias)


@cache
def _lock_clause(vendor: str, alias: str) -> str:
    features = connection.features
    if not features.has_select_for_update_skip_locked:
        return ""  # SQLite: writers are serialised, a row taken is committed before the next look
    return f" FOR UPDATE OF {alias} SKIP LOCKED" if features.has_select_for_update_of else " FOR UPDATE SKIP LOCKED"
