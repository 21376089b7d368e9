"""A run read in shards of graders gives exactly what one reading of the whole campaign gives
(docs/analysis.md, "Sharded runs"), on both backends."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.models import AnalysisRun, RunShard, RunStatus
from analysis.reports.serialize import jsonable
from analysis.services import execute, runs
from analysis.services.execute import combine_execute, run_execute, shard_execute
from analysis.services.judgments import StoredJudgments
from analysis.services.report import report_compute
from analysis.services.shards import part_dumps, part_loads, parts_behaviour, shard_compute, shard_plan
from analysis.services.values import value_spec, with_values
from grading.models import GradingEvent, Judgment
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


def _parts(campaign, per_shard, excluded=frozenset()):
    plan = shard_plan(campaign_id=campaign.pk, per_shard=per_shard)
    return plan, [
        shard_compute(campaign_id=campaign.pk, span=span, excluded=set(excluded), tolerance=PARAMS["fine_tolerance"])
        for span in plan
    ]


@pytest.mark.parametrize("per_shard", [1, 7, 25])
def test_a_report_from_shards_equals_the_report_from_one_reading(campaign, per_shard):
    expected, expected_units = report_compute(campaign_id=campaign.pk, parameters=PARAMS, seed=3)
    plan, parts = _parts(campaign, per_shard)
    assert len(plan) > 1
    result, units = report_compute(campaign_id=campaign.pk, parameters=PARAMS, seed=3, parts=parts)
    assert result == expected  # every figure, to the last bit: nothing is approximated
    pd.testing.assert_frame_equal(units, expected_units)


def test_a_shards_part_travels_as_bytes_unchanged(campaign):
    _, parts = _parts(campaign, 25)
    for part in parts:
        back = part_loads(part_dumps(part))
        assert back.span == part.span
        pd.testing.assert_frame_equal(back.judgments, part.judgments)
        pd.testing.assert_frame_equal(back.behaviour.opportunities.frame(), part.behaviour.opportunities.frame())
        pd.testing.assert_frame_equal(back.behaviour.by_grader, part.behaviour.by_grader)
        pd.testing.assert_series_equal(back.behaviour.events, part.behaviour.events)
        assert back.behaviour.stability == part.behaviour.stability
        assert back.graders.tolist() == sorted(set(part.judgments["grader"].tolist()))  # listed, not read
    whole = shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5)
    spec = value_spec(campaign)
    expected = with_values(whole.judgments, spec)
    for frames in (True, False):  # judgments as frames, or left as Parquet to be read a slice at a time
        loaded = [part_loads(part_dumps(p), judgments=frames) for p in parts]
        assert [p.rows for p in loaded] == [len(p.judgments) for p in parts]
        read = StoredJudgments(loaded, spec).frame()[list(expected.columns)]
        pd.testing.assert_frame_equal(read, expected)
        behaviour = parts_behaviour(loaded)
        pd.testing.assert_frame_equal(behaviour.opportunities.frame(), whole.behaviour.opportunities.frame())
        assert all(p.behaviour.opportunities.empty for p in loaded)  # given up to the whole
    one = StoredJudgments([part_loads(part_dumps(whole), judgments=False)], spec).frame()
    pd.testing.assert_frame_equal(one[list(expected.columns)], expected)
    # Who judged: from the parts' lists, or read from parts stored before they listed them.
    loaded, unlisted = ([part_loads(part_dumps(p), judgments=False) for p in parts] for _ in range(2))
    for part in unlisted:
        part.graders = None
    leaver = int(whole.judgments["grader"].iloc[0])
    for excluded in (set(), {leaver}):
        listed, read = (StoredJudgments(p, spec, excluded=excluded).graders().tolist() for p in (loaded, unlisted))
        assert listed == read == sorted(set(whole.judgments["grader"].tolist()) - excluded)


def test_the_plan_cuts_between_graders_and_leaves_no_grader_out(campaign):
    graders = sorted(set(Judgment.objects.filter(campaign=campaign).values_list("grader_id", flat=True)))
    plan = shard_plan(campaign_id=campaign.pk, per_shard=15)
    assert plan[0][0] is None and plan[-1][1] is None  # open ends: graders with events only belong too
    assert all(plan[i][1] == plan[i + 1][0] for i in range(len(plan) - 1))
    assert {c for _, c in plan[:-1]} <= set(graders)  # cut at a grader, never inside one
    assert shard_plan(campaign_id=campaign.pk, per_shard=10**9) == [(None, None)]
    assert len(shard_plan(campaign_id=campaign.pk, per_shard=1)) == len(graders)  # one grader each, at least


def test_a_grader_excluded_after_the_shards_read_is_left_out_all_the_same(campaign):
    leaver = Judgment.objects.filter(campaign=campaign).order_by("grader_id").values_list("grader", flat=True)[0]
    _, parts = _parts(campaign, 7)  # read with everyone in
    role = campaign.roles.get(user_id=leaver, role="grader")
    grader_exclude(campaign=campaign, role=role, reason="straight-lined", actor=None)
    expected, _ = report_compute(campaign_id=campaign.pk, parameters=PARAMS, seed=3)
    result, _ = report_compute(campaign_id=campaign.pk, parameters=PARAMS, seed=3, parts=parts)
    assert result == expected
    assert all(g["grader"] != leaver for g in result["graders"])


def test_an_embedded_run_reads_its_shards_one_after_another_and_counts_them(campaign, settings):
    one = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=9)
    assert run_execute(run_id=one.pk) == RunStatus.SUCCEEDED
    settings.ANALYSIS_SHARD_JUDGMENTS = 10
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=9)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    one.refresh_from_db()
    assert run.shards_total > 1 and run.shards_done == run.shards_total and one.shards_total == 1
    assert run.result == one.result
    shards = RunShard.objects.filter(run=run).order_by("index")
    assert sum(s.judgments for s in shards) == Judgment.objects.filter(campaign=campaign, skipped=False).count()
    assert all(s.finished_at and s.part is not None for s in shards)  # kept for the next run to take
    assert {"planning shards", "reading shards", "loading judgments", "total"} <= set(run.timings)


def _handed_out(campaign, settings):
    """A run planned into shards and handed to a (recorded, not sent) fan-out, as a worker does."""
    settings.ANALYSIS_SHARD_JUDGMENTS = 10
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=9)
    sent = []
    assert run_execute(run_id=run.pk, fan_out=lambda *args: sent.append(args)) == "sharded"
    run.refresh_from_db()
    assert sent == [(run.pk, run.attempts, list(range(run.shards_total)), [])] and run.stage == "reading shards"
    return run


def test_shards_then_the_combining_step_store_what_one_process_computes(campaign, settings):
    run = _handed_out(campaign, settings)
    for index in reversed(range(run.shards_total)):  # the workers finish in any order
        assert shard_execute(run_id=run.pk, attempt=run.attempts, index=index) == "done"
    assert shard_execute(run_id=run.pk, attempt=run.attempts, index=0) == "done"  # redelivered: counted once
    run.refresh_from_db()
    assert run.shards_done == run.shards_total and run.status == RunStatus.RUNNING
    assert combine_execute(run_id=run.pk, attempt=run.attempts) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    expected, _ = report_compute(campaign_id=campaign.pk, parameters=run.parameters, seed=9)
    assert run.result == jsonable(expected)  # the overview from the log the plan counted, as counted again
    assert (
        run.event_log["events"]
        == run.result["overview"]["events"]
        == GradingEvent.objects.filter(campaign=campaign).count()
    )
    assert {"planning shards", "reading shards", "agreement", "total"} <= set(run.timings)  # both tasks' stages
    assert not RunShard.objects.filter(run=run, part__isnull=True).exists()  # kept for the next run to take


def test_a_shard_of_an_attempt_that_lost_the_run_does_nothing(campaign, settings):
    run = _handed_out(campaign, settings)
    assert shard_execute(run_id=run.pk, attempt=run.attempts + 1, index=0) == "lost"
    assert combine_execute(run_id=run.pk, attempt=run.attempts + 1) == "lost"
    run.refresh_from_db()
    assert run.shards_done == 0 and run.status == RunStatus.RUNNING


def test_a_failing_shard_fails_the_run_saying_which_and_a_missing_part_stops_the_combining(
    campaign, settings, monkeypatch
):
    run = _handed_out(campaign, settings)
    assert combine_execute(run_id=run.pk, attempt=run.attempts) == RunStatus.FAILED
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and f"of {run.shards_total} left no part" in run.error

    run = _handed_out(campaign, settings)
    monkeypatch.setattr(execute, "shard_compute", lambda **kwargs: 1 / 0)
    assert shard_execute(run_id=run.pk, attempt=run.attempts, index=1) == RunStatus.FAILED
    run.refresh_from_db()
    assert run.error.startswith(f"ZeroDivisionError during shard 2 of {run.shards_total}:")


def test_a_database_error_in_a_shard_retries_that_shard_and_keeps_the_run_running(campaign, settings, monkeypatch):
    from django.db import OperationalError

    from analysis.services.execute import Transient

    run = _handed_out(campaign, settings)

    def gone(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    with monkeypatch.context() as patch:
        patch.setattr(execute, "shard_compute", gone)
        with pytest.raises(Transient):
            shard_execute(run_id=run.pk, attempt=run.attempts, index=0)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.shards_done == 0  # the other shards' work stands
    assert shard_execute(run_id=run.pk, attempt=run.attempts, index=0) == "done"  # the task's retry
