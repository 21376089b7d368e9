"""A run's per-unit results are blocks with a foreign key to their run (``analysis.unit_blocks``;
migration analysis/0017): they go with the run when Django deletes it, a delete in SQL must take
them first, and a delete while the run stores them waits for the store. Units keep no key into the
blocks: a unit deleted since the run is left out when its block is read, wherever the run's results
are read (docs/analysis.md, "Storing a run's results")."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from analysis import export, unit_blocks
from analysis.models import AnalysisRun, RunStatus, UnitBlock
from analysis.services import attempts, execute, report, runs
from analysis.services.execute import run_execute
from analysis.unit_blocks import RunUnits
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


def _units(run: AnalysisRun) -> list[int]:
    return list(unit_blocks.RunUnits(run.pk).frame(["n"])["unit"])


def _campaign_units(campaign) -> list[int]:
    return list(Unit.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True))


# --- the run's blocks and the run ------------------------------------------------------------------


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_store_holds_the_run_locked_and_a_deleted_runs_blocks_go(campaign):
    with CaptureQueriesContext(connection) as queries:
        run = _run(campaign)
    if connection.vendor == "postgresql":  # SQLite has one writer for the whole database
        locks = [q["sql"] for q in queries.captured_queries if "FOR KEY SHARE" in q["sql"]]
        assert any('FROM "analysis_analysisrun"' in sql for sql in locks), locks
    other = _run(campaign)
    assert UnitBlock.objects.filter(run=run).count() == 1 == UnitBlock.objects.filter(run=other).count()
    assert _units(run) == _units(other) == _campaign_units(campaign)
    run.delete()
    assert not UnitBlock.objects.filter(run_id=run.pk).exists() and unit_blocks.RunUnits(run.pk).stored == 0
    assert _units(other) == _campaign_units(campaign)


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_blocks_are_keyed_by_run_and_index_with_a_foreign_key_to_the_run():
    """Migration analysis/0017: one key (run, index), which serves the run's foreign key as its index;
    no column names a unit."""
    table = UnitBlock._meta.db_table
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
        columns = [c.name for c in connection.introspection.get_table_description(cursor, table)]
        tables = connection.introspection.table_names(cursor)
    assert [c["columns"] for c in constraints.values() if c["unique"] and not c["primary_key"]] == [["run_id", "index"]]
    assert [(c["columns"], c["foreign_key"]) for c in constraints.values() if c["foreign_key"]] == [
        (["run_id"], ("analysis_analysisrun", "id"))
    ]
    indexed = [c["columns"] for c in constraints.values() if c["index"] and not c["unique"]]
    assert ["run_id"] not in indexed
    assert "unit_id" not in columns and {"first_unit", "last_unit", "rows", "data"} <= set(columns)
    assert "analysis_unitresult" not in tables


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_block_of_no_run_is_refused(campaign):
    (block,) = unit_blocks.encode(unit_blocks.RunUnits(_run(campaign).pk).frame())
    missing = AnalysisRun.objects.order_by("-pk").values_list("pk", flat=True).first() + 1000
    with pytest.raises(IntegrityError), transaction.atomic():
        UnitBlock.objects.create(run_id=missing, **vars(block))
        connection.check_constraints(table_names=[UnitBlock._meta.db_table])  # the constraint is deferred


@pytest.mark.postgres
def test_the_rows_triggers_are_gone_and_the_blocks_bytes_are_not_compressed_again(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_proc WHERE proname IN "
            "('analysis_run_unit_results_delete', 'analysis_unit_unit_results_delete')"
        )
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'analysis_%unit_results_delete'")
        assert cursor.fetchone()[0] == 0
        cursor.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'analysis_unitblock'::regclass AND attname = 'data'"
        )
        assert cursor.fetchone()[0] == "e"  # EXTERNAL: out of line, uncompressed
        cursor.execute(
            "SELECT confdeltype, condeferrable, condeferred FROM pg_constraint "
            "WHERE conrelid = 'analysis_unitblock'::regclass AND contype = 'f'"
        )
        assert cursor.fetchall() == [("c", True, True)]  # ON DELETE CASCADE in the database too


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_deleted_in_sql_takes_its_blocks_with_it(campaign):
    """The blocks' foreign key cascades in the database (migration analysis/0017), not only in Django."""
    run, other = _run(campaign), _run(campaign)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM analysis_runshard WHERE run_id = %s", [run.pk])
        cursor.execute("DELETE FROM analysis_keptsum WHERE run_id = %s", [run.pk])
        cursor.execute("DELETE FROM analysis_analysisrun WHERE id = %s", [run.pk])
    assert not AnalysisRun.objects.filter(pk=run.pk).exists()
    assert not UnitBlock.objects.filter(run_id=run.pk).exists()
    assert _units(other) == _campaign_units(campaign)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_delete_while_the_run_stores_its_blocks_waits_for_the_store_and_then_takes_them(campaign, start_store):
    """Django's cascade deletes the blocks first, before the store has committed them (it sees none),
    then waits for the run's row, which the store holds FOR KEY SHARE. Once the store commits, the
    run's DELETE goes ahead, and the database's cascade deletes the blocks committed meanwhile."""
    run, units = _storing(campaign)
    store = start_store(run, units)
    _until_the_store_waits()
    deleter: list[int] = []
    outcome: list[BaseException | None] = []

    def delete() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                deleter.append(cursor.fetchone()[0])
            AnalysisRun.objects.filter(pk=run.pk).delete()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=delete, daemon=True)
    worker.start()
    _until_waiting_for_a_lock(deleter)
    assert not outcome  # still waiting
    progress = attempts.Progress(run_id=run.pk, attempt=run.attempts)
    assert store.finish({"schema": 1}, progress) is True
    worker.join(30)
    assert outcome == [None]
    assert not AnalysisRun.objects.filter(pk=run.pk).exists()
    assert not UnitBlock.objects.filter(run_id=run.pk).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_deleted_before_the_store_locks_it_stores_nothing(campaign, start_store):
    run, units = _storing(campaign)
    AnalysisRun.objects.filter(pk=run.pk).delete()
    store = start_store(run, units)
    assert store.finish({"schema": 1}, attempts.Progress(run_id=run.pk, attempt=run.attempts)) is False
    assert not UnitBlock.objects.filter(run_id=run.pk).exists()


@pytest.fixture
def start_store():
    """Starts a run's store alongside (``execute._StoreAlongside``) on the run's per-unit table; a store
    the test left unfinished is rolled back at its end, so that it does not hold the run's row while
    the database is emptied for the next test."""
    started: list[execute._StoreAlongside] = []

    def start(run: AnalysisRun, units) -> execute._StoreAlongside:
        started.append(execute._StoreAlongside(run))
        started[-1].start(units)
        return started[-1]

    yield start
    for unfinished in started:
        unfinished.abandon()


def _storing(campaign) -> tuple[AnalysisRun, pd.DataFrame]:
    """A run claimed by this attempt, and its per-unit table, ready to be stored."""
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=1)
    run = attempts.run_claim(run_id=run.pk)
    _, units = report.report_compute(campaign_id=campaign.pk, parameters=run.parameters, seed=run.seed)
    return run, units


def _until_the_store_waits(seconds: float = 20.0) -> None:
    """Until the store's connection has copied the blocks and waits, in its transaction, for the result."""
    _until(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE %s",
        ["COPY %analysis_unitblock%"],
        "the store did not come to wait for the result",
        seconds,
    )


def _until_waiting_for_a_lock(pids: list[int], seconds: float = 20.0) -> None:
    """Until the backend of ``pids`` (appended by its thread) waits for a lock."""
    deadline = time.monotonic() + seconds
    while not pids and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pids, "the deleting thread did not start"
    _until(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
        pids[:1],
        "the delete did not come to wait for the store's lock",
        seconds,
    )


def _until(sql: str, params: list, failure: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(sql, params)
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError(failure)


# --- units deleted since the run ------------------------------------------------------------------


def _unit_without_events(campaign) -> Unit:
    """A unit judged by two graders through no event (as the analysis reads it, judgments alone):
    unlike a unit with events, which the events protect, it can be deleted."""
    first = Unit.objects.filter(campaign=campaign).order_by("pk").first()
    unit = Unit.objects.create(campaign=campaign, external_id="unlogged", query=first.query, candidate=first.candidate)
    graders = Judgment.objects.filter(campaign=campaign).values_list("grader", flat=True).distinct()[:2]
    for grader_id, (broad, fine) in zip(graders, [("VS", 8.5), ("SS", 5.0)], strict=True):
        Judgment.objects.create(campaign=campaign, grader_id=grader_id, unit=unit, broad=broad, fine=fine)
    return unit


def _assert_left_out(run: AnalysisRun, unit: Unit, campaign) -> None:
    """The run stored ``unit``, and every reader of its results leaves it out."""
    read = unit_blocks.RunUnits(run.pk)
    assert read.stored == 7  # the six units and the one deleted since
    others = [u for u in _campaign_units(campaign) if u != unit.pk]
    assert len(others) == 6
    assert list(read.frame()["unit"]) == others
    assert [u for block in read.blocks(["n"]) for u in block["unit"]] == others
    assert read.row(unit.pk) is None and read.row(others[0])["unit"] == others[0]
    truth = export.ground_truth_frame(run, export.Filters())
    assert list(truth["unit_id"]) == others and "unlogged" not in set(truth["unit"])
    assert export.ground_truth_counts(run, export.Filters()) == (6, 6)


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_unit_deleted_after_the_run_read_it_is_stored_but_left_out_when_read(campaign, monkeypatch):
    """No constraint refuses a block that holds a unit that is gone: the unit stays in it, unread."""
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
    block = UnitBlock.objects.get(run=run)
    assert unit.pk in set(unit_blocks.decode(block.data, ["unit"]).column("unit").to_pylist())
    _assert_left_out(run, unit, campaign)


@pytest.mark.postgres
def test_a_unit_deleted_in_sql_is_left_out_when_the_run_is_read(campaign):
    unit = _unit_without_events(campaign)
    run = _run(campaign)
    assert unit_blocks.RunUnits(run.pk).row(unit.pk)["n"] == 2
    Judgment.objects.filter(unit=unit).delete()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM grading_unit WHERE id = %s", [unit.pk])
    _assert_left_out(run, unit, campaign)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_unit_deleted_while_a_run_stores_its_blocks_does_not_wait_and_is_left_out(campaign, start_store):
    """No trigger and no lock: the unit's delete commits while the store holds its transaction open."""
    unit = _unit_without_events(campaign)
    run, units = _storing(campaign)
    assert unit.pk in set(units["unit"])
    store = start_store(run, units)
    _until_the_store_waits()
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 5000")  # fails here instead of waiting for ever
        try:
            Judgment.objects.filter(unit=unit).delete()
            Unit.objects.filter(pk=unit.pk).delete()
        finally:
            cursor.execute("RESET statement_timeout")
    assert store.finish({"schema": 1}, attempts.Progress(run_id=run.pk, attempt=run.attempts)) is True
    run.refresh_from_db()
    _assert_left_out(run, unit, campaign)


@pytest.mark.both_backends
def test_the_migration_writes_the_rows_stored_before_as_blocks_and_back(transactional_db):
    """Migration analysis/0017 converts each run's rows to blocks, to the last bit, ids exact and
    missing values missing; migrated back, the blocks become the same rows again."""
    from django.db.migrations.executor import MigrationExecutor

    campaign = make_campaign(n_queries=1, n_candidates=4)
    units = list(campaign.units.order_by("pk").values_list("pk", flat=True))
    run = AnalysisRun.objects.create(campaign=campaign, status=RunStatus.SUCCEEDED)
    rows = [
        {"unit_id": units[0], "query_id": 2**53 + 1, "n": 3, "mean": 0.1 + 0.2, "std": 5e-324, "n_ns": 1},
        {"unit_id": units[1], "n": 1, "mean": 1e300, "distribution": {'a "b"': 1, "é": 2}, "model_label": 1.0},
        {"unit_id": units[3], "n": 2, "mean": 1 / 3, "median": 2.5, "model_score": 7.25, "model_se": 0.125},
    ]
    fields = ["unit_id", "query_id", "n", "mean", "median", "std", "n_ns", "distribution", "model_label"]
    fields += ["model_score", "model_se"]
    before, blocks = ("analysis", "0016_kept_sums"), ("analysis", "0021_unit_block_model")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        UnitResult = (
            MigrationExecutor(connection).loader.project_state([before]).apps.get_model("analysis", "UnitResult")
        )
        UnitResult.objects.bulk_create(UnitResult(run_id=run.pk, **row) for row in rows)
        stored = list(UnitResult.objects.order_by("unit_id").values_list(*fields))
        MigrationExecutor(connection).migrate([blocks])
        read = RunUnits(run.pk).frame()
        assert read["unit"].tolist() == [units[0], units[1], units[3]]
        assert read["query"].tolist()[0] == 2**53 + 1 and read["query"].isna().tolist() == [False, True, True]
        assert [read.at[i, "mean"].hex() for i in range(3)] == [(0.1 + 0.2).hex(), (1e300).hex(), (1 / 3).hex()]
        assert read.at[0, "std"] == 5e-324 and read["n_ns"].isna().tolist() == [False, True, True]
        assert json.loads(read.at[1, "distribution"]) == {'a "b"': 1, "é": 2}
        assert RunUnits(run.pk).row(units[3])["model_se"] == 0.125
        executor = MigrationExecutor(connection)
        executor.migrate([before])
        UnitResult = executor.loader.project_state([before]).apps.get_model("analysis", "UnitResult")
        assert list(UnitResult.objects.order_by("unit_id").values_list(*fields)) == stored
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert RunUnits(run.pk).stored == 3


def test_migrated_back_the_models_columns_apart_go_into_each_blocks_data(transactional_db):
    """Migration analysis/0021 undone: a block's model columns, stored apart, join the rest of its
    data, which then reads as before without them apart."""
    from django.db.migrations.executor import MigrationExecutor

    campaign = make_campaign(n_queries=1, n_candidates=4)
    units = list(campaign.units.order_by("pk").values_list("pk", flat=True))
    run = AnalysisRun.objects.create(campaign=campaign, status=RunStatus.SUCCEEDED)
    given = pd.DataFrame(
        {"unit": units, "n": [1, 2, 3, 4], "mean": [0.5, 1 / 3, np.nan, 2.0], "model_score": [7.25, np.nan, 1.0, 0.1]}
    )
    unit_blocks.write(run.pk, given)
    want = RunUnits(run.pk).frame()
    before = ("analysis", "0020_run_model_side")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        historical = executor.loader.project_state([before]).apps.get_model("analysis", "UnitBlock")
        (data,) = historical.objects.filter(run_id=run.pk).values_list("data", flat=True)
        table = unit_blocks.decode(bytes(data))
        assert table.column("model_score").to_pylist() == [7.25, None, 1.0, 0.1]
        assert table.column("mean").to_pylist() == [0.5, 1 / 3, None, 2.0]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert UnitBlock.objects.get(run=run).model is None
    pd.testing.assert_frame_equal(RunUnits(run.pk).frame(), want, check_exact=True)


# --- reading spans ahead ---------------------------------------------------------------------------


def _stored_run(campaign) -> tuple[AnalysisRun, list[int]]:
    """A run whose stored rows are 50 units of made-up figures (ids of no unit: a span reads the
    rows as stored), a block of 8 units each."""
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=1)
    ids = list(range(1000, 1050))
    frame = pd.DataFrame({"unit": ids, "query": 1, "n": range(50), "mean": [i / 4 for i in range(50)]})
    UnitBlock.objects.bulk_create(UnitBlock(run=run, **asdict(b)) for b in unit_blocks.encode(frame, size=8))
    return run, ids


def _ranges(ids: list[int]) -> list[tuple[int, int]]:
    return [(ids[0], ids[9]), (ids[10], ids[10]), (ids[11], ids[30]), (ids[31], ids[-1])]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_spans_read_ahead_on_a_thread_are_the_spans_read_one_by_one(campaign):
    """Outside a transaction, on PostgreSQL, ``RunUnits.spans`` reads ahead on a thread of its own
    connection: the same arrays as ``span`` of each range; a consumer that stops early stops the
    thread, and an error of the thread's is raised where the spans are taken."""
    run, ids = _stored_run(campaign)
    rows = RunUnits(run.pk)
    ranges = _ranges(ids)
    threads = threading.active_count()
    got = list(rows.spans(ranges, ["n", "mean"]))
    assert len(got) == len(ranges)
    for (low, high), span in zip(ranges, got, strict=True):
        want = rows.span(low, high, ["n", "mean"])
        assert list(want) == list(span) == ["unit", "n", "mean"]
        assert all(np.array_equal(want[k], span[k]) for k in want)
    assert [list(s["unit"]) for s in got] == [ids[:10], ids[10:11], ids[11:31], ids[31:]]
    first = rows.spans(ranges, ["n"])
    assert list(next(first)["unit"]) == ids[:10]
    first.close()  # taken no further: the thread is told to stop, and joined
    assert threading.active_count() == threads
    rows._blocks = [rows._blocks[0], rows._blocks[1]._replace(pk=-1), *rows._blocks[2:]]  # a block's bytes gone
    with pytest.raises(KeyError):
        list(rows.spans(ranges, ["n"]))
    assert threading.active_count() == threads


@pytest.mark.both_backends
@pytest.mark.django_db
def test_spans_inside_a_transaction_are_read_one_by_one_here(campaign):
    """Inside a transaction another connection would not see the rows: ``spans`` reads them here."""
    run, ids = _stored_run(campaign)
    rows = RunUnits(run.pk)
    threads = threading.active_count()
    spans = rows.spans(_ranges(ids), ["n"])
    assert list(next(spans)["unit"]) == ids[:10] and threading.active_count() == threads
    assert [list(s["unit"]) for s in spans] == [ids[10:11], ids[11:31], ids[31:]]
