"""On PostgreSQL a run stores its per-unit results (``unit_blocks``) from a thread of its own while
the report's last sections are computed (the units' own figures after the agreement sections, the
model's columns once it is fitted), in the transaction that then stores the result
(``execute._StoreAlongside``): the same blocks and result as storing them after the report, nothing
kept of a run that fails or is lost, and the run's stage and heartbeat written meanwhile without
waiting for the store's lock."""

from __future__ import annotations

import threading
import time

import pandas as pd
import pytest
from django.db import connection

from analysis import unit_blocks
from analysis.models import AnalysisRun, RunStatus, UnitBlock
from analysis.services import attempts, execute, report, runs
from analysis.services.execute import run_execute
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
PARAMS = {"n_boot": 20, "confidence": 0.95, "fine_tolerance": 0.5}


@pytest.fixture
def campaign(db):
    campaign = make_campaign(n_queries=3, n_candidates=4, graders=3, overlap=2)
    judge_broad_fine(campaign, seed=5)
    return campaign


@pytest.fixture
def alongside(monkeypatch) -> list[execute._StoreAlongside]:
    """The stores that began alongside the report, as they began."""
    started: list[execute._StoreAlongside] = []
    real = execute._StoreAlongside.start

    def start(self, units):
        assert not any(c in units for c in unit_blocks.MODEL_COLUMNS)  # begun before the model was fitted
        started.append(self)
        real(self, units)

    monkeypatch.setattr(execute._StoreAlongside, "start", start)
    return started


def _run(campaign) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=1)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def _units(run: AnalysisRun) -> pd.DataFrame:
    return unit_blocks.RunUnits(run.pk).frame()


def _blocks(run: AnalysisRun) -> list[tuple]:
    fields = ["index", "first_unit", "last_unit", "rows", "broad", "distribution", "model_label", "model_score"]
    rows = UnitBlock.objects.filter(run=run).values_list(*fields, "data", "model")
    return [(*rest, bytes(data), None if model is None else bytes(model)) for *rest, data, model in rows]


def test_blocks_stored_alongside_the_report_are_those_stored_after_it(campaign, alongside, monkeypatch):
    beside = _run(campaign)
    assert beside.status == RunStatus.SUCCEEDED and len(alongside) == 1
    assert not alongside[0]._thread.is_alive() and not connection.in_atomic_block
    monkeypatch.setattr(execute._StoreAlongside, "possible", staticmethod(lambda: False))
    after = _run(campaign)
    assert after.status == RunStatus.SUCCEEDED and len(alongside) == 1  # this one stored after the report
    pd.testing.assert_frame_equal(_units(beside), _units(after), check_exact=True)
    assert list(_units(beside)["unit"]) == list(campaign.units.order_by("pk").values_list("pk", flat=True))
    assert _blocks(beside) == _blocks(after) and len(_blocks(beside)) == 1 and _blocks(beside)[0][3] == 12
    assert _blocks(beside)[0][-1] is not None  # the model's columns, written once the model was fitted
    assert beside.result == after.result
    assert set(beside.timings) == set(after.timings) and "storing results" in beside.timings


def test_a_run_that_fails_after_its_blocks_were_written_keeps_none_of_them(campaign, alongside, monkeypatch):
    def fails(*args, **kwargs):
        raise ValueError("the queries could not be summed")

    monkeypatch.setattr(report, "queries", fails)
    run = _run(campaign)
    assert run.status == RunStatus.FAILED and "the queries could not be summed" in run.error
    assert len(alongside) == 1 and alongside[0]._thread is not None and not alongside[0]._thread.is_alive()
    assert not UnitBlock.objects.filter(run=run).exists()  # written, then rolled back with the store


def test_a_run_taken_away_while_its_blocks_are_stored_keeps_none_of_them(campaign, alongside, monkeypatch):
    """The sweeper takes a run whose worker looked dead: the stage written next finds the run gone,
    and the blocks written alongside go back with the store's transaction."""
    taken = report.queries

    def taken_away(*args, **kwargs):
        AnalysisRun.objects.filter(pk=alongside[0].run.pk).update(
            status=RunStatus.QUEUED, attempts=alongside[0].run.attempts + 1
        )
        return taken(*args, **kwargs)

    monkeypatch.setattr(report, "queries", taken_away)
    run = _run(campaign)
    assert run.status == RunStatus.QUEUED and not run.result
    assert not UnitBlock.objects.filter(run=run).exists()


def test_a_run_lost_when_its_result_joins_the_store_keeps_no_block(campaign, alongside, monkeypatch):
    """Lost after its last stage was written: the result's update finds the run gone, and the
    store's transaction, blocks and all, is rolled back."""
    result_write = execute._result_write

    def lost_first(run, result, progress):
        sweeper = connection.get_new_connection(connection.get_connection_params())  # another process's
        try:
            sweeper.execute("UPDATE analysis_analysisrun SET attempts = attempts + 1 WHERE id = %s", [run.pk])
            sweeper.commit()
        finally:
            sweeper.close()
        return result_write(run, result, progress)

    monkeypatch.setattr(execute, "_result_write", lost_first)
    run = _run(campaign)
    assert run.status == RunStatus.RUNNING and not run.result and run.attempts == 2  # left to the sweeper
    assert not UnitBlock.objects.filter(run=run).exists()


def test_the_stage_and_the_heartbeat_do_not_wait_for_the_stores_lock(campaign):
    """While the store holds the run's row (FOR KEY SHARE) and waits for the result, this attempt
    writes its stage and heartbeat: were the lock FOR UPDATE, they would wait for a COMMIT that
    waits for them."""
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=1)
    run = attempts.run_claim(run_id=run.pk)
    progress = attempts.Progress(run_id=run.pk, attempt=run.attempts)
    _, units = report.report_compute(campaign_id=campaign.pk, parameters=run.parameters, seed=run.seed)
    store = execute._StoreAlongside(run)
    store.start(units)
    try:
        _until_the_store_waits()
        done = threading.Event()

        def beat() -> None:
            try:
                progress.beat()
                done.set()
            finally:
                connection.close()

        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 5000")  # fails here instead of waiting for ever
            try:
                threading.Thread(target=beat, daemon=True).start()
                progress.stage("storing results", 95)
                assert done.wait(10)
            finally:
                cursor.execute("RESET statement_timeout")
        assert not UnitBlock.objects.filter(run=run).exists()  # not committed yet
        assert store.finish({"schema": 1}, progress) is True
        assert unit_blocks.RunUnits(run.pk).stored == len(units) > 0
        assert list(_units(run)["unit"]) == sorted(units["unit"])
        assert AnalysisRun.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED
    except BaseException:
        store.abandon()  # not left holding the run's row while the database is emptied for the next test
        raise


def _until_the_store_waits(seconds: float = 20.0) -> None:
    """Until the store's connection holds the run's row, has copied the blocks and waits in its transaction."""
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE %s",
                ["COPY %analysis_unitblock%"],
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("the store did not come to wait for the result")
