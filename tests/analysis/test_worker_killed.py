"""A worker killed with SIGKILL in the middle of a run, in real time: its heartbeats stop, the
sweeper (as celery beat runs it, every ANALYSIS_SWEEP_SECONDS) finds the run silent for
ANALYSIS_STALE_SECONDS and queues it again, and another real worker finishes it, within 2 minutes
of the kill."""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from tests.analysis.test_worker import _poll, campaign, queue, sender, start_worker  # noqa: F401 - fixtures

pytestmark = [pytest.mark.redis]


def test_a_run_whose_worker_is_killed_succeeds_on_another_within_two_minutes(
    campaign,  # noqa: F811
    sender,  # noqa: F811
    start_worker,  # noqa: F811
    monkeypatch,
):
    assert settings.ANALYSIS_STALE_SECONDS == 60 and settings.ANALYSIS_SWEEP_SECONDS == 15  # the defaults
    assert settings.CELERY_BEAT_SCHEDULE["analysis-sweep"]["schedule"] == 15.0
    doomed = start_worker(pause=("agreement", 600.0, 1))  # the first attempt would take ten minutes
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=3)
    sender(run.pk)
    _poll(run.pk, lambda r: r.stage == "agreement")
    doomed.kill()
    killed_at = time.monotonic()
    start_worker()  # another worker of the same queue, idle

    # This process plays celery beat: the sweep task's body every ANALYSIS_SWEEP_SECONDS, its sends
    # going to this test's queue.
    monkeypatch.setattr(runs, "embedded", lambda: False)
    monkeypatch.setattr(runs, "run_enqueue", lambda *, run_id, countdown=0, background=False: sender(run_id))
    requeued_after = None
    while time.monotonic() - killed_at < 120:
        if runs.run_sweep_stale().requeued == [run.pk]:
            requeued_after = time.monotonic() - killed_at
        current = AnalysisRun.objects.get(pk=run.pk)
        if current.is_finished:
            break
        time.sleep(settings.ANALYSIS_SWEEP_SECONDS if requeued_after is None else 0.5)
    done = AnalysisRun.objects.get(pk=run.pk)
    took = time.monotonic() - killed_at
    assert done.status == RunStatus.SUCCEEDED, (done.status, done.error, took)
    assert done.attempts == 2 and took < 120
    assert requeued_after is not None and requeued_after >= settings.ANALYSIS_STALE_SECONDS - 1  # not before
