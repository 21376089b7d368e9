"""Celery tasks: thin wrappers that take ids and call a service (analysis.services)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.attempts import run_fail
from analysis.services.execute import Transient, run_execute

TIME_LIMIT = int(getattr(settings, "ANALYSIS_TIME_LIMIT_SECONDS", 1800))


@shared_task(
    bind=True,
    name="analysis.run",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=TIME_LIMIT,
    time_limit=TIME_LIMIT + 60,
    autoretry_for=(Transient,),
    retry_backoff=5,
    retry_backoff_max=120,
    max_retries=3,
)
def analysis_run(self: Any, run_id: int) -> str:
    """Execute AnalysisRun ``run_id``. A redelivered message for a finished run does nothing."""
    runs.run_sweep_stale()  # a worker also finds runs lost by a dead one, even where no beat runs
    try:
        status = run_execute(run_id=run_id, task_id=self.request.id or "", worker_heartbeat=not self.request.is_eager)
    except SoftTimeLimitExceeded:
        run = AnalysisRun.objects.filter(pk=run_id).first()
        if run is not None:
            run_fail(
                run_id=run_id,
                attempt=run.attempts,
                error=f"Stopped: the analysis took longer than the time limit of {TIME_LIMIT} s.",
            )
        return "failed"
    if status == "not_due" and not self.request.is_eager:
        # The message arrived before the debounce window closed (clock skew, early redelivery).
        self.apply_async((run_id,), countdown=max(1.0, _seconds_until_due(run_id)))
    return status


def _seconds_until_due(run_id: int) -> float:
    from django.utils import timezone

    run = AnalysisRun.objects.filter(pk=run_id).only("not_before").first()
    if run is None or run.not_before is None:
        return 1.0
    return (run.not_before - timezone.now()).total_seconds()


@shared_task(name="analysis.sweep_stale_runs", acks_late=True, time_limit=120)
def analysis_sweep_stale_runs() -> dict[str, list[int]]:
    """Re-queue or fail runs whose worker died; resend queued runs whose message was lost."""
    outcome = runs.run_sweep_stale()
    return {"requeued": outcome.requeued, "failed": outcome.failed, "resent": outcome.resent}
