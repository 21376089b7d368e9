"""Analysis runs without a worker: create, execute, fail readably, sweep lost runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analysis import unit_blocks
from analysis.models import AnalysisRun, RunStatus, RunTrigger, UnitBlock
from analysis.reports.serialize import jsonable
from analysis.services import execute, runs
from analysis.services.execute import run_execute
from analysis.services.report import report_compute

pytestmark = pytest.mark.django_db


def _run(campaign, **params) -> AnalysisRun:
    return AnalysisRun.objects.create(
        campaign=campaign, parameters=runs.parameters_clean({"n_boot": 100, **params}), seed=42
    )


def test_executing_a_run_stores_exactly_what_the_report_computes(judged_campaign):
    run = _run(judged_campaign)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    expected, units = report_compute(campaign_id=judged_campaign.pk, parameters=run.parameters, seed=42)
    assert run.result == jsonable(expected)
    assert run.status == RunStatus.SUCCEEDED and run.progress == 100 and run.stage == "done"
    assert run.attempts == 1 and run.finished_at >= run.started_at
    assert unit_blocks.RunUnits(run.pk).stored == len(units) == 15


def test_the_same_seed_gives_the_same_intervals(judged_campaign):
    first, second = _run(judged_campaign), _run(judged_campaign)
    run_execute(run_id=first.pk)
    run_execute(run_id=second.pk)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.result["agreement"] == second.result["agreement"]


def test_a_finished_run_is_not_run_again_by_a_redelivered_message(judged_campaign):
    run = _run(judged_campaign)
    run_execute(run_id=run.pk)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED.value
    assert AnalysisRun.objects.get(pk=run.pk).attempts == 1


def test_a_run_not_yet_due_waits(judged_campaign):
    run = _run(judged_campaign)
    AnalysisRun.objects.filter(pk=run.pk).update(not_before=timezone.now() + timedelta(minutes=5))
    assert run_execute(run_id=run.pk) == "not_due"
    assert AnalysisRun.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_an_error_in_the_metrics_fails_the_run_with_a_readable_message(judged_campaign, monkeypatch):
    def broken(**kwargs):
        kwargs["progress"].stage("agreement", 20)
        raise ValueError("`counts` must be a 2-D array")

    monkeypatch.setattr(execute, "report_compute", broken)
    run = _run(judged_campaign)
    assert run_execute(run_id=run.pk) == RunStatus.FAILED
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.finished_at is not None
    assert run.error == "ValueError during “agreement”: `counts` must be a 2-D array"


def test_unknown_or_out_of_range_parameters_are_refused():
    with pytest.raises(ValueError, match="unknown analysis parameter 'bogus'"):
        runs.parameters_clean({"bogus": 1})
    with pytest.raises(ValueError, match=r"'n_boot' must lie in \[10, 100000\]; got 5"):
        runs.parameters_clean({"n_boot": 5})
    with pytest.raises(ValueError, match="'confidence' must be a number"):
        runs.parameters_clean({"confidence": "high"})
    with pytest.raises(ValueError, match="unknown analysis parameter 'debug_sleep_stage'"):
        runs.parameters_clean({"debug_sleep_stage": "agreement"})


def test_asking_twice_for_the_same_run_returns_the_queued_one(judged_campaign, organizer):
    first = runs.run_create(campaign_id=judged_campaign.pk, user=organizer, parameters={"n_boot": 100})
    second = runs.run_create(campaign_id=judged_campaign.pk, user=organizer, parameters={"n_boot": 100})
    other = runs.run_create(campaign_id=judged_campaign.pk, user=organizer, parameters={"n_boot": 200})
    assert first.pk == second.pk != other.pk
    assert first.trigger == RunTrigger.MANUAL and first.created_by == organizer


def test_an_on_demand_run_executes_when_the_transaction_commits_in_embedded_mode(
    judged_campaign, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_create(campaign_id=judged_campaign.pk, parameters={"n_boot": 50}, trigger=RunTrigger.CLI)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.task_id.startswith(f"analysis-{run.pk}-")


def _running(campaign, *, attempts: int, heartbeat_age: float) -> AnalysisRun:
    beat = timezone.now() - timedelta(seconds=heartbeat_age)
    return AnalysisRun.objects.create(
        campaign=campaign,
        status=RunStatus.RUNNING,
        attempts=attempts,
        stage="agreement",
        started_at=beat,
        heartbeat_at=beat,
    )


def test_the_sweeper_requeues_a_run_whose_worker_went_silent(judged_campaign, settings):
    lost = _running(judged_campaign, attempts=1, heartbeat_age=settings.ANALYSIS_STALE_SECONDS + 5)
    alive = _running(judged_campaign, attempts=1, heartbeat_age=1)
    outcome = runs.run_sweep_stale()
    assert outcome.requeued == [lost.pk] and outcome.failed == []
    lost.refresh_from_db()
    assert lost.status == RunStatus.QUEUED and lost.not_before is None
    assert "stopped reporting during stage “agreement” of attempt 1" in lost.error and "Retrying." in lost.error
    assert AnalysisRun.objects.get(pk=alive.pk).status == RunStatus.RUNNING


def test_the_sweeper_fails_a_run_that_used_up_its_attempts(judged_campaign, settings):
    settings.ANALYSIS_MAX_ATTEMPTS = 2
    lost = _running(judged_campaign, attempts=2, heartbeat_age=settings.ANALYSIS_STALE_SECONDS + 5)
    assert runs.run_sweep_stale().failed == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == RunStatus.FAILED and lost.finished_at is not None
    assert lost.error.endswith("Gave up after 2 attempts.")


def test_a_worker_that_lost_its_run_to_the_sweeper_discards_its_result(judged_campaign, monkeypatch):
    run = _run(judged_campaign)
    real = execute.report_compute

    def swept_midway(**kwargs):
        AnalysisRun.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)  # the sweeper took it back
        return real(**kwargs)

    monkeypatch.setattr(execute, "report_compute", swept_midway)
    assert run_execute(run_id=run.pk) == "lost"
    assert not UnitBlock.objects.filter(run=run).exists()


def test_an_ordering_campaign_gets_consensus_and_ed_tables(ordering_campaign):
    run = _run(ordering_campaign)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    orderings = AnalysisRun.objects.get(pk=run.pk).result["orderings"]
    assert len(orderings["queries"]) == 3
    assert all(len(q["consensus"]) == 5 for q in orderings["queries"])
    assert set(orderings["ed"]) == set(orderings["methods"])
