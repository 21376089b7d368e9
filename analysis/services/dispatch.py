"""Queue or run here: the one place that decides where an analysis run executes.

With a broker the run's task is sent by name to the Celery workers (so this module never imports
the task module, which imports the services). Embedded (no broker) a run asked for now executes in
this process at once; a run due later, or an automatic one, waits for the embedded runner
(``analysis.embedded``: a background thread of the web process) or ``manage.py run_due_analyses``.
Only ``analysis.services.runs`` (and the embedded runner, through it) uses this module.
"""

from __future__ import annotations

import logging
import secrets
import threading

from django.db.models import Q
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus
from analysis.services.execute import Transient, run_execute
from evalutron.celery import app

logger = logging.getLogger(__name__)
RUN_TASK = "analysis.run"  # the name analysis.tasks.analysis_run is registered under
# Set when a run is queued for the embedded runner, which waits on it (analysis.embedded): a run
# queued in this process starts at once, not at the runner's next sweep.
_queued = threading.Event()


def embedded() -> bool:
    """Celery runs tasks in-process (no broker): nothing can be sent to a worker."""
    return bool(app.conf.task_always_eager)


def run_dispatch(*, run_id: int, countdown: float = 0, background: bool = False) -> None:
    """Queue the run for a worker (with a broker) or execute it here (embedded).

    Embedded, a run due later (``countdown`` seconds, the debounce of automatic runs) or asked for
    in the ``background`` (automatic runs: a grader's request never waits for an analysis) stays
    queued for the embedded runner.
    """
    task_id = f"analysis-{run_id}-{secrets.token_hex(6)}"
    AnalysisRun.objects.filter(pk=run_id).update(task_id=task_id)
    if not embedded():
        app.send_task(RUN_TASK, args=[run_id], task_id=task_id, countdown=max(0, countdown) or None)
    elif countdown <= 0 and not background:
        _execute_here(run_id=run_id, task_id=task_id)
    else:
        runs_queued_notify()


def runs_queued_notify() -> None:
    """Wake the embedded runner: a run was queued (or it should stop)."""
    _queued.set()


def runs_queued_wait(*, timeout: float) -> bool:
    """The embedded runner's pause: until a run is queued or ``timeout`` seconds pass. True if woken."""
    woken = _queued.wait(max(0.0, timeout))
    _queued.clear()
    return woken


def run_next_due_in() -> float | None:
    """Seconds until the earliest queued run with a start time is due (≤ 0: already due), or None."""
    due = (
        AnalysisRun.objects.filter(status=RunStatus.QUEUED, not_before__isnull=False)
        .order_by("not_before")
        .values_list("not_before", flat=True)
        .first()
    )
    return None if due is None else (due - timezone.now()).total_seconds()


def runs_execute_due(*, campaign_id: int | None = None) -> int:
    """Embedded: execute the queued runs that are due (of one campaign, or all). Returns how many."""
    if not embedded():
        return 0
    due = AnalysisRun.objects.filter(status=RunStatus.QUEUED).filter(
        Q(not_before__isnull=True) | Q(not_before__lte=timezone.now())
    )
    if campaign_id is not None:
        due = due.filter(campaign_id=campaign_id)
    run_ids = list(due.order_by("pk").values_list("pk", flat=True))
    for run_id in run_ids:
        _execute_here(run_id=run_id)
    return len(run_ids)


def _execute_here(*, run_id: int, task_id: str = "") -> None:
    try:
        run_execute(run_id=run_id, task_id=task_id)
    except Transient:  # the run went back to the queue; the next pass executes it
        logger.warning("analysis run %s: database error, left queued", run_id)
