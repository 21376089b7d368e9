"""The narrow entry point grading calls (through grading.hooks) after new judgments are committed."""

from __future__ import annotations

import time
from datetime import datetime

from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services.runs import run_schedule_auto
from grading.services.sql_rows import Columns, connection_for

# campaign id -> time.monotonic() before which a queued automatic run is known not to have started.
# Until then new judgments need nothing: that run reads the database when it starts and sees them.
# This keeps the grading write path free of a scheduling query on almost every event.
_QUEUED_UNTIL: dict[int, float] = {}
_MARGIN_SECONDS = 2.0
_NOT_BEFORE = Columns(AnalysisRun, "r", only=["not_before"])


def schedule_auto_run(*, campaign_id: int) -> None:
    """Queue a debounced automatic analysis of the campaign; never more than one waits per campaign."""
    if _QUEUED_UNTIL.get(campaign_id, 0.0) > time.monotonic():
        return
    queued, not_before = _queued_auto_run(campaign_id)
    if not queued:
        run = run_schedule_auto(campaign_id=campaign_id)
        not_before = run.not_before if run is not None else None  # None: a concurrent request queued it
    if not_before is not None:
        ahead = (not_before - timezone.now()).total_seconds() - _MARGIN_SECONDS
        if ahead > 0:
            _QUEUED_UNTIL[campaign_id] = time.monotonic() + ahead


def _queued_auto_run(campaign_id: int) -> tuple[bool, datetime | None]:
    """Whether the campaign has a queued automatic run, and when it is due, in one hand-written
    statement (found through the partial unique index of queued automatic runs). Once a run is
    overdue (no worker has taken it yet) this is asked after every event until one does: built by
    the ORM, the two queries it replaces cost more than the event's own statements."""
    connection = connection_for(AnalysisRun)
    sql = (
        f"SELECT {_NOT_BEFORE.sql(connection)} FROM {connection.ops.quote_name(AnalysisRun._meta.db_table)} r"
        " WHERE r.campaign_id = %s AND r.trigger = %s AND r.status = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [campaign_id, RunTrigger.AUTO.value, RunStatus.QUEUED.value])
        row = cursor.fetchone()
    return (False, None) if row is None else (True, _NOT_BEFORE.values(row, 0, connection)[0])
