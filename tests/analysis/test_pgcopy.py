"""The COPY fast path (analysis.pgcopy, unit_blocks._copy) and the ORM path give the same frames and
the same stored blocks, row for row and byte for byte.

On PostgreSQL the first of each pair goes through COPY; with ``available`` patched off (or, for the
blocks, ``unit_blocks.write`` told it is not on PostgreSQL), the ORM. On SQLite both are the ORM
path: the test then checks the frames' types the callers rely on.
"""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pandas as pd
import pytest
from django.db import connection

from analysis import export, pgcopy, selectors, unit_blocks
from analysis.models import AnalysisRun, UnitBlock
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Assignment, Unit
from grading.models.choices import Scheme
from tests.factories import make_campaign, record

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


@pytest.fixture
def copies(monkeypatch) -> list[str]:
    """The SQL of every COPY out into a frame, to show which path ran."""
    seen: list[str] = []
    real = pgcopy.copy_out_into

    def spy(sql, params, out):
        seen.append(sql)
        return real(sql, params, out)

    monkeypatch.setattr(pgcopy, "copy_out_into", spy)
    return seen


def _both(read, monkeypatch, copies):
    first = read()
    used_copy = bool(copies)
    with monkeypatch.context() as patch:
        patch.setattr(pgcopy, "available", lambda: False)
        second = read()
    assert used_copy == (connection.vendor == "postgresql")
    return first, second


def _run(campaign, seed: int) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=seed)
    assert run_execute(run_id=run.pk) == "succeeded"
    return run


@pytest.mark.parametrize("reader", ["judgments_frame", "unit_events_frame"])
def test_the_selectors_frames_are_the_same_through_copy_and_the_orm(judged_campaign, monkeypatch, copies, reader):
    read = getattr(selectors, reader)
    copied, orm = _both(lambda: read(campaign_id=judged_campaign.pk), monkeypatch, copies)
    assert len(copied) > 40
    if reader == "unit_events_frame":  # its query has no ORDER BY (the analysis orders what it needs)
        keys = ["grader", "unit", "server_ts", "session_seq", "type"]
        copied, orm = (f.sort_values(keys, kind="stable").reset_index(drop=True) for f in (copied, orm))
    pd.testing.assert_frame_equal(copied, orm, check_exact=True)
    assert copied["unit"].dtype == "int64" and copied["grader"].dtype == "int64"


def test_the_ground_truth_frame_is_the_same_through_copy_and_the_orm(judged_campaign, monkeypatch, copies):
    run = _run(judged_campaign, seed=3)
    copied, orm = _both(lambda: export.ground_truth_frame(run, export.Filters()), monkeypatch, copies)
    assert len(copied) == judged_campaign.units.count()
    pd.testing.assert_frame_equal(copied, orm, check_exact=True)


@pytest.fixture(params=["broad_fine", "categorical"])
def stored_campaign(request, judged_campaign):
    """A judged campaign of each kind of per-unit results: BROAD counts, or a label distribution (JSON)."""
    if request.param == "broad_fine":
        return judged_campaign
    campaign = make_campaign(scheme=Scheme.CATEGORICAL, n_queries=3, n_candidates=5, graders=3)
    labels = campaign.scheme_params["labels"]
    for i, a in enumerate(Assignment.objects.filter(campaign=campaign).select_related("grader").order_by("pk")):
        record(a.grader, campaign, "label_set", {"value": labels[(a.unit_id + i % 2) % len(labels)]}, unit=a.unit)
    return campaign


@pytest.fixture
def block_copies(monkeypatch) -> list[int]:
    """The number of blocks each COPY of a run's blocks wrote (``unit_blocks._copy``), to show which path ran."""
    seen: list[int] = []
    real = unit_blocks._copy

    def spy(run_id, blocks):
        blocks = list(blocks)
        seen.append(len(blocks))
        return real(run_id, blocks)

    monkeypatch.setattr(unit_blocks, "_copy", spy)
    return seen


def _bulk_create(patch: pytest.MonkeyPatch) -> None:
    """``unit_blocks.write`` takes its other path, ``bulk_create``, whatever the database."""
    patch.setattr(unit_blocks, "connection", SimpleNamespace(vendor="not postgresql"))


def _blocks(run: AnalysisRun) -> list[tuple]:
    """The run's blocks as stored, every field but the ids, the bytes as bytes."""
    fields = ["index", "first_unit", "last_unit", "rows", "broad", "distribution", "model_label", "model_score"]
    return [(*rest, bytes(data)) for *rest, data in UnitBlock.objects.filter(run=run).values_list(*fields, "data")]


def test_unit_blocks_stored_through_copy_equal_those_stored_through_bulk_create(
    stored_campaign, monkeypatch, block_copies
):
    judged_campaign = stored_campaign
    copied = _run(judged_campaign, seed=11)
    assert block_copies == ([1] if connection.vendor == "postgresql" else [])
    with monkeypatch.context() as patch:
        patch.setattr(pgcopy, "available", lambda: False)
        _bulk_create(patch)
        orm = _run(judged_campaign, seed=11)
    assert len(block_copies) == (connection.vendor == "postgresql")
    assert _blocks(copied) == _blocks(orm) and _blocks(copied)[0][3] == judged_campaign.units.count()
    frames = [unit_blocks.RunUnits(run.pk).frame() for run in (copied, orm)]
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)
    assert list(frames[0]["unit"]) == list(judged_campaign.units.order_by("pk").values_list("pk", flat=True))
    kind = "distribution" if judged_campaign.scheme == Scheme.CATEGORICAL else "broad"
    assert unit_blocks.RunUnits(copied.pk).has(kind) and unit_blocks.RunUnits(orm.pk).has(kind)


def test_copy_keeps_null_apart_from_the_empty_string(judged_campaign, monkeypatch, copies):
    from grading.models import Candidate

    Candidate.objects.filter(pk=Candidate.objects.filter(campaign=judged_campaign).first().pk).update(text="")
    qs = Candidate.objects.filter(campaign=judged_campaign).order_by("pk").values_list("pk", "text")
    copied, orm = _both(lambda: pgcopy.query_frame(qs, ["id", "text"], {"id": "int"}), monkeypatch, copies)
    assert copied["text"].iloc[0] == ""
    pd.testing.assert_frame_equal(copied, orm, check_exact=True)


@pytest.mark.postgres
def test_a_copy_that_fails_raises_the_databases_error_and_leaves_the_connection_usable(db):
    import psycopg

    with pytest.raises(psycopg.errors.DivisionByZero):
        pgcopy.copy_out_into("SELECT 1 / (id - id) FROM grading_campaign UNION ALL SELECT 1 / 0", [], io.BytesIO())
    with pytest.raises(psycopg.errors.UndefinedTable):
        pgcopy.copy_out_into("SELECT * FROM no_such_table WHERE id = %s", [1], io.BytesIO())
    out = io.BytesIO()
    pgcopy.copy_out_into("SELECT %s::text, %s::int", ['it\'s, "quoted"', 7], out)
    assert out.getvalue() == b'"it\'s, ""quoted""",7\n'
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
        assert cursor.fetchone() == (2,)


def test_blocks_written_by_copy_and_by_bulk_create_are_the_same_and_read_back_as_the_values_they_were(
    judged_campaign, monkeypatch, block_copies
):
    """Doubles to the last bit (denormals and extremes included), NaN as missing, integers from floats
    and from integers, ids beyond 2**53 exact, and JSON with commas, quotes, new lines and accents;
    blocks of two units, so that COPY writes several rows."""
    import numpy as np

    big = 2**53 + 1  # units with ids no double holds, so that reading them back keeps them
    first = judged_campaign.units.order_by("pk").first()
    for pk in range(big, big + 6):
        Unit.objects.create(pk=pk, campaign=judged_campaign, external_id=f"u{pk}", candidate=first.candidate)
    monkeypatch.setattr(unit_blocks, "BLOCK_UNITS", 2)
    awkward = [1 / 3, 5e-324, 1.7976931348623157e308, -0.0, 0.1 + 0.2, float("nan")]
    frame = pd.DataFrame(
        {
            "unit": np.arange(big + 5, big - 1, -1, dtype=np.int64),  # in no order
            "query": [np.nan, 7, 8, 9, 10, 11],
            "n": [2, 3, 4, 5, 6, 7],
            "mean": awkward,
            "std": awkward[::-1],
            "n_ns": [np.nan, 1, 2, 3, 4, 5],
            "distribution": [{"a,b": 1}, {'say "hi"': 2}, {"line\nnext": 3}, {"é": 4}, {"": 0}, None],
            "model_score": [np.nan, 0.5, 1.5, 2.5, 3.5, 4.5],
        }
    )
    runs_ = [AnalysisRun.objects.create(campaign=judged_campaign) for _ in range(2)]
    assert unit_blocks.write(runs_[0].pk, frame) == 3
    assert block_copies == ([3] if connection.vendor == "postgresql" else [])
    with monkeypatch.context() as patch:
        _bulk_create(patch)
        assert unit_blocks.write(runs_[1].pk, frame) == 3
    assert len(block_copies) == (connection.vendor == "postgresql")
    assert _blocks(runs_[0]) == _blocks(runs_[1])
    assert [b[:4] for b in _blocks(runs_[0])] == [
        (0, big, big + 1, 2),
        (1, big + 2, big + 3, 2),
        (2, big + 4, big + 5, 2),
    ]
    read = [unit_blocks.RunUnits(run.pk).frame() for run in runs_]
    pd.testing.assert_frame_equal(read[0], read[1], check_exact=True)
    stored, given = read[0], frame.iloc[::-1].reset_index(drop=True)
    assert stored["unit"].tolist() == list(range(big, big + 6))
    assert [None if pd.isna(q) else int(q) for q in stored["query"]] == [11, 10, 9, 8, 7, None]
    for name in ("mean", "std", "model_score"):
        want, got = given[name].to_numpy(), stored[name].to_numpy()
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert got[~np.isnan(want)].tobytes() == want[~np.isnan(want)].tobytes()  # -0.0 and 5e-324 too
    assert [None if pd.isna(v) else int(v) for v in stored["n_ns"]] == [5, 4, 3, 2, 1, None]
    assert [None if d is None else json.loads(d) for d in stored["distribution"]] == list(given["distribution"])
    assert unit_blocks.RunUnits(runs_[1].pk).row(big)["distribution"] is None
    assert unit_blocks.RunUnits(runs_[1].pk).row(big + 3)["distribution"] == {"line\nnext": 3}


def test_rows_fetched_in_binary_are_the_orms_rows(judged_campaign):
    """Bytes of every value (a NUL, 0xff, a large value), NULL, integers beyond 2**31 and booleans,
    in the query's order and with its limit; no row, no tuple."""
    run = AnalysisRun.objects.create(campaign=judged_campaign)
    datas = [bytes(range(256)) * 4000, b"\x00", b""]
    UnitBlock.objects.bulk_create(
        UnitBlock(run=run, index=i, first_unit=2**40 + i, last_unit=2**40 + i, rows=1, broad=i == 1, data=d)
        for i, d in enumerate(datas)
    )
    UnitBlock.objects.filter(run=run, index=1).update(model=b"\xff" * 3)
    qs = (
        UnitBlock.objects.filter(run=run)
        .order_by("-index")
        .values_list("index", "first_unit", "broad", "data", "model")
    )
    orm = [(i, u, b, bytes(d), None if m is None else bytes(m)) for i, u, b, d, m in qs]
    got = pgcopy.rows_binary(qs)
    assert [(i, u, b, bytes(d), None if m is None else bytes(m)) for i, u, b, d, m in got] == orm
    assert [row[:3] for row in got] == [(2, 2**40 + 2, False), (1, 2**40 + 1, True), (0, 2**40, False)]
    assert len(pgcopy.rows_binary(qs.all()[:1])) == 1 and pgcopy.rows_binary(qs.filter(index=7)) == []


def test_an_update_bound_by_the_server_is_the_querysets_update(judged_campaign):
    """``update_bound`` changes the rows ``QuerySet.update`` would, to the same values: bytes of
    every value (a NUL, 0xff, a large value), JSON, a timestamp, NULL; its count of rows; no row
    matched, nothing changed."""
    from django.utils import timezone

    from analysis.models import RunModelSide, SideState

    runs_ = [AnalysisRun.objects.create(campaign=judged_campaign) for _ in range(3)]
    for run in runs_:
        RunModelSide.objects.create(run=run, attempt=1, state=SideState.TAKEN, excluded=[], pseudonyms="")
    data, moment = bytes(range(256)) * 4000 + b"\x00", timezone.now()
    values = {
        "state": SideState.DONE,
        "section": {"graders": [{"name": "Bé", "weight": 0.25}], "none": None},
        "units": data,
        "excluded": [3, 1],
        "seconds": 1.5,
    }
    rows = RunModelSide.objects.filter(run__in=runs_[:2], state=SideState.TAKEN)
    assert pgcopy.update_bound(rows, **values) == 2
    assert pgcopy.update_bound(RunModelSide.objects.filter(run=runs_[2], attempt=9), units=b"x") == 0
    RunModelSide.objects.filter(run=runs_[2]).update(**values)  # the ORM's own, to compare with
    stored = [
        (state, section, bytes(units), excluded, seconds)
        for state, section, units, excluded, seconds in RunModelSide.objects.order_by("run_id").values_list(
            "state", "section", "units", "excluded", "seconds"
        )
    ]
    assert stored[0] == stored[1] == stored[2] == (SideState.DONE, values["section"], data, [3, 1], 1.5)
    assert pgcopy.update_bound(RunModelSide.objects.filter(run=runs_[0]), units=None, error="gone") == 1
    assert RunModelSide.objects.values_list("units", "error").get(run=runs_[0]) == (None, "gone")
    AnalysisRun.objects.filter(pk=runs_[1].pk).update(finished_at=None)
    assert pgcopy.update_bound(AnalysisRun.objects.filter(pk=runs_[1].pk), finished_at=moment) == 1
    assert AnalysisRun.objects.get(pk=runs_[1].pk).finished_at == moment
    with pytest.raises(TypeError, match="slice"):
        pgcopy.update_bound(RunModelSide.objects.order_by("pk")[:1], error="x")
