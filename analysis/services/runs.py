"""The life of an AnalysisRun: create, enqueue, claim, report progress, finish, and sweep lost runs.

States: queued → running → succeeded | failed. A worker *claims* a queued run with a conditional
UPDATE (so a redelivered or duplicated task message does nothing), then owns it for that attempt:
every later write is conditional on (status=running, attempts=its attempt). A run whose worker died
stops sending heartbeats; the sweeper re-queues it (up to ANALYSIS_MAX_ATTEMPTS) or marks it failed
with the reason. Nothing stays "running" forever.
"""
from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus, RunTrigger

logger = logging.getLogger(__name__)

DEFAULT_PARAMETERS: dict[str, Any] = {"n_boot": 1000, "confidence": 0.95, "fine_tolerance": 0.05}
# name -> (type, low, high)
PARAMETER_RULES: dict[str, tuple[type, float, float]] = {
    "n_boot": (int, 10, 100_000),
    "confidence": (float, 0.5, 0.999),
    "fine_tolerance": (float, 0.0, 10.0),
}
# Test-only: sleep inside a named stage (heartbeating), to let tests kill a worker mid-run.
# Only code can set them (parameters_clean(..., allow_debug=True)); no user-facing entry point does.
DEBUG_PARAMETERS = {"debug_sleep_stage": str, "debug_sleep_seconds": float, "debug_sleep_attempts": int}


class RunLost(Exception):
    """This worker no longer owns the run (the sweeper re-queued or failed it)."""


def max_attempts() -> int:
    return int(getattr(settings, "ANALYSIS_MAX_ATTEMPTS", 3))


def stale_seconds() -> int:
    return int(settings.ANALYSIS_STALE_SECONDS)


def embedded() -> bool:
    """Celery runs tasks in-process (no broker): nothing may be scheduled for later."""
    from evalutron.celery import app

    return bool(app.conf.task_always_eager)


def parameters_clean(parameters: dict[str, Any] | None, *, allow_debug: bool = False) -> dict[str, Any]:
    """Validated run parameters with defaults filled in. Raises ValueError naming the bad key.

    ``allow_debug`` admits the test-only ``debug_sleep_*`` keys; the API, pages and CLI never pass it.
    """
    given = dict(parameters or {})
    out = dict(DEFAULT_PARAMETERS)
    for key, value in given.items():
        if key in DEBUG_PARAMETERS and allow_debug:
            out[key] = DEBUG_PARAMETERS[key](value)
            continue
        if key not in PARAMETER_RULES:
            raise ValueError(f"unknown analysis parameter {key!r}; valid: {', '.join(PARAMETER_RULES)}")
        kind, low, high = PARAMETER_RULES[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and value != int(value)):
            raise ValueError(f"analysis parameter {key!r} must be a{'n integer' if kind is int else ' number'}; got {value!r}")
        if not low <= value <= high:
            raise ValueError(f"analysis parameter {key!r} must lie in [{low:g}, {high:g}]; got {value!r}")
        out[key] = kind(value)
    return out


# --- creating and enqueueing ----------------------------------------------------------------------

def run_create(*, campaign_id: int, trigger: str = RunTrigger.MANUAL, user: AbstractBaseUser | None = None,
               parameters: dict[str, Any] | None = None, seed: int | None = None) -> AnalysisRun:
    """An on-demand run, enqueued when the transaction commits.

    Asking again while an identical run is queued or running returns that run instead of a second one.
    """
    params = parameters_clean(parameters)
    if seed is not None and not 0 <= seed < 2**63:
        raise ValueError(f"seed must be a non-negative 63-bit integer; got {seed!r}")
    with transaction.atomic():
        active = AnalysisRun.objects.select_for_update().filter(
            campaign_id=campaign_id, status__in=[RunStatus.QUEUED, RunStatus.RUNNING], parameters=params,
        ).exclude(trigger=RunTrigger.AUTO)
        existing = next((r for r in active if seed is None or r.seed == seed), None)
        if existing is not None:
            return existing
        run = AnalysisRun.objects.create(
            campaign_id=campaign_id, number=run_number_next(campaign_id=campaign_id),
            trigger=trigger, parameters=params, created_by=user,
            seed=secrets.randbits(31) if seed is None else seed,
        )
        transaction.on_commit(partial(run_enqueue, run_id=run.pk))
    return run


def run_number_next(*, campaign_id: int) -> int:
    """The next run number within the campaign (#1, #2, ...); call inside the creating transaction.
    The campaign's row lock serialises concurrent creations."""
    from django.db.models import Max

    from grading.models import Campaign

    Campaign.objects.select_for_update().filter(pk=campaign_id).first()
    return (AnalysisRun.objects.filter(campaign_id=campaign_id).aggregate(m=Max("number"))["m"] or 0) + 1


def run_schedule_auto(*, campaign_id: int) -> AnalysisRun | None:
    """Debounced automatic run after new judgments: at most one queued per campaign.

    The first judgment after a quiet spell queues a run due ANALYSIS_DEBOUNCE_SECONDS later; later
    judgments join it (the run reads the database when it starts, so it sees them all). With a
    broker the task is sent with that countdown; embedded, the run is executed by the next report
    view after it is due (no request of a grader ever waits for an analysis).
    """
    if AnalysisRun.objects.filter(campaign_id=campaign_id, trigger=RunTrigger.AUTO, status=RunStatus.QUEUED).exists():
        return None
    debounce = int(settings.ANALYSIS_DEBOUNCE_SECONDS)
    try:
        with transaction.atomic():
            run = AnalysisRun.objects.create(
                campaign_id=campaign_id, number=run_number_next(campaign_id=campaign_id), trigger=RunTrigger.AUTO, parameters=parameters_clean(None),
                seed=secrets.randbits(31), not_before=timezone.now() + timedelta(seconds=debounce),
            )
    except IntegrityError:
        return None  # a concurrent request queued it first
    if not embedded():
        transaction.on_commit(partial(run_enqueue, run_id=run.pk, countdown=debounce))
    return run


def run_enqueue(*, run_id: int, countdown: float = 0) -> None:
    """Send the run's task (eager mode: execute it now)."""
    from analysis.tasks import analysis_run

    task_id = f"analysis-{run_id}-{secrets.token_hex(6)}"
    AnalysisRun.objects.filter(pk=run_id).update(task_id=task_id)
    analysis_run.apply_async((run_id,), task_id=task_id, countdown=max(0, countdown) or None)


def runs_execute_due(*, campaign_id: int) -> int:
    """Embedded mode: execute the campaign's queued runs that are due (called on report views)."""
    if not embedded():
        return 0
    due = AnalysisRun.objects.filter(campaign_id=campaign_id, status=RunStatus.QUEUED).filter(
        Q(not_before__isnull=True) | Q(not_before__lte=timezone.now()))
    done = 0
    for run_id in due.values_list("pk", flat=True):
        from analysis.services.execute import run_execute

        run_execute(run_id=run_id)
        done += 1
    return done


# --- claiming and progress --------------------------------------------------------------------------

def run_claim(*, run_id: int, task_id: str = "") -> AnalysisRun | str:
    """Take a queued, due run for this attempt. Returns the run, or why it was not taken."""
    now = timezone.now()
    claimable = AnalysisRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).filter(
        Q(not_before__isnull=True) | Q(not_before__lte=now + timedelta(seconds=1)))
    updates: dict[str, Any] = {"status": RunStatus.RUNNING, "attempts": F("attempts") + 1, "started_at": now,
                               "heartbeat_at": now, "progress": 0, "stage": "starting", "finished_at": None}
    if task_id:
        updates["task_id"] = task_id
    if claimable.update(**updates):
        return AnalysisRun.objects.get(pk=run_id)
    run = AnalysisRun.objects.filter(pk=run_id).first()
    if run is None:
        return "missing"
    if run.status == RunStatus.QUEUED:
        return "not_due"
    return run.status


@dataclass
class Progress:
    """Writes stage, progress and heartbeat of the run this worker owns; timings per stage."""

    run_id: int
    attempt: int
    parameters: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _stage: str = "starting"
    _since: float = field(default_factory=time.perf_counter)

    def _owned(self) -> Any:
        return AnalysisRun.objects.filter(pk=self.run_id, status=RunStatus.RUNNING, attempts=self.attempt)

    def stage(self, name: str, percent: int) -> None:
        self._close_stage()
        self._stage = name
        if not self._owned().update(stage=name[:100], progress=max(0, min(100, percent)), heartbeat_at=timezone.now()):
            raise RunLost(f"run {self.run_id} was taken away from attempt {self.attempt}")
        self._debug_sleep(name)

    def beat(self) -> None:
        self._owned().update(heartbeat_at=timezone.now())

    def _close_stage(self) -> None:
        now = time.perf_counter()
        self.timings[self._stage] = round(self.timings.get(self._stage, 0.0) + now - self._since, 4)
        self._since = now

    def finish(self) -> dict[str, float]:
        self._close_stage()
        self.timings["total"] = round(sum(v for k, v in self.timings.items() if k != "total"), 4)
        return self.timings

    def _debug_sleep(self, name: str) -> None:
        p = self.parameters
        if p.get("debug_sleep_stage") != name or self.attempt > p.get("debug_sleep_attempts", 1):
            return
        deadline = time.monotonic() + float(p.get("debug_sleep_seconds", 0))
        while time.monotonic() < deadline:
            time.sleep(0.25)
            self.beat()


@contextmanager
def heartbeat_thread(progress: Progress, *, interval: float | None = None) -> Iterator[None]:
    """Beat from a side thread while a long stage computes, so only a dead worker goes stale."""
    stop = threading.Event()
    interval = interval or max(1.0, min(60.0, stale_seconds() / 5))

    def loop() -> None:
        try:
            while not stop.wait(interval):
                progress.beat()
        finally:
            connection.close()

    thread = threading.Thread(target=loop, name=f"analysis-heartbeat-{progress.run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


# --- sweeping -----------------------------------------------------------------------------------------

@dataclass
class SweepOutcome:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    resent: list[int] = field(default_factory=list)


def run_sweep_stale(*, now: datetime | None = None) -> SweepOutcome:
    """Re-queue or fail runs whose worker stopped sending heartbeats; resend queued runs left behind."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_seconds())
    outcome = SweepOutcome()
    lost = AnalysisRun.objects.filter(status=RunStatus.RUNNING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff))
    for run in lost:
        _sweep_one(run, now=now, outcome=outcome)
    if not embedded():
        # A queued run whose message was lost (broker restarted, ...) is sent again; a duplicate
        # message is harmless because only one claim can succeed.
        left = AnalysisRun.objects.filter(status=RunStatus.QUEUED).filter(
            Q(not_before__lt=cutoff) | Q(not_before__isnull=True, created_at__lt=cutoff))
        for run_id in left.values_list("pk", flat=True):
            # not_before marks the resend, so the next sweep waits another stale period.
            if AnalysisRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(not_before=timezone.now()):
                transaction.on_commit(partial(run_enqueue, run_id=run_id))
                outcome.resent.append(run_id)
    return outcome


def _sweep_one(run: AnalysisRun, *, now: datetime, outcome: SweepOutcome) -> None:
    last = run.heartbeat_at or run.started_at
    reason = (f"The worker stopped reporting during stage “{run.stage or 'starting'}” of attempt {run.attempts} "
              f"(no heartbeat since {last:%Y-%m-%d %H:%M:%S} UTC): it was probably killed or lost.")
    same = AnalysisRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING, attempts=run.attempts,
                                      heartbeat_at=run.heartbeat_at)
    if run.attempts < max_attempts():
        if same.update(status=RunStatus.QUEUED, error=f"{reason} Retrying.", stage="queued for retry",
                       progress=0, not_before=None):
            logger.warning("analysis run %s: %s Retrying.", run.pk, reason)
            outcome.requeued.append(run.pk)
            if not embedded():
                transaction.on_commit(partial(run_enqueue, run_id=run.pk))
        return
    if same.update(status=RunStatus.FAILED, error=f"{reason} Gave up after {run.attempts} attempts.", finished_at=now):
        logger.error("analysis run %s failed: %s", run.pk, reason)
        outcome.failed.append(run.pk)


def run_fail(*, run_id: int, attempt: int, error: str) -> bool:
    return bool(AnalysisRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, attempts=attempt).update(
        status=RunStatus.FAILED, error=error[:5000], finished_at=timezone.now()))


def run_release(*, run_id: int, attempt: int, error: str) -> bool:
    """Give a run back to the queue after a transient error (the task will retry it)."""
    return bool(AnalysisRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, attempts=attempt).update(
        status=RunStatus.QUEUED, error=error[:5000], stage="queued for retry", not_before=None))
