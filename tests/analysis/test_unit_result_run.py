"""A run's per-unit rows name their run without a foreign-key constraint; they go with the run
whoever deletes it, even while the run is storing them (migration analysis/0012; docs/analysis.md,
"Storing a run's results")."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.models import AnalysisRun, RunStatus, UnitResult
from analysis.services import runs
from analysis.services.execute import run_execute
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign

PARAMS = {"n_boot": 20, "confidence": 0.95, "fine_tolerance": 0.5}


def _run(campaign) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=1)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    return run


@pytest.fixture
def campaign(db):
    campaign = make_campaign(n_queries=2, n_candidates=3, graders=3, overlap=2)
    judge_broad_fine(campaign, seed=3)
    return campaign


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_store_holds_the_run_locked_and_a_deleted_runs_rows_go(campaign):
    with CaptureQueriesContext(connection) as queries:
        run = _run(campaign)
    if connection.vendor == "postgresql":  # SQLite has one writer for the whole database
        locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
        assert any('FROM "analysis_analysisrun"' in sql for sql in locks), locks
    other = _run(campaign)
    assert UnitResult.objects.filter(run=run).count() == 6 == UnitResult.objects.filter(run=other).count()
    run.delete()
    assert not UnitResult.objects.filter(run_id=run.pk).exists()
    assert UnitResult.objects.filter(run=other).count() == 6


@pytest.mark.postgres
def test_a_run_deleted_in_sql_takes_its_rows_with_it(campaign):
    run, other = _run(campaign), _run(campaign)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM analysis_runshard WHERE run_id = %s", [run.pk])
        cursor.execute("DELETE FROM analysis_analysisrun WHERE id = %s", [run.pk])
    assert not UnitResult.objects.filter(run_id=run.pk).exists()
    assert UnitResult.objects.filter(run=other).count() == 6


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_delete_while_the_run_stores_its_rows_waits_and_then_takes_them(campaign):
    """Django's cascade deletes the rows first, before the store has committed them, then waits for
    the run's lock: the trigger deletes what the store committed meanwhile."""
    import psycopg

    run = _run(campaign)
    dsn = " ".join(f"{k}={v}" for k, v in connection.get_connection_params().items() if k in _DSN_KEYS)
    store = psycopg.connect(dsn)
    deleter, deleted = [], threading.Event()

    def delete() -> None:
        with psycopg.connect(dsn, autocommit=True) as other:
            deleter.append(other.info.backend_pid)
            with other.transaction():
                other.execute("DELETE FROM analysis_unitresult WHERE run_id = %s", [run.pk])
                other.execute("DELETE FROM analysis_runshard WHERE run_id = %s", [run.pk])
                other.execute("DELETE FROM analysis_analysisrun WHERE id = %s", [run.pk])  # waits for the lock
        deleted.set()

    with store.transaction():  # as execute._store: the run locked, its rows written, then the commit
        store.execute("SELECT 1 FROM analysis_analysisrun WHERE id = %s FOR UPDATE", [run.pk])
        store.execute("DELETE FROM analysis_unitresult WHERE run_id = %s", [run.pk])
        store.execute(
            "INSERT INTO analysis_unitresult (run_id, unit_id, n) SELECT %s, id, 2 FROM grading_unit "
            "WHERE campaign_id = %s",
            [run.pk, campaign.pk],
        )
        worker = threading.Thread(target=delete)
        worker.start()
        _waits_for_a_lock(store, deleter)  # so it has deleted the rows it could see: none yet
        assert not deleted.is_set()
    worker.join(30)
    store.close()
    assert deleted.is_set()
    assert not AnalysisRun.objects.filter(pk=run.pk).exists()
    assert not UnitResult.objects.filter(run_id=run.pk).exists()


_DSN_KEYS = {"host", "port", "dbname", "user", "password"}


def _waits_for_a_lock(observer, pids: list[int], seconds: float = 20.0) -> None:
    """Until the backend of ``pids`` (appended by its thread) waits for a lock; fails after ``seconds``."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pids:
            row = observer.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pids[0]]).fetchone()
            if row and row[0] == "Lock":
                return
        time.sleep(0.02)
    raise AssertionError("the delete did not come to wait for the run's lock")
