"""Each grader's judgments and events are counted as they are written (``GraderTally``, kept by
triggers: docs/analysis.md, "Counting where it is written"): after every kind of write the counts
equal counting the tables, and every change to a grader's judgments moves their ``writes``."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from django.db import connection

from grading.models import Campaign, GraderTally, Judgment, Unit
from grading.models.choices import Scheme
from grading.services.event_input import EventInput
from grading.services.events import events_record
from grading.services.tally import COUNTED, tally_counted
from tests.factories import make_campaign, make_user, record

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


def _counted(campaign: Campaign) -> dict[int, tuple]:
    """What the tables hold, counted the long way: per grader with a judgment or an event."""
    counted = tally_counted(campaign_id=campaign.pk)
    return {grader: tuple(row[name] for name in COUNTED) for (_, grader), row in counted.items()}


def _tallied(campaign: Campaign) -> dict[int, tuple]:
    rows = GraderTally.objects.filter(campaign=campaign).exclude(judgments=0, events=0)
    return {row["grader_id"]: tuple(row[f] for f in COUNTED) for row in rows.values("grader_id", *COUNTED)}


def _writes(campaign: Campaign) -> dict[int, int]:
    return dict(GraderTally.objects.filter(campaign=campaign).values_list("grader_id", "writes"))


class Check:
    """After each write: the tally equals the tables, and the graders named moved their writes."""

    def __init__(self, campaign: Campaign) -> None:
        self.campaign, self.writes = campaign, _writes(campaign)

    def __call__(self, *moved) -> None:
        assert _tallied(self.campaign) == _counted(self.campaign)
        writes = _writes(self.campaign)
        for grader in moved:
            assert writes[grader.pk] > self.writes.get(grader.pk, 0), f"grader {grader.pk}'s writes did not move"
        for grader, n in writes.items():
            if grader not in {g.pk for g in moved}:
                assert n == self.writes.get(grader, n), f"grader {grader}'s writes moved"
        self.writes = writes


@pytest.fixture
def campaign():
    return make_campaign(n_queries=2, n_candidates=4, graders=3)


def _graders(campaign: Campaign) -> list:
    return [role.user for role in campaign.roles.filter(role="grader").order_by("user_id").select_related("user")]


def test_the_event_service_keeps_the_tally(campaign):
    check = Check(campaign)
    a, b, _ = _graders(campaign)
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    assert _tallied(campaign) == {}  # assignments alone count nothing
    record(a, campaign, "broad_set", {"value": "SS"}, unit=units[0])
    check(a)
    record(a, campaign, "fine_set", {"value": 4.5}, unit=units[0], seq=1)  # the same judgment, changed
    check(a)
    record(a, campaign, "page_focus", {"visible": True})  # an event with no judgment
    check()
    event_id = uuid4()
    record(b, campaign, "broad_set", {"value": "VS"}, unit=units[1], event_id=event_id)
    check(b)
    record(b, campaign, "broad_set", {"value": "VS"}, unit=units[1], event_id=event_id)  # a replay: stored once
    check()
    assert GraderTally.objects.get(campaign=campaign, grader=b).events == 1
    record(b, campaign, "skip", {"reason": "unsure"}, unit=units[2])
    check(b)


def test_a_batch_and_its_replay_are_counted_once(campaign):
    check = Check(campaign)
    a = _graders(campaign)[0]
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    now = datetime.now(UTC)
    items = [
        EventInput(
            id=uuid4(),
            campaign_id=campaign.pk,
            type="broad_set",
            payload={"value": "NS"},
            unit_id=unit.pk,
            seq=i,
            session_id="s",
            client_ts=now - timedelta(seconds=10 - i),
        )
        for i, unit in enumerate(units[:4])
    ]
    events_record(grader=a, items=items[:2])
    check(a)
    events_record(grader=a, items=items)  # two replayed, two new: the batch is redone with its ids looked up
    check(a)
    assert GraderTally.objects.get(campaign=campaign, grader=a).events == 4


def test_every_way_the_orm_writes_keeps_the_tally(campaign):
    check = Check(campaign)
    a, b, c = _graders(campaign)
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    one = Judgment.objects.create(campaign=campaign, grader=a, unit=units[0], broad="SS")
    check(a)
    one.fine, one.skipped = 5, True
    one.save()
    check(a)
    Judgment.objects.bulk_create(
        [Judgment(campaign=campaign, grader=b, unit=u, broad="NS", score=1.0) for u in units[:5]]
        + [Judgment(campaign=campaign, grader=c, unit=units[0], label="ok")]
    )
    check(b, c)
    Judgment.objects.bulk_create(  # conflicts on (grader, unit): ignored, so nothing is counted twice
        [Judgment(campaign=campaign, grader=b, unit=u, broad="VS") for u in units[3:7]], ignore_conflicts=True
    )
    check(b)
    Judgment.objects.bulk_create(  # conflicts on (grader, unit) update the judgments there
        [Judgment(campaign=campaign, grader=c, unit=u, verdict="A") for u in units[:2]],
        update_conflicts=True,
        unique_fields=["grader", "unit"],
        update_fields=["verdict", "label"],
    )
    check(c)
    Judgment.objects.filter(grader=b, unit__in=units[:3]).update(broad=None, skipped=True)
    check(b)
    Judgment.objects.filter(grader=b, unit=units[5]).update(fine=7)  # a change the counts do not see
    check(b)
    Judgment.objects.filter(grader=b, unit=units[6]).delete()
    check(b)
    one.delete()
    check(a)
    assert _tallied(campaign)[b.pk][0] == 6


def test_cascades_keep_the_tally():
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=2)
    check = Check(campaign)
    a, b = _graders(campaign)
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    Judgment.objects.bulk_create(
        [Judgment(campaign=campaign, grader=g, unit=u, broad="SS") for g in (a, b) for u in units]
    )
    check(a, b)
    units[0].delete()  # a unit without events: its judgments go with it
    check(a, b)
    b.delete()  # a grader without events: their judgments and their tally go
    check()
    assert not GraderTally.objects.filter(grader_id=b.pk).exists()
    Campaign.objects.filter(pk=campaign.pk).delete()  # no events: the campaign goes, and every tally of it
    assert not GraderTally.objects.filter(campaign_id=campaign.pk).exists()


def test_the_value_fields_of_each_scheme_are_counted():
    for scheme, field in ((Scheme.NUMERIC, "score"), (Scheme.CATEGORICAL, "label")):
        campaign = make_campaign(scheme=scheme, n_queries=1, n_candidates=2, graders=1)
        grader = _graders(campaign)[0]
        unit = Unit.objects.filter(campaign=campaign).first()
        record(grader, campaign, f"{field}_set", {"value": 6 if field == "score" else "ok"}, unit=unit)
        tally = GraderTally.objects.get(campaign=campaign, grader=grader)
        assert getattr(tally, f"with_{field}") == 1 and tally.judgments == tally.kept == 1
        assert _tallied(campaign) == _counted(campaign)


@pytest.mark.postgres
def test_copy_and_truncate_keep_the_tally(campaign):
    """A COPY (the bench's way in) is counted by statement; a TRUNCATE, which no row trigger sees,
    leaves every count at nothing and moves every grader's writes."""
    check = Check(campaign)
    a, b, _ = _graders(campaign)
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    rows = "".join(f"{campaign.pk}\t{g.pk}\t{u.pk}\tVS\t\\N\t\tf\t0\t{{}}\tnow\tnow\n" for g in (a, b) for u in units)
    columns = "campaign_id, grader_id, unit_id, broad, fine, comment, skipped, guidelines_version, applied"
    columns += ", created_at, updated_at"
    with connection.cursor() as cur, cur.cursor.copy(f"COPY grading_judgment ({columns}) FROM STDIN") as copy:
        copy.write(io.StringIO(rows).read())
    check(a, b)
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the COPY's foreign keys, checked before the TRUNCATE
        cur.execute("TRUNCATE grading_judgment")
    check(a, b)
    assert _tallied(campaign) == {}


def test_a_campaign_with_work_before_the_tally_is_counted_when_it_comes(transactional_db):
    """The migration that brings the tally counts what the tables already hold."""
    from django.db.migrations.executor import MigrationExecutor

    campaign = make_campaign(n_queries=1, n_candidates=3, graders=2)
    a, b = _graders(campaign)
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    before, tally = ("grading", "0018_auto_exclusion"), ("grading", "0019_grader_tally")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        record(a, campaign, "broad_set", {"value": "SS"}, unit=units[0])
        record(b, campaign, "skip", {}, unit=units[1])
        Judgment.objects.create(campaign=campaign, grader=b, unit=units[2], fine=3)
        make_user()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert tally in MigrationExecutor(connection).loader.applied_migrations
    assert _tallied(campaign) == _counted(campaign) and set(_tallied(campaign)) == {a.pk, b.pk}


def test_a_row_left_wrong_is_found_and_put_right(campaign):
    """Writes made with triggers set aside can leave a row wrong: ``grader_tally`` finds it, says
    what differs, and with --fix rewrites it and moves its writes (so runs read that grader again)."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    a, b, _ = _graders(campaign)
    units = list(Unit.objects.filter(campaign=campaign).order_by("pk"))
    record(a, campaign, "broad_set", {"value": "SS"}, unit=units[0])
    record(b, campaign, "broad_set", {"value": "NS"}, unit=units[1])
    out = io.StringIO()
    call_command("grader_tally", "--campaign", campaign.slug, stdout=out)
    assert out.getvalue().strip() == "Every grader's counts agree with the tables."

    GraderTally.objects.filter(campaign=campaign, grader=a).update(judgments=5, events=0)
    GraderTally.objects.filter(campaign=campaign, grader=b).delete()
    writes = _writes(campaign)
    out = io.StringIO()
    with pytest.raises(CommandError, match="2 row"):
        call_command("grader_tally", "--campaign", str(campaign.pk), stdout=out)
    assert f"grader {a.pk}: judgments 5 kept, 1 counted, events 0 kept, 1 counted" in out.getvalue()
    assert f"grader {b.pk}: no row kept; counted judgments 1, kept 1, with_broad 1, events 1" in out.getvalue()
    assert _tallied(campaign) != _counted(campaign)  # a check alone writes nothing

    out = io.StringIO()
    call_command("grader_tally", "--fix", stdout=out)
    assert "Put right 2 row(s)." in out.getvalue()
    assert _tallied(campaign) == _counted(campaign)
    assert _writes(campaign)[a.pk] == writes[a.pk] + 1 and b.pk in _writes(campaign)
    with pytest.raises(CommandError, match="no campaign") as unknown:
        call_command("grader_tally", "--campaign", "nope")
    assert unknown.value.returncode == 2  # not 1, which says that rows differ
