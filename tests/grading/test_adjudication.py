"""Adjudication: an organizer's value with a note, an event of its own, kept out of the judgments."""

import pytest

from grading.errors import InvalidValue, NotAllowed
from grading.models import Adjudication, GradingEvent, Judgment
from grading.models.choices import EventType
from grading.services.adjudication import adjudication_record
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    organizer = make_user()
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=2, organizer=organizer)
    return campaign, organizer, campaign.units.order_by("pk").first()


def test_an_organizer_records_a_value_with_a_note_as_its_own_event(setup):
    campaign, organizer, unit = setup
    adjudication_record(organizer=organizer, unit=unit, value="VS", note="clearly the same melody")
    adjudication_record(organizer=organizer, unit=unit, value="SS", note="on second listening")
    row = Adjudication.objects.get(unit=unit)
    assert (row.value, row.note, row.organizer) == ("SS", "on second listening", organizer)
    events = GradingEvent.objects.filter(unit=unit, type=EventType.ADJUDICATED).order_by("server_ts")
    assert [e.payload["value"] for e in events] == ["VS", "SS"] and events[0].grader == organizer
    assert not Judgment.objects.filter(grader=organizer).exists()


def test_graders_cannot_adjudicate_nor_post_adjudicated_events(setup):
    campaign, _, unit = setup
    grader = graders_of(campaign)[0]
    with pytest.raises(NotAllowed, match="only organizers"):
        adjudication_record(organizer=grader, unit=unit, value="VS")
    with pytest.raises(InvalidValue, match="recorded by the campaign's organizers"):
        record(grader, campaign, "adjudicated", {"value": "VS"}, unit=unit)
    assert not Adjudication.objects.exists()


def test_a_bad_value_is_named_and_nothing_is_stored(setup):
    _, organizer, unit = setup
    with pytest.raises(InvalidValue, match="value must be one of NS, SS, VS, got 'XX'"):
        adjudication_record(organizer=organizer, unit=unit, value="XX")
    assert not Adjudication.objects.exists() and not GradingEvent.objects.filter(type="adjudicated").exists()


def test_the_page_lists_disagreeing_units_and_records_a_value(client, setup):
    campaign, organizer, unit = setup
    a, b = graders_of(campaign)
    for grader, broad in ((a, "VS"), (b, "NS")):
        record(grader, campaign, "broad_set", {"value": broad}, unit=unit)
        record(grader, campaign, "fine_set", {"value": 5.0}, unit=unit)
    client.force_login(organizer)
    url = f"/campaigns/{campaign.pk}/adjudicate/"
    page = client.get(url + "?sort=uncertainty")
    assert page.status_code == 200 and f"Unit {unit.external_id}" in page.content.decode()
    bad = client.post(url, {"unit": unit.pk, "value": "XX", "note": ""})
    assert bad.status_code == 400 and "value must be one of" in bad.content.decode()
    done = client.post(url, {"unit": unit.pk, "value": "SS", "note": "both half right"})
    assert done.status_code == 302 and Adjudication.objects.get(unit=unit).value == "SS"
    client.force_login(a)
    assert client.get(url).status_code == 403
