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
    with pytest.raises(InvalidValue, match="payload.value"):
        adjudication_record(organizer=organizer, unit=unit, value="XX")
    assert not Adjudication.objects.exists() and not GradingEvent.objects.filter(type="adjudicated").exists()
