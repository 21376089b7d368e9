"""Adjudication: an organizer's value with a note, an event of its own, kept out of the judgments."""

import pytest

from grading.errors import InvalidValue, NotAllowed
from grading.models import Adjudication, CampaignAllocation, GradingEvent, Judgment
from grading.models.choices import EventType, Scheme
from grading.selectors_adjudication import units_in_dispute
from grading.services.adjudication import adjudication_record
from grading.services.allocation_state import allocation_state_ensure
from grading.services.lifecycle import campaign_settings_update
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
    assert client.get(url).status_code == 404


def test_the_disputed_units_are_the_same_read_from_the_state_or_from_the_judgments():
    organizer = make_user()
    campaign = make_campaign(
        scheme=Scheme.NUMERIC,
        n_queries=0,
        n_candidates=6,
        graders=3,
        organizer=organizer,
        scheme_params={"min": 0, "max": 10, "step": 1},
    )
    graders = graders_of(campaign)
    for i, unit in enumerate(campaign.units.order_by("pk")):
        for g, grader in enumerate(graders):
            record(grader, campaign, "score_set", {"value": 5 + (g - 1) * (i % 3)}, unit=unit)  # ranges 0, 2, 4
    allocation_state_ensure(campaign=campaign)
    from_state = units_in_dispute(campaign=campaign, sort="confusability")
    assert [(r["unit_id"], r["spread"]) for r in from_state] == [
        (u.pk, 4.0) for u in campaign.units.order_by("pk")[2::3]
    ] + [(u.pk, 2.0) for u in campaign.units.order_by("pk")[1::3]]
    campaign = campaign_settings_update(
        campaign=campaign, actor=None, policy_params={"threshold": 3}
    )  # the state is now stale
    stale = CampaignAllocation.objects.get(campaign=campaign).settings_key
    from_judgments = units_in_dispute(campaign=campaign, sort="confusability")
    assert [r["spread"] for r in from_judgments] == [4.0, 4.0]  # the new threshold leaves the ranges of 2 out
    assert from_judgments == [r for r in from_state if r["spread"] > 3]
    assert CampaignAllocation.objects.get(campaign=campaign).settings_key == stale  # reading rebuilt nothing
    allocation_state_ensure(campaign=campaign)
    assert units_in_dispute(campaign=campaign, sort="confusability") == from_judgments


@pytest.mark.parametrize("who", ["grader", "stranger", "organizer elsewhere"])
def test_whoever_does_not_organize_the_campaign_gets_the_404_of_a_missing_one(client, setup, who):
    campaign, _, _ = setup
    user = graders_of(campaign)[0] if who == "grader" else make_user()
    if who == "organizer elsewhere":
        make_campaign(graders=1, organizer=user)
    client.force_login(user)
    missing = 10**6
    for method in ("get", "post"):
        existing = getattr(client, method)(f"/campaigns/{campaign.pk}/adjudicate/")
        absent = getattr(client, method)(f"/campaigns/{missing}/adjudicate/")
        assert existing.status_code == absent.status_code == 404, method


@pytest.mark.parametrize("campaign_id", ["0", "99999999999999999999"])
@pytest.mark.parametrize(
    "path", ["/campaigns/{}/adjudicate/", "/organize/campaigns/{}/", "/organize/campaigns/{}/gold/"]
)
def test_an_id_no_campaign_can_have_is_a_404_not_a_server_error(client, setup, path, campaign_id):
    _, organizer, _ = setup
    client.force_login(organizer)
    assert client.get(path.format(campaign_id)).status_code == 404


@pytest.mark.parametrize("unit", ["", "abc", "-1", "999999"])
def test_a_verdict_for_a_unit_not_in_the_campaign_is_a_404_and_stores_nothing(client, setup, unit):
    campaign, organizer, _ = setup
    other = make_campaign(n_queries=1, n_candidates=1, graders=1).units.get()
    client.force_login(organizer)
    for value in (unit, str(other.pk)):
        response = client.post(f"/campaigns/{campaign.pk}/adjudicate/", {"unit": value, "value": "VS"})
        assert response.status_code == 404
    assert not Adjudication.objects.exists()
