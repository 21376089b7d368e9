from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from uuid import uuid4

import pytest

from grading.errors import CampaignClosed, EventConflict, InvalidValue, NotAssigned, NotFound
from grading.models import Assignment, GradingEvent, Judgment, Ordering
from grading.models.choices import AssignmentStatus, CampaignStatus, Scheme
from grading.services import events as events_service
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db


def first_unit_of(grader, campaign):
    return Assignment.objects.filter(grader=grader, campaign=campaign).order_by("position").first().unit


def test_broad_then_fine_makes_a_complete_judgment_and_closes_the_assignment():
    campaign = make_campaign()
    grader = campaign.roles.first().user
    unit = first_unit_of(grader, campaign)
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=unit, seq=1)
    outcome = record(grader, campaign, "fine_set", {"value": 8.3}, unit=unit, seq=2)
    judgment = Judgment.objects.get(grader=grader, unit=unit)
    assert (judgment.broad, judgment.fine) == ("VS", Decimal("8.3"))
    assert judgment.guidelines_version == 1
    assert outcome.hint is None
    assert Assignment.objects.get(grader=grader, unit=unit).status == AssignmentStatus.DONE
    assert GradingEvent.objects.filter(grader=grader).count() == 2


def test_it_stores_a_replayed_id_once_and_answers_the_same():
    campaign = make_campaign()
    grader = campaign.roles.first().user
    unit = first_unit_of(grader, campaign)
    event_id = uuid4()
    first = record(grader, campaign, "broad_set", {"value": "SS"}, unit=unit, event_id=event_id)
    again = record(grader, campaign, "broad_set", {"value": "SS"}, unit=unit, event_id=event_id)
    assert GradingEvent.objects.count() == 1
    assert again.replayed and again.as_dict()["event"] == first.as_dict()["event"]


def test_it_refuses_an_id_reused_by_another_grader():
    campaign = make_campaign()
    a, b = [r.user for r in campaign.roles.all()]
    event_id = uuid4()
    record(a, campaign, "broad_set", {"value": "SS"}, unit=first_unit_of(a, campaign), event_id=event_id)
    with pytest.raises(EventConflict):
        record(b, campaign, "broad_set", {"value": "SS"}, unit=first_unit_of(b, campaign), event_id=event_id)


@pytest.mark.parametrize(
    "kind,value,field",
    [
        ("fine_set", 10.5, "payload.value"),
        ("fine_set", 7.25, "payload.value"),
        ("fine_set", "7", "payload.value"),
        ("fine_set", float("nan"), "payload.value"),
        ("broad_set", "XX", "payload.value"),
        ("score_set", 3, "type"),
    ],
)
def test_it_rejects_bad_values_and_stores_nothing(kind, value, field):
    campaign = make_campaign()
    grader = campaign.roles.first().user
    with pytest.raises(InvalidValue) as err:
        record(grader, campaign, kind, {"value": value}, unit=first_unit_of(grader, campaign))
    assert err.value.field == field
    assert GradingEvent.objects.count() == 0 and Judgment.objects.count() == 0


def test_it_refuses_units_not_assigned_closed_campaigns_and_strangers():
    campaign = make_campaign(graders=3, overlap=1, n_queries=1, n_candidates=3)
    a = campaign.roles.first().user
    others = Assignment.objects.filter(campaign=campaign).exclude(grader=a).first().unit
    with pytest.raises(NotAssigned):
        record(a, campaign, "broad_set", {"value": "NS"}, unit=others)
    with pytest.raises(NotFound):
        record(make_user(), campaign, "broad_set", {"value": "NS"}, unit=others)
    campaign.status = CampaignStatus.CLOSED
    campaign.save()
    with pytest.raises(CampaignClosed):
        record(a, campaign, "broad_set", {"value": "NS"}, unit=first_unit_of(a, campaign))
    assert GradingEvent.objects.count() == 0


def test_a_late_event_from_an_older_sequence_does_not_overwrite_a_newer_value():
    campaign = make_campaign()
    grader = campaign.roles.first().user
    unit = first_unit_of(grader, campaign)
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=unit, seq=5)
    record(grader, campaign, "broad_set", {"value": "NS"}, unit=unit, seq=4)
    assert Judgment.objects.get(grader=grader, unit=unit).broad == "VS"
    assert GradingEvent.objects.count() == 2


def test_fine_outside_the_broad_band_gives_a_hint():
    campaign = make_campaign()
    grader = campaign.roles.first().user
    unit = first_unit_of(grader, campaign)
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=unit)
    outcome = record(grader, campaign, "fine_set", {"value": 2.1}, unit=unit)
    assert "unusual for Very Similar" in outcome.hint


def test_an_ordering_must_be_a_permutation_of_the_query_candidates():
    campaign = make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=4)
    grader = campaign.roles.first().user
    query = campaign.queries.get()
    ids = list(campaign.candidates.values_list("public_id", flat=True))
    with pytest.raises(InvalidValue, match="not a complete ordering"):
        record(grader, campaign, "ordering_submitted", {"items": ids[:3]}, query=query)
    with pytest.raises(InvalidValue, match="more than once"):
        record(grader, campaign, "ordering_submitted", {"items": ids[:3] + ids[:1]}, query=query)
    record(grader, campaign, "ordering_submitted", {"items": ids[::-1]}, query=query)
    assert Ordering.objects.get(grader=grader, query=query).items == ids[::-1]
    assert Assignment.objects.get(grader=grader, query=query).status == AssignmentStatus.DONE


def batch_of(grader, campaign, n, **overrides):
    from datetime import UTC, datetime

    from grading.services.events import EventInput

    units = [a.unit for a in Assignment.objects.filter(grader=grader, campaign=campaign).order_by("position")]
    return [
        EventInput(
            id=uuid4(),
            campaign_id=campaign.pk,
            type="broad_set",
            payload={"value": "VS"},
            unit_id=units[i % len(units)].pk,
            client_ts=datetime.now(UTC),
            seq=i,
            session_id="s",
        )
        for i in range(n)
    ]


def test_a_batch_records_each_event_on_its_own_and_in_order():
    from dataclasses import replace

    from grading.services.events import events_record

    campaign = make_campaign(n_queries=2, n_candidates=5)
    grader = campaign.roles.first().user
    items = batch_of(grader, campaign, 6)
    items[2] = replace(items[2], payload={"value": "nope"})
    items[4] = items[0]  # the same event twice in one batch is stored once
    results = events_record(grader=grader, items=items)
    assert [type(r).__name__ for r in results] == [
        "EventOutcome",
        "EventOutcome",
        "InvalidValue",
        "EventOutcome",
        "EventOutcome",
        "EventOutcome",
    ]
    assert results[4].replayed
    assert GradingEvent.objects.count() == 4
    assert Judgment.objects.filter(grader=grader, broad="VS").count() == 4


def test_a_batch_of_twenty_costs_a_handful_of_queries(django_assert_max_num_queries):
    from grading.services.events import events_record

    campaign = make_campaign(n_queries=2, n_candidates=10)
    grader = campaign.roles.first().user
    items = batch_of(grader, campaign, 20)
    with django_assert_max_num_queries(10):
        results = events_record(grader=grader, items=items)
    assert len(results) == 20
    assert all(not isinstance(r, Exception) for r in results)
    assert GradingEvent.objects.count() == 20


def test_a_comment_about_a_unit_is_kept_on_the_judgment():
    campaign = make_campaign()
    grader = campaign.roles.first().user
    unit = first_unit_of(grader, campaign)
    record(grader, campaign, "comment", {"text": "the clip is clipped"}, unit=unit)
    assert Judgment.objects.get(grader=grader, unit=unit).comment == "the clip is clipped"


@pytest.mark.both_backends
def test_a_batch_that_changes_several_existing_judgments_writes_every_field():
    from dataclasses import replace

    from grading.services.events import events_record

    campaign = make_campaign(n_queries=1, n_candidates=4)
    grader = campaign.roles.first().user
    first = batch_of(grader, campaign, 4)
    events_record(grader=grader, items=first)
    fines = [
        replace(item, id=uuid4(), type="fine_set", payload={"value": 2.5 + i}, seq=10 + i)
        for i, item in enumerate(first)
    ]
    events_record(grader=grader, items=fines)
    judgments = Judgment.objects.filter(grader=grader).order_by("fine")
    assert [(j.broad, j.fine) for j in judgments] == [("VS", Decimal(f"{2.5 + i:.1f}")) for i in range(4)]
    assert all(set(j.applied) == {"broad", "fine"} and j.last_event.type == "fine_set" for j in judgments)
    assert Assignment.objects.filter(grader=grader, status=AssignmentStatus.DONE).count() == 4


def test_an_event_summary_writes_each_events_own_server_time():
    first = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    equal_elsewhere = first.astimezone(timezone(timedelta(hours=2)))  # equal, but written otherwise
    for moment in (first, first, equal_elsewhere, first, first + timedelta(microseconds=1)):
        assert events_service._isoformat(moment) == moment.isoformat()
