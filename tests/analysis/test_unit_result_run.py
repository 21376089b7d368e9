"""A run's per-unit rows name their run and their unit without a foreign-key constraint; they go
with the run or the unit whoever deletes it, even while the run is storing them (migrations
analysis/0012 and 0013; docs/analysis.md, "Storing a run's results")."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.models import UNIT_ROWS_LOCK_NAMESPACE, AnalysisRun, RunStatus, UnitResult, unit_rows_lock
from analysis.services import execute, runs
from analysis.services.execute import run_execute
from grading.models import Judgment, Unit
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
        locks = [q["sql"] for q in queries.captured_queries if "FOR KEY SHARE" in q["sql"]]
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
    run = _run(campaign)
    _race(
        store=[  # as execute._store: the run locked, its rows written, then the commit
            ("SELECT 1 FROM analysis_analysisrun WHERE id = %s FOR KEY SHARE", [run.pk]),
            ("DELETE FROM analysis_unitresult WHERE run_id = %s", [run.pk]),
            (_ROWS_OF_EVERY_UNIT, [run.pk, campaign.pk]),
        ],
        delete=[
            ("DELETE FROM analysis_unitresult WHERE run_id = %s", [run.pk]),  # sees none yet
            ("DELETE FROM analysis_runshard WHERE run_id = %s", [run.pk]),
            ("DELETE FROM analysis_analysisrun WHERE id = %s", [run.pk]),  # waits for the lock
        ],
    )
    assert not AnalysisRun.objects.filter(pk=run.pk).exists()
    assert not UnitResult.objects.filter(run_id=run.pk).exists()


_DSN_KEYS = {"host", "port", "dbname", "user", "password"}
_ROWS_OF_EVERY_UNIT = (
    "INSERT INTO analysis_unitresult (run_id, unit_id, n) SELECT %s, id, 2 FROM grading_unit WHERE campaign_id = %s"
)


def _race(*, store: list[tuple[str, list]], delete: list[tuple[str, list]]) -> None:
    """``store``'s statements in a transaction of one connection; while it is open, ``delete``'s in a
    transaction of another, which must come to wait for a lock and end only after the store commits."""
    import psycopg

    dsn = " ".join(f"{k}={v}" for k, v in connection.get_connection_params().items() if k in _DSN_KEYS)
    deleter, deleted = [], threading.Event()

    def deleting() -> None:
        with psycopg.connect(dsn, autocommit=True) as other:
            deleter.append(other.info.backend_pid)
            with other.transaction():
                for sql, params in delete:
                    other.execute(sql, params)
        deleted.set()

    with psycopg.connect(dsn) as storing:
        with storing.transaction():
            for sql, params in store:
                storing.execute(sql, params)
            worker = threading.Thread(target=deleting)
            worker.start()
            _waits_for_a_lock(storing, deleter)
            assert not deleted.is_set()
        worker.join(30)
    assert deleted.is_set()


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
    raise AssertionError("the delete did not come to wait for the store's lock")


def _unit_without_events(campaign) -> Unit:
    """A unit judged by two graders through no event (as the analysis reads it, judgments alone):
    unlike a unit with events, which the events protect, it can be deleted."""
    first = Unit.objects.filter(campaign=campaign).order_by("pk").first()
    unit = Unit.objects.create(campaign=campaign, external_id="unlogged", query=first.query, candidate=first.candidate)
    graders = Judgment.objects.filter(campaign=campaign).values_list("grader", flat=True).distinct()[:2]
    for grader_id, (broad, fine) in zip(graders, [("VS", 8.5), ("SS", 5.0)], strict=True):
        Judgment.objects.create(campaign=campaign, grader_id=grader_id, unit=unit, broad=broad, fine=fine)
    return unit


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_unit_deleted_after_the_run_read_it_has_no_row(campaign, monkeypatch):
    """No constraint refuses a row of a unit that is gone: the store drops such rows itself."""
    unit = _unit_without_events(campaign)
    computed = execute.report_compute

    def compute_then_delete(**kwargs):
        out = computed(**kwargs)
        assert unit.pk in set(out[1]["unit"])  # the run read it
        Judgment.objects.filter(unit=unit).delete()
        Unit.objects.filter(pk=unit.pk).delete()
        return out

    monkeypatch.setattr(execute, "report_compute", compute_then_delete)
    run = _run(campaign)
    assert not UnitResult.objects.filter(unit_id=unit.pk).exists()
    assert UnitResult.objects.filter(run=run).count() == 6


@pytest.mark.postgres
def test_a_unit_deleted_in_sql_takes_its_rows_with_it(campaign):
    unit = _unit_without_events(campaign)
    run = _run(campaign)
    assert UnitResult.objects.filter(run=run, unit=unit).exists()
    Judgment.objects.filter(unit=unit).delete()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM grading_unit WHERE id = %s", [unit.pk])
    assert not UnitResult.objects.filter(unit_id=unit.pk).exists()
    assert UnitResult.objects.filter(run=run).count() == 6


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_unit_deleted_while_a_run_stores_its_rows_waits_and_then_takes_them(campaign):
    """The store holds its campaign's lock shared (``execute._units_hold``'s statement) until it
    commits; the unit's delete waits for it in the trigger and then deletes the committed row."""
    unit = _unit_without_events(campaign)
    run = _run(campaign)
    Judgment.objects.filter(unit=unit).delete()
    # The next run stores: rows of its own, so that the delete waits for no row the store has locked.
    storing = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=1)
    _race(
        store=[  # as execute._store: the campaign's lock, the rows written, then the commit
            ("SELECT pg_advisory_xact_lock_shared(%s, %s)", list(unit_rows_lock(campaign.pk))),
            (_ROWS_OF_EVERY_UNIT, [storing.pk, campaign.pk]),
        ],
        delete=[
            ("DELETE FROM analysis_unitresult WHERE unit_id = %s", [unit.pk]),  # Django's cascade
            ("DELETE FROM grading_unit WHERE id = %s", [unit.pk]),  # waits in the trigger
        ],
    )
    assert not Unit.objects.filter(pk=unit.pk).exists()
    assert not UnitResult.objects.filter(unit_id=unit.pk).exists()
    assert UnitResult.objects.filter(run=run).count() == 6 == UnitResult.objects.filter(run=storing).count()


@pytest.mark.postgres
def test_the_store_takes_the_lock_that_the_trigger_waits_for(campaign):
    with CaptureQueriesContext(connection) as queries:
        _run(campaign)
    held = [q["sql"] for q in queries.captured_queries if "pg_advisory_xact_lock_shared" in q["sql"]]
    assert unit_rows_lock(campaign.pk) == (UNIT_ROWS_LOCK_NAMESPACE, campaign.pk)  # ids below 2^31 - 1
    assert held == [f"SELECT pg_advisory_xact_lock_shared({UNIT_ROWS_LOCK_NAMESPACE}, {campaign.pk})"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'analysis_unit_unit_results_delete'")
        assert f"pg_advisory_xact_lock({UNIT_ROWS_LOCK_NAMESPACE}," in cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM pg_constraint WHERE conrelid = 'analysis_unitresult'::regclass AND contype = 'f'"
        )
        assert cursor.fetchone()[0] == 0


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_rows_are_keyed_by_run_and_unit_and_the_unit_keeps_an_index_for_deleting():
    """Migration analysis/0014: no id, one key (run, unit); the unit's index outside the model's
    state, BRIN on PostgreSQL (a run writes its rows in unit order) and a B-tree on SQLite."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, UnitResult._meta.db_table)
        columns = [c.name for c in connection.introspection.get_table_description(cursor, UnitResult._meta.db_table)]
    assert "id" not in columns
    assert [c["columns"] for c in constraints.values() if c["primary_key"]] == [["run_id", "unit_id"]]
    indexes = {name: c for name, c in constraints.items() if c["index"] and not c["primary_key"]}
    assert list(indexes) == ["analysis_unitresult_unit"]
    assert indexes["analysis_unitresult_unit"]["columns"] == ["unit_id"]
    assert indexes["analysis_unitresult_unit"]["type"] == ("brin" if connection.vendor == "postgresql" else "idx")
