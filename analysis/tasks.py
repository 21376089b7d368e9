"""Celery tasks: thin wrappers that take ids and call a service (analysis.services)."""

from __future__ import annotations

from functools import partial
from typing import Any

from celery import chord, group, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.attempts import run_fail
from analysis.services.execute import (
    Transient,
    combine_execute,
    model_side_execute,
    run_execute,
    shard_execute,
    take_execute,
)

TIME_LIMIT = int(getattr(settings, "ANALYSIS_TIME_LIMIT_SECONDS", 1800))


# Every analysis task: acknowledged late, a soft and a hard time limit, retried when the database
# connection drops (Transient).
_TASK = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "soft_time_limit": TIME_LIMIT,
    "time_limit": TIME_LIMIT + 60,
    "autoretry_for": (Transient,),
    "retry_backoff": 5,
    "retry_backoff_max": 120,
    "max_retries": 3,
}


@shared_task(bind=True, name="analysis.run", **_TASK)
def analysis_run(self: Any, run_id: int) -> str:
    """Execute AnalysisRun ``run_id``. A redelivered message for a finished run does nothing."""
    runs.run_sweep_stale()  # a worker also finds runs lost by a dead one, even where no beat runs
    status = _within_time_limit(
        run_id,
        "the analysis",
        lambda: run_execute(
            run_id=run_id,
            task_id=self.request.id or "",
            worker_heartbeat=not self.request.is_eager,
            fan_out=None if self.request.is_eager else partial(_fan_out, queue=_queue_of(self.request)),
        ),
    )
    if status == "not_due" and not self.request.is_eager:
        # The message arrived before the debounce window closed (clock skew, early redelivery).
        self.apply_async((run_id,), countdown=max(1.0, _seconds_until_due(run_id)))
    return status


def _fan_out(run_id: int, attempt: int, shards: list[int], taken: list[int], *, queue: str | None) -> None:
    """A run split across the workers: a chord of the shards it has to read and, after them, one
    task that takes the parts an earlier run has of the others, then the step that combines them,
    sent to the queue the run's own task came from (the workers that take analyses)."""
    options = {"queue": queue} if queue else {}
    reads = [analysis_shard.si(run_id, attempt, index).set(**options) for index in shards]
    takes = [analysis_take.si(run_id, attempt, taken).set(**options)] if taken else []
    chord(group(*reads, *takes), analysis_combine.si(run_id, attempt).set(**options)).apply_async()


def _queue_of(request: Any) -> str | None:
    return (getattr(request, "delivery_info", None) or {}).get("routing_key") or None


@shared_task(name="analysis.shard", **_TASK)
def analysis_shard(run_id: int, attempt: int, index: int) -> str:
    """Read shard ``index`` of the run's attempt ``attempt`` and keep its part."""
    return _within_time_limit(
        run_id, "a part of the analysis", lambda: shard_execute(run_id=run_id, attempt=attempt, index=index)
    )


@shared_task(name="analysis.take", **_TASK)
def analysis_take(run_id: int, attempt: int, indexes: list[int]) -> str:
    """Take the parts of shards ``indexes`` of the run's attempt ``attempt`` from an earlier run
    (reading any whose part is gone)."""
    return _within_time_limit(
        run_id, "a part of the analysis", lambda: take_execute(run_id=run_id, attempt=attempt, indexes=indexes)
    )


@shared_task(bind=True, name="analysis.combine", **_TASK)
def analysis_combine(self: Any, run_id: int, attempt: int) -> str:
    """Combine the shards' parts of the run's attempt ``attempt``, compute and store the report, the
    model handed to another worker meanwhile (``analysis.model_side``, to the same queue)."""
    side = None if self.request.is_eager else partial(_side_out, queue=_queue_of(self.request))
    return _within_time_limit(
        run_id, "a part of the analysis", lambda: combine_execute(run_id=run_id, attempt=attempt, side=side)
    )


def _side_out(run_id: int, attempt: int, *, queue: str | None) -> None:
    analysis_model_side.apply_async((run_id, attempt), **({"queue": queue} if queue else {}))


@shared_task(name="analysis.model_side", **_TASK)
def analysis_model_side(run_id: int, attempt: int) -> str:
    """Fit the model of the run's attempt ``attempt`` beside its combining step. Over the time limit
    it only stops: the combining step fits the model itself once it has waited long enough."""
    try:
        return model_side_execute(run_id=run_id, attempt=attempt)
    except SoftTimeLimitExceeded:
        return "failed"


def _within_time_limit(run_id: int, what: str, work: Any) -> str:
    """``work()``, or the run marked failed when it outlives the soft time limit."""
    try:
        return work()
    except SoftTimeLimitExceeded:
        run = AnalysisRun.objects.filter(pk=run_id).first()
        if run is not None:
            run_fail(
                run_id=run_id,
                attempt=run.attempts,
                error=f"Stopped: {what} took longer than the time limit of {TIME_LIMIT} s.",
            )
        return "failed"


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
