"""The life of an AnalysisRun: create it, hand it to dispatch, and sweep lost runs.

States: queued → running → succeeded | failed. Claiming a run and reporting its progress live in
``attempts`` (what a worker does); deciding whether a run is queued for a worker or executed here
lives in ``dispatch``. A run whose worker died stops sending heartbeats; the sweeper re-queues it (up
to ANALYSIS_MAX_ATTEMPTS) or marks it failed with the reason. Nothing stays "running" forever.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import dispatch
from analysis.services.attempts import (  # noqa: F401 - re-exported: callers know them as runs.*
    Progress,
    RunLost,
    heartbeat_thread,
    run_claim,
    run_fail,
    run_number_next,
    run_release,
    stale_seconds,
)
from analysis.services.dispatch import (  # noqa: F401 - re-exported
    embedded,
    run_next_due_in,
    runs_execute_due,
    runs_queued_notify,
    runs_queued_wait,
)
from analysis.services.report import DEFAULT_TOLERANCE

logger = logging.getLogger(__name__)

DEFAULT_PARAMETERS: dict[str, Any] = {"n_boot": 1000, "confidence": 0.95, "fine_tolerance": DEFAULT_TOLERANCE}
# name -> (type, low, high)
PARAMETER_RULES: dict[str, tuple[type, float, float]] = {
    "n_boot": (int, 10, 100_000),
    "confidence": (float, 0.5, 0.999),
    "fine_tolerance": (float, 0.0, 10.0),
}


def max_attempts() -> int:
    return int(getattr(settings, "ANALYSIS_MAX_ATTEMPTS", 3))


def parameters_clean(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """Validated run parameters with defaults filled in. Raises ValueError naming the bad key."""
    given = dict(parameters or {})
    out = dict(DEFAULT_PARAMETERS)
    for key, value in given.items():
        if key not in PARAMETER_RULES:
            raise ValueError(f"unknown analysis parameter {key!r}; valid: {', '.join(PARAMETER_RULES)}")
        kind, low, high = PARAMETER_RULES[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and value != int(value)):
            raise ValueError(
                f"analysis parameter {key!r} must be a{'n integer' if kind is int else ' number'}; got {value!r}"
            )
        if not low <= value <= high:
            raise ValueError(f"analysis parameter {key!r} must lie in [{low:g}, {high:g}]; got {value!r}")
        out[key] = kind(value)
    return out


# --- creating and enqueueing ----------------------------------------------------------------------


def run_create(
    *,
    campaign_id: int,
    trigger: str = RunTrigger.MANUAL,
    user: AbstractBaseUser | None = None,
    parameters: dict[str, Any] | None = None,
    seed: int | None = None,
    enqueue: bool = True,
) -> AnalysisRun:
    """An on-demand run, enqueued when the transaction commits (``enqueue=False``: the caller
    executes it with ``run_execute``, as ``export_ground_truth`` does).

    Asking again while an identical run is queued or running returns that run instead of a second one.
    """
    params = parameters_clean(parameters)
    if seed is not None and not 0 <= seed < 2**63:
        raise ValueError(f"seed must be a non-negative 63-bit integer; got {seed!r}")
    with transaction.atomic():
        active = (
            AnalysisRun.objects.select_for_update()
            .filter(
                campaign_id=campaign_id,
                status__in=[RunStatus.QUEUED, RunStatus.RUNNING],
                parameters=params,
            )
            .exclude(trigger=RunTrigger.AUTO)
        )
        existing = next((r for r in active if seed is None or r.seed == seed), None)
        if existing is not None:
            return existing
        run = AnalysisRun.objects.create(
            campaign_id=campaign_id,
            number=run_number_next(campaign_id=campaign_id),
            trigger=trigger,
            parameters=params,
            created_by=user,
            seed=secrets.randbits(31) if seed is None else seed,
        )
        if enqueue:
            transaction.on_commit(partial(run_enqueue, run_id=run.pk))
    return run


def run_schedule_auto(*, campaign_id: int) -> AnalysisRun | None:
    """Debounced automatic run after new judgments: at most one queued per campaign.

    The first judgment after a quiet spell queues a run due ANALYSIS_DEBOUNCE_SECONDS later; later
    judgments join it (the run reads the database when it starts, so it sees them all). It has no
    number until it starts: runs asked for meanwhile start first and take the numbers before it. With a
    broker the task is sent with that countdown; embedded, a background thread executes it once it
    is due (no request ever waits for an analysis, and no page view starts one).
    """
    if AnalysisRun.objects.filter(campaign_id=campaign_id, trigger=RunTrigger.AUTO, status=RunStatus.QUEUED).exists():
        return None
    debounce = int(settings.ANALYSIS_DEBOUNCE_SECONDS)
    try:
        with transaction.atomic():
            run = AnalysisRun.objects.create(  # numbered when it starts (attempts.run_claim)
                campaign_id=campaign_id,
                trigger=RunTrigger.AUTO,
                parameters=parameters_clean(None),
                seed=secrets.randbits(31),
                not_before=timezone.now() + timedelta(seconds=debounce),
            )
    except IntegrityError:
        return None  # a concurrent request queued it first
    transaction.on_commit(partial(run_enqueue, run_id=run.pk, countdown=debounce, background=True))
    return run


def run_enqueue(*, run_id: int, countdown: float = 0, background: bool = False) -> None:
    """Hand the run to dispatch, which queues it for a worker or executes it here."""
    dispatch.run_dispatch(run_id=run_id, countdown=countdown, background=background)


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
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    )
    for run in lost:
        _sweep_one(run, now=now, outcome=outcome)
    if not embedded():
        # A queued run whose message was lost (broker restarted, ...) is sent again; a duplicate
        # message is harmless because only one claim can succeed.
        left = AnalysisRun.objects.filter(status=RunStatus.QUEUED).filter(
            Q(not_before__lt=cutoff) | Q(not_before__isnull=True, created_at__lt=cutoff)
        )
        for run_id in left.values_list("pk", flat=True):
            # not_before marks the resend, so the next sweep waits another stale period.
            if AnalysisRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(not_before=timezone.now()):
                transaction.on_commit(partial(run_enqueue, run_id=run_id))
                outcome.resent.append(run_id)
    return outcome


def _sweep_one(run: AnalysisRun, *, now: datetime, outcome: SweepOutcome) -> None:
    last = run.heartbeat_at or run.started_at
    reason = (
        f"The worker stopped reporting during stage “{run.stage or 'starting'}” of attempt {run.attempts} "
        f"(no heartbeat since {last:%Y-%m-%d %H:%M:%S} UTC): it was probably killed or lost."
    )
    same = AnalysisRun.objects.filter(
        pk=run.pk, status=RunStatus.RUNNING, attempts=run.attempts, heartbeat_at=run.heartbeat_at
    )
    if run.attempts < max_attempts():
        if same.update(
            status=RunStatus.QUEUED, error=f"{reason} Retrying.", stage="queued for retry", progress=0, not_before=None
        ):
            logger.warning("analysis run %s: %s Retrying.", run.pk, reason)
            outcome.requeued.append(run.pk)
            if not embedded():
                transaction.on_commit(partial(run_enqueue, run_id=run.pk))
        return
    if same.update(status=RunStatus.FAILED, error=f"{reason} Gave up after {run.attempts} attempts.", finished_at=now):
        logger.error("analysis run %s failed: %s", run.pk, reason)
        outcome.failed.append(run.pk)
