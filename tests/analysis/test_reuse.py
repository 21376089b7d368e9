"""A run takes the shards whose data has not changed from the campaign's last run instead of reading
them again, and reports exactly what reading them all gives (docs/analysis.md, "Reusing shards")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from analysis import metrics, unit_blocks
from analysis.metrics import bootstrap
from analysis.models import AnalysisRun, KeptSum, RunShard, RunStatus
from analysis.reports.serialize import jsonable
from analysis.selectors import in_span
from analysis.services import reuse, runs, slice_memo, values
from analysis.services.execute import combine_execute, run_execute, shard_execute, take_execute
from analysis.services.report import report_compute
from analysis.services.shards import shard_plan
from grading.models import Assignment, Judgment, Unit
from grading.services.gold import gold_set
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, make_user, record

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]
PARAMS = {"n_boot": 200, "confidence": 0.95, "fine_tolerance": 0.5}


@pytest.fixture
def campaign(settings):
    settings.ANALYSIS_SHARD_JUDGMENTS = 10  # a shard per grader
    campaign = make_campaign(n_queries=4, n_candidates=5, graders=6, overlap=4)
    judge_broad_fine(campaign, seed=11)
    return campaign


def _run(campaign, **kwargs) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=9)
    assert run_execute(run_id=run.pk, **kwargs) in (RunStatus.SUCCEEDED, "sharded")
    run.refresh_from_db()
    return run


def _graders(campaign) -> list[int]:
    return sorted(set(Judgment.objects.filter(campaign=campaign).values_list("grader_id", flat=True)))


def _change(campaign, grader_id: int) -> None:
    """The grader changes one of their judgments, as the grading page records it."""
    judgment = Judgment.objects.filter(campaign=campaign, grader_id=grader_id).order_by("unit_id").first()
    new = "NS" if judgment.broad != "NS" else "VS"
    moment = datetime.now(UTC) - timedelta(minutes=1)
    record(judgment.grader, campaign, "broad_set", {"value": new}, unit=judgment.unit, client_ts=moment, seq=99)


def _blocks(run: AnalysisRun):
    """The bootstrap's blocks ``run`` keeps (the slices' sums are kept beside them: ``slice_memo``)."""
    return KeptSum.objects.filter(run=run).exclude(key__startswith=slice_memo.KEY_PREFIX)


def _shard_of(run: AnalysisRun, grader_id: int) -> RunShard:
    for shard in RunShard.objects.filter(run=run):
        if in_span(grader_id, tuple(shard.graders)):
            return shard
    raise AssertionError(f"no shard of run {run.pk} holds grader {grader_id}")


def test_a_run_takes_the_unchanged_shards_of_the_last_and_reports_what_reading_all_gives(campaign):
    first = _run(campaign)
    assert first.shards_total == len(_graders(campaign)) and first.shards_reused == 0
    changed = _graders(campaign)[2]
    _change(campaign, changed)

    second = _run(campaign)
    assert second.shards_reused == second.shards_total - 1 and second.shards_done == second.shards_total
    read = _shard_of(second, changed)
    assert read.reused_from_id is None and read.seconds > 0
    taken = RunShard.objects.filter(run=second).exclude(pk=read.pk)
    assert {s.reused_from_id for s in taken} == {first.pk} and {s.seconds for s in taken} == {0.0}
    assert not RunShard.objects.filter(run=first, part__isnull=False).exists()  # only the latest run's are kept

    RunShard.objects.update(part=None)  # nothing to take: every shard is read
    third = _run(campaign)
    assert third.shards_reused == 0
    assert second.result == third.result  # every figure, to the last bit
    stored = [unit_blocks.RunUnits(run.pk).frame() for run in (second, third)]
    assert len(stored[0]) > 0
    pd.testing.assert_frame_equal(*stored, check_exact=True)  # to the last bit


def test_a_run_with_nothing_changed_takes_every_shard_and_reads_none(campaign):
    first = _run(campaign)
    sent = []
    second = _run(campaign, fan_out=lambda *args: sent.append(args))
    assert sent == []  # nothing to hand to the workers: combined where the run was taken
    assert second.status == RunStatus.SUCCEEDED and second.shards_reused == second.shards_total
    assert second.result == first.result


def test_workers_are_handed_only_the_shards_that_changed(campaign):
    first = _run(campaign)
    changed = _graders(campaign)[-1]
    _change(campaign, changed)
    sent = []
    run = _run(campaign, fan_out=lambda *args: sent.append(args))
    index = _shard_of(run, changed).index
    others = [i for i in range(run.shards_total) if i != index]
    assert sent == [(run.pk, run.attempts, [index], others)]  # to read, and to take beside them
    assert run.status == RunStatus.RUNNING and run.shards_done == 0  # nothing copied while planning
    assert take_execute(run_id=run.pk, attempt=run.attempts, indexes=others) == "done"
    run.refresh_from_db()
    assert run.shards_done == run.shards_reused == run.shards_total - 1
    assert take_execute(run_id=run.pk, attempt=run.attempts, indexes=others) == "done"  # redelivered: nothing
    run.refresh_from_db()
    assert run.shards_done == run.shards_reused == run.shards_total - 1
    assert shard_execute(run_id=run.pk, attempt=run.attempts, index=index) == "done"
    assert combine_execute(run_id=run.pk, attempt=run.attempts) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    expected, _ = report_compute(campaign_id=campaign.pk, parameters=run.parameters, seed=9)
    assert run.result == jsonable(expected) and run.result != first.result


def test_a_part_dropped_before_it_is_taken_is_read_by_the_task_that_takes_the_others(campaign):
    """Between the plan and the task that takes the parts, the run before lost one of them (a run
    finishing meanwhile keeps only its own): that shard is read instead, and the report is the same."""
    first = _run(campaign)
    changed = _graders(campaign)[-1]
    _change(campaign, changed)
    sent = []
    run = _run(campaign, fan_out=lambda *args: sent.append(args))
    (_, _, [index], others) = sent[0]
    RunShard.objects.filter(run=first, index=others[0]).update(part=None)
    assert take_execute(run_id=run.pk, attempt=run.attempts, indexes=others) == "done"
    run.refresh_from_db()
    assert run.shards_done == run.shards_total - 1 and run.shards_reused == run.shards_total - 2
    read = RunShard.objects.get(run=run, index=others[0])
    assert read.reused_from_id is None and read.part is not None and read.finished_at is not None
    assert take_execute(run_id=run.pk + 1000, attempt=run.attempts, indexes=others) == "lost"
    assert shard_execute(run_id=run.pk, attempt=run.attempts, index=index) == "done"
    assert combine_execute(run_id=run.pk, attempt=run.attempts) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    expected, _ = report_compute(campaign_id=campaign.pk, parameters=run.parameters, seed=9)
    assert run.result == jsonable(expected)


def test_a_take_cut_short_by_the_database_leaves_nothing_taken_and_its_retry_takes_all(campaign, monkeypatch):
    """The copies and their count are one transaction: a connection lost at the count (after the
    copies) leaves every shard untaken and uncounted, for the retried task to take them all."""
    from analysis.services import attempts
    from analysis.services.execute import Transient

    _run(campaign)
    _change(campaign, _graders(campaign)[-1])
    sent = []
    run = _run(campaign, fan_out=lambda *args: sent.append(args))
    (_, _, _, others) = sent[0]
    owned = attempts.run_owned
    monkeypatch.setattr(attempts, "run_owned", lambda **kwargs: _LostAtCount(owned(**kwargs)))
    with pytest.raises(Transient):
        take_execute(run_id=run.pk, attempt=run.attempts, indexes=others)
    monkeypatch.setattr(attempts, "run_owned", owned)
    run.refresh_from_db()
    assert run.shards_done == run.shards_reused == 0
    assert not RunShard.objects.filter(run=run, index__in=others, finished_at__isnull=False).exists()
    assert take_execute(run_id=run.pk, attempt=run.attempts, indexes=others) == "done"
    run.refresh_from_db()
    assert run.shards_done == run.shards_reused == len(others)


class _LostAtCount:
    """``attempts.run_owned``'s query, whose update of the shards' count loses the connection."""

    def __init__(self, query) -> None:
        self.query = query

    def update(self, **values):
        if "shards_done" in values:
            from django.db import OperationalError

            raise OperationalError("the connection went away")
        return self.query.update(**values)

    def __getattr__(self, name):
        return getattr(self.query, name)


def test_a_run_takes_the_sums_of_the_slices_whose_judgments_did_not_change(campaign, monkeypatch):
    """Slices of about 7 judgments; one judgment changes: the next run reads only that judgment's
    slice (the others' sums taken from the run before) and reports what computing everything gives."""
    _takes_the_sums_of_the_slices_that_did_not_change(campaign, monkeypatch)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_outside_a_transaction_reads_the_stored_figures_ahead_and_takes_the_same(campaign, monkeypatch):
    """The same, with no transaction around the runs: the stored figures of the slices taken are
    read ahead on a thread of their own connection (``unit_blocks.RunUnits.spans``)."""
    spans = []
    read = unit_blocks.RunUnits.spans
    monkeypatch.setattr(unit_blocks.RunUnits, "spans", lambda self, r, c: spans.append(len(r)) or read(self, r, c))
    ahead = []
    monkeypatch.setattr(unit_blocks.threading, "Thread", _Counted(ahead))
    _takes_the_sums_of_the_slices_that_did_not_change(campaign, monkeypatch)
    assert spans and max(spans) > 3 and ahead  # figures taken, read ahead


class _Counted:
    """``threading.Thread``, counting the threads made."""

    def __init__(self, made: list) -> None:
        self.made, self.thread = made, unit_blocks.threading.Thread

    def __call__(self, *args, **kwargs):
        self.made.append(kwargs.get("name"))
        return self.thread(*args, **kwargs)


def _takes_the_sums_of_the_slices_that_did_not_change(campaign, monkeypatch) -> None:
    monkeypatch.setattr(values, "CHUNK_ROWS", 7)
    computed = []  # the slices whose units' figures were computed, not read from the run before's rows
    confusability = metrics.unit_confusability
    monkeypatch.setattr(metrics, "unit_confusability", lambda frame: computed.append(1) or confusability(frame))
    first = _run(campaign)
    assert first.slices_total > 3 and first.slices_reused == 0 and len(computed) == first.slices_total
    computed.clear()
    same = _run(campaign)
    assert (same.slices_total, same.slices_reused) == (first.slices_total, first.slices_total)
    assert same.result == first.result and not computed
    _change(campaign, _graders(campaign)[1])

    second = _run(campaign)
    assert (second.slices_total, second.slices_reused) == (first.slices_total, first.slices_total - 1)
    assert len(computed) == 1
    expected, units = report_compute(campaign_id=campaign.pk, parameters=second.parameters, seed=9)
    assert second.result == jsonable(expected) and second.result != first.result
    # the per-unit rows too: those of the slices not read were the run before's stored figures
    stored = unit_blocks.RunUnits(second.pk).frame()
    pd.testing.assert_frame_equal(stored[list(units.columns)], units, check_exact=True, check_dtype=False)
    KeptSum.objects.all().delete()  # nothing to take: every slice is read
    third = _run(campaign)
    assert (third.slices_total, third.slices_reused) == (first.slices_total, 0)
    assert third.result == second.result
    pd.testing.assert_frame_equal(unit_blocks.RunUnits(third.pk).frame(), stored, check_exact=True)


def test_a_run_takes_the_bootstrap_blocks_whose_units_did_not_change_and_reports_what_drawing_all_gives(
    campaign, monkeypatch
):
    """Alpha's bootstrap over many units (here blocks of 4 units beyond 8) keeps each block's products;
    the next run, after one FINE score changed, draws only that unit's block and takes the others:
    its result is that of a run that drew every block, to the last bit (docs/analysis.md)."""
    monkeypatch.setattr(bootstrap, "UNIT_BLOCK", 4)
    monkeypatch.setattr(bootstrap, "UNITS_AT_ONCE", 8)
    first = _run(campaign)
    blocks = _blocks(first).count()
    assert blocks == -(-Unit.objects.filter(campaign=campaign).count() // 4)
    assert (first.bootstrap_blocks, first.bootstrap_blocks_reused) == (blocks, 0)
    judgment = Judgment.objects.filter(campaign=campaign).order_by("unit_id").last()
    moment = datetime.now(UTC) - timedelta(minutes=1)
    fine = 0.0 if judgment.fine != 0.0 else 10.0
    record(judgment.grader, campaign, "fine_set", {"value": fine}, unit=judgment.unit, client_ts=moment, seq=99)

    second = _run(campaign)
    assert (second.bootstrap_blocks, second.bootstrap_blocks_reused) == (blocks, blocks - 1)
    assert not KeptSum.objects.filter(run=first).exists()  # only the latest run's are kept
    assert _blocks(second).count() == blocks
    assert second.result["agreement"]["alpha"] != first.result["agreement"]["alpha"]
    KeptSum.objects.all().delete()  # nothing to take: every block is drawn
    third = _run(campaign)
    assert (third.bootstrap_blocks, third.bootstrap_blocks_reused) == (blocks, 0)
    assert second.result == third.result  # every figure, to the last bit


def _prints(campaign, *, excluded=frozenset(), tolerance=0.5) -> list[str]:
    plan = shard_plan(campaign_id=campaign.pk)
    return reuse.fingerprints(campaign_id=campaign.pk, plan=plan, excluded=set(excluded), tolerance=tolerance)


def _changed(before: list[str], after: list[str]) -> list[int]:
    assert len(before) == len(after)
    return [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]


def test_what_changes_a_graders_data_changes_only_their_shards_fingerprint(campaign):
    graders = _graders(campaign)
    before = _prints(campaign)
    assert len(set(before)) == len(before) == len(graders)
    assert _prints(campaign) == before  # the same data, the same fingerprints

    _change(campaign, graders[1])  # a new event and a changed judgment
    assert _changed(before, after := _prints(campaign)) == [1]

    record(Judgment.objects.filter(grader_id=graders[3]).first().grader, campaign, "page_focus", {"visible": False})
    assert _changed(after, after2 := _prints(campaign)) == [3]  # an event, even one that is no value

    # Changed behind the event log's back: every write of a judgment is counted where it is written.
    Judgment.objects.filter(grader_id=graders[4]).update(comment="changed behind the event log's back")
    assert _changed(after2, after3 := _prints(campaign)) == [4]
    judgment = Judgment.objects.filter(grader_id=graders[2]).first()
    judgment.fine = 3.0
    judgment.save()
    assert _changed(after3, after3 := _prints(campaign)) == [2]

    assignment = Assignment.objects.filter(grader_id=graders[0]).first()
    Assignment.objects.create(campaign=campaign, grader_id=graders[0], unit=assignment.unit, repeat=True)
    assert _changed(after3, after4 := _prints(campaign)) == [0]  # a hidden repeat: which events count

    assert _changed(after4, _prints(campaign, excluded={graders[5]})) == [5]


def test_what_every_shard_reads_changes_every_fingerprint(campaign):
    before = _prints(campaign)
    everything = list(range(len(before)))
    assert _changed(before, _prints(campaign, tolerance=1.0)) == everything
    unit = Unit.objects.filter(campaign=campaign).first()
    Unit.objects.create(
        campaign=campaign, external_id="added", query=unit.query, candidate=unit.candidate, position=unit.position + 1
    )
    assert _changed(before, _prints(campaign)) == everything  # a unit: which judgments count


def test_hidden_gold_changes_every_fingerprint(campaign):
    before = _prints(campaign)
    unit = Unit.objects.filter(campaign=campaign).order_by("pk").first()
    organizer = make_user()
    campaign.roles.create(user=organizer, role="organizer")
    gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value="VS")
    assert _changed(before, _prints(campaign)) == list(range(len(before)))


@pytest.mark.postgres
def test_the_plan_counts_hidden_repeats_through_their_own_index(campaign):
    """The fingerprints count each grader's hidden repeats: a few rows among the campaign's
    assignments (one per judgment), which the plan must not read all of."""
    from django.db import connection
    from django.db.models import Count, Max

    qs = (
        Assignment.objects.filter(campaign_id=campaign.pk, repeat=True)
        .order_by()
        .values("grader_id")
        .annotate(n=Count("pk"), last=Max("pk"), latest=Max("created_at"))
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny test table: what the plan can use, not its cost
        plan = qs.explain()
    assert "assignment_repeats" in plan, plan
