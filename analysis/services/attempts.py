"""One attempt at an analysis run: claim it, report progress and heartbeats, fail or release it.

A worker *claims* a queued run with a conditional UPDATE (so a redelivered or duplicated task message
does nothing), then owns it for that attempt: every later write is conditional on (status=running,
attempts=its attempt). Losing ownership (the sweeper took the run back) raises RunLost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max, Q, QuerySet
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus
from grading.models import Campaign


class RunLost(Exception):
    """This worker no longer owns the run (the sweeper re-queued or failed it)."""


def stale_seconds() -> int:
    return int(settings.ANALYSIS_STALE_SECONDS)


def run_number_next(*, campaign_id: int) -> int:
    """The next run number within the campaign (#1, #2, ...); call inside the numbering transaction.
    The campaign's row lock serialises concurrent numberings."""
    Campaign.objects.select_for_update().filter(pk=campaign_id).first()
    return (AnalysisRun.objects.filter(campaign_id=campaign_id).aggregate(m=Max("number"))["m"] or 0) + 1


def run_owned(*, run_id: int, attempt: int) -> QuerySet[AnalysisRun]:
    """The run, while this attempt owns it (running, and not taken back by the sweeper): every
    write of an attempt goes through it."""
    return AnalysisRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, attempts=attempt)


def run_claim(*, run_id: int, task_id: str = "") -> AnalysisRun | str:
    """Take a queued, due run for this attempt. Returns the run, or why it was not taken.

    A run without a number (an automatic run, numbered when it starts: docs/design.md §4) gets the
    campaign's next number here, so numbers follow the order in which runs start."""
    now = timezone.now()
    claimable = AnalysisRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).filter(
        Q(not_before__isnull=True) | Q(not_before__lte=now + timedelta(seconds=1))
    )
    updates: dict[str, Any] = {
        "status": RunStatus.RUNNING,
        "attempts": F("attempts") + 1,
        "started_at": now,
        "heartbeat_at": now,
        "progress": 0,
        "stage": "starting",
        "finished_at": None,
    }
    if task_id:
        updates["task_id"] = task_id
    with transaction.atomic():
        if claimable.update(**updates):
            run = AnalysisRun.objects.get(pk=run_id)
            if run.number is None:
                run.number = run_number_next(campaign_id=run.campaign_id)
                AnalysisRun.objects.filter(pk=run_id).update(number=run.number)
            return run
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
    timings: dict[str, float] = field(default_factory=dict)
    _stage: str = "starting"
    _since: float = field(default_factory=time.perf_counter)

    def _owned(self) -> Any:
        return run_owned(run_id=self.run_id, attempt=self.attempt)

    def stage(self, name: str, percent: int) -> None:
        self._close_stage()
        self._stage = name
        if not self._owned().update(stage=name[:100], progress=max(0, min(100, percent)), heartbeat_at=timezone.now()):
            raise RunLost(f"run {self.run_id} was taken away from attempt {self.attempt}")

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


@contextmanager
def heartbeat_thread(progress: Progress, *, interval: float | None = None) -> Iterator[None]:
    """Beat from a side thread while a long stage computes, so only a dead worker goes stale: every
    ANALYSIS_HEARTBEAT_SECONDS, and at least three times per ANALYSIS_STALE_SECONDS."""
    stop = threading.Event()
    interval = interval or max(0.5, min(float(settings.ANALYSIS_HEARTBEAT_SECONDS), stale_seconds() / 3))

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


def run_fail(*, run_id: int, attempt: int, error: str) -> bool:
    return bool(
        run_owned(run_id=run_id, attempt=attempt).update(
            status=RunStatus.FAILED, error=error[:5000], finished_at=timezone.now()
        )
    )


def run_release(*, run_id: int, attempt: int, error: str) -> bool:
    """Give a run back to the queue after a transient error (the task will retry it)."""
    return bool(
        run_owned(run_id=run_id, attempt=attempt).update(
            status=RunStatus.QUEUED, error=error[:5000], stage="queued for retry", not_before=None
        )
    )
