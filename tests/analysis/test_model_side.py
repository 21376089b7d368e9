"""The model beside the combining step (docs/analysis.md, "The model beside the combining step"):
another worker fits the model and the accounting from the run's parts while the combining step
computes the other sections, and the run stores what one process computes, whichever worker fitted
the model; on both backends."""

from __future__ import annotations

import pytest

from analysis import unit_blocks
from analysis.models import AnalysisRun, RunModelSide, RunStatus, SideState
from analysis.reports.serialize import jsonable
from analysis.services import runs
from analysis.services.execute import combine_execute, model_side_execute, run_execute, shard_execute
from analysis.services.report import report_compute
from grading.models import Judgment
from grading.services.exclusion import grader_exclude
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]
PARAMS = {"n_boot": 200, "confidence": 0.95, "fine_tolerance": 0.5}


@pytest.fixture
def campaign():
    campaign = make_campaign(n_queries=4, n_candidates=5, graders=6, overlap=4)
    judge_broad_fine(campaign, seed=11)
    return campaign


def _read(campaign, settings) -> AnalysisRun:
    """A run planned into shards, every shard read, as the workers leave it for the combining step."""
    settings.ANALYSIS_SHARD_JUDGMENTS = 10
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=9)
    assert run_execute(run_id=run.pk, fan_out=lambda *args: None) == "sharded"
    run.refresh_from_db()
    for index in range(run.shards_total):
        assert shard_execute(run_id=run.pk, attempt=run.attempts, index=index) == "done"
    return run


def _expected(campaign, run):
    result, units = report_compute(campaign_id=campaign.pk, parameters=run.parameters, seed=9)
    return jsonable(result), units


def _stored_units(run):
    return unit_blocks.RunUnits(run.pk).frame()


def test_the_model_fitted_by_another_worker_is_the_one_the_combining_step_fits(campaign, settings):
    run = _read(campaign, settings)
    sent = []

    def side(run_id, attempt):  # an idle worker takes the task at once
        sent.append((run_id, attempt))
        assert model_side_execute(run_id=run_id, attempt=attempt) == "done"

    assert combine_execute(run_id=run.pk, attempt=run.attempts, side=side) == RunStatus.SUCCEEDED
    row = RunModelSide.objects.get(run=run)
    assert sent == [(run.pk, run.attempts)] and row.state == SideState.DONE and row.seconds is not None
    assert row.units is None  # taken: its 26 MB at 10^7 judgments are not kept beside the run's rows
    run.refresh_from_db()
    expected, units = _expected(campaign, run)
    assert run.result == expected
    assert run.result["model"]["dawid_skene"] and run.result["accounting"]
    stored = _stored_units(run)
    for column in ("model_label", "model_probability", "model_score", "model_se"):
        assert stored[column].tolist() == units[column].tolist()
    assert model_side_execute(run_id=run.pk, attempt=run.attempts) == "lost"  # redelivered: the run is done


def test_a_model_no_worker_took_is_fitted_by_the_combining_step_and_never_started_after(campaign, settings):
    run = _read(campaign, settings)
    sent = []
    assert combine_execute(run_id=run.pk, attempt=run.attempts, side=lambda *args: sent.append(args)) == (
        RunStatus.SUCCEEDED
    )
    assert RunModelSide.objects.get(run=run).state == SideState.DECLINED
    assert model_side_execute(run_id=run.pk, attempt=run.attempts) == "lost"  # the message, come late
    assert RunModelSide.objects.get(run=run).state == SideState.DECLINED
    run.refresh_from_db()
    assert run.result == _expected(campaign, run)[0]


def test_a_model_that_failed_on_the_other_worker_is_fitted_by_the_combining_step(campaign, settings, monkeypatch):
    from analysis.services import execute

    run = _read(campaign, settings)

    def broken(**kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(execute, "model_side_compute", broken)
    states = []

    def side(run_id, attempt):
        states.append(model_side_execute(run_id=run_id, attempt=attempt))

    assert combine_execute(run_id=run.pk, attempt=run.attempts, side=side) == RunStatus.SUCCEEDED
    row = RunModelSide.objects.get(run=run)
    assert states == [RunStatus.FAILED] and row.state == SideState.FAILED and "MemoryError: no room" in row.error
    run.refresh_from_db()
    assert run.result == _expected(campaign, run)[0]


def test_a_model_fitted_before_a_grader_was_excluded_is_not_taken(campaign, settings):
    """The other worker read the data before an organizer excluded a grader: its model holds the
    grader, so the combining step, which leaves them out, fits its own."""
    run = _read(campaign, settings)
    leaver = Judgment.objects.filter(campaign=campaign).order_by("grader_id").values_list("grader", flat=True)[0]

    def side(run_id, attempt):
        assert model_side_execute(run_id=run_id, attempt=attempt) == "done"
        role = campaign.roles.get(user_id=leaver, role="grader")
        grader_exclude(campaign=campaign, role=role, reason="straight-lined", actor=None)

    assert combine_execute(run_id=run.pk, attempt=run.attempts, side=side) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    pseudonyms = {g["pseudonym"] for g in run.result["model"]["dawid_skene"]["graders"]}
    excluded = {e["pseudonym"] for e in run.result["excluded_graders"]}
    assert excluded and not pseudonyms & excluded
    assert run.result == _expected(campaign, run)[0]
    assert RunModelSide.objects.get(run=run).excluded == []  # what the other worker read


def test_a_side_of_an_attempt_that_lost_the_run_or_was_declined_does_nothing(campaign, settings):
    run = _read(campaign, settings)
    RunModelSide.objects.create(run=run, attempt=run.attempts)
    assert model_side_execute(run_id=run.pk, attempt=run.attempts + 1) == "lost"
    assert RunModelSide.objects.get(run=run).state == SideState.QUEUED
    RunModelSide.objects.filter(run=run).update(state=SideState.DECLINED)  # the combining step went on alone
    assert model_side_execute(run_id=run.pk, attempt=run.attempts) == "declined"
    assert RunModelSide.objects.get(run=run).section is None
