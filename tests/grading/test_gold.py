"""Gold units: an organizer sets a unit's answer; graders are served it like any other unit."""

import pytest

from grading.errors import InvalidValue, NotAllowed, NotFound
from grading.models import GoldAnswer, GradingEvent, Judgment
from grading.models.choices import CampaignStatus, EventType, Scheme
from grading.services.gold import gold_remove, gold_set
from grading.services.organizer import campaign_update
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def organizer():
    return make_user()


def test_an_organizer_sets_changes_and_removes_a_gold_answer(organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-1", value="VS")
    gold_set(organizer=organizer, campaign=campaign, unit_external_id=" u0-1 ", value="SS")
    row = GoldAnswer.objects.get()
    assert (row.unit.external_id, row.value, row.campaign, row.organizer) == ("u0-1", "SS", campaign, organizer)
    gold_remove(organizer=organizer, campaign=campaign, unit_external_id="u0-1")
    assert not GoldAnswer.objects.exists()


def test_a_numeric_gold_answer_is_checked_against_the_scale(organizer):
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=1, n_candidates=2, organizer=organizer)
    gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-0", value="7")
    assert GoldAnswer.objects.get().value == "7.0"
    with pytest.raises(InvalidValue, match="value must be a number, got 'seven'"):
        gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-1", value="seven")
    with pytest.raises(InvalidValue, match="value"):
        gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-1", value="11")
    assert GoldAnswer.objects.count() == 1


def test_bad_input_names_what_was_wrong_and_stores_nothing(organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    with pytest.raises(NotFound, match="no unit with id 'nope'"):
        gold_set(organizer=organizer, campaign=campaign, unit_external_id="nope", value="VS")
    with pytest.raises(InvalidValue, match="value must be one of NS, SS, VS, got 'XX'"):
        gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-0", value="XX")
    with pytest.raises(NotAllowed, match="only organizers"):
        gold_set(organizer=graders_of(campaign)[0], campaign=campaign, unit_external_id="u0-0", value="VS")
    with pytest.raises(NotAllowed, match="only organizers"):
        gold_remove(organizer=graders_of(campaign)[0], campaign=campaign, unit_external_id="u0-0")
    assert not GoldAnswer.objects.exists() and not GradingEvent.objects.exists()


def test_setting_and_removing_a_gold_answer_each_appends_an_event_by_the_organizer(organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-1", value="VS")
    gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-1", value="SS")
    gold_remove(organizer=organizer, campaign=campaign, unit_external_id="u0-1")
    events = list(GradingEvent.objects.filter(campaign=campaign).order_by("server_ts", "seq"))
    assert [(e.type, e.payload) for e in events] == [
        (EventType.GOLD_SET, {"value": "VS"}),
        (EventType.GOLD_SET, {"value": "SS"}),
        (EventType.GOLD_REMOVED, {"previous": "SS"}),
    ]
    unit = campaign.units.get(external_id="u0-1")
    for event in events:
        assert (event.grader, event.unit, event.query_id) == (organizer, unit, unit.query_id)
        assert event.guidelines_version == campaign.guidelines_version
    assert not Judgment.objects.filter(grader=organizer).exists()  # an organizer's answer is no judgment


def test_removing_a_unit_that_is_not_gold_changes_and_logs_nothing(organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    gold_remove(organizer=organizer, campaign=campaign, unit_external_id="u0-0")
    assert not GradingEvent.objects.exists()


def test_a_refused_gold_answer_appends_no_event(organizer):
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=1, n_candidates=2, organizer=organizer)
    with pytest.raises(InvalidValue, match="value"):
        gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-0", value="11")
    with pytest.raises(NotFound, match="no unit with id 'nope'"):
        gold_remove(organizer=organizer, campaign=campaign, unit_external_id="nope")
    assert not GradingEvent.objects.exists()


@pytest.mark.parametrize("kind", ["gold_set", "gold_removed"])
def test_graders_cannot_send_gold_events(organizer, kind):
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    grader = graders_of(campaign)[0]
    with pytest.raises(InvalidValue, match=f"{kind} events are recorded by the campaign's organizers"):
        record(grader, campaign, kind, {"value": "VS"}, unit=campaign.units.first())
    assert not GradingEvent.objects.exists() and not GoldAnswer.objects.exists()


def test_gold_units_set_up_in_a_draft_leave_its_scale_open_to_change(organizer):
    campaign = make_campaign(
        scheme=Scheme.NUMERIC, n_queries=1, n_candidates=2, organizer=organizer, status=CampaignStatus.DRAFT
    )
    gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-0", value="7")
    campaign = campaign_update(campaign=campaign, actor=None, scheme_params={"min": 0, "max": 20, "step": 1})
    assert campaign.scheme_params["max"] == 20


def test_the_organizer_page_sets_and_lists_gold_units_and_graders_cannot_reach_it(client, organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    client.force_login(organizer)
    url = f"/organize/campaigns/{campaign.pk}/gold/"
    assert f'href="{url}"' in client.get(f"/organize/campaigns/{campaign.pk}/").content.decode()
    bad = client.post(url, {"unit": "u0-0", "value": "XX"})
    assert bad.status_code == 400 and "value must be one of NS, SS, VS" in bad.content.decode()
    assert client.post(url, {"unit": "u0-0", "value": "VS"}).status_code == 302
    page = client.get(url).content.decode()
    assert "u0-0" in page and "Make ordinary" in page
    assert client.post(url, {"unit": "u0-0", "action": "remove"}).status_code == 302
    assert not GoldAnswer.objects.exists()
    client.force_login(graders_of(campaign)[0])
    assert client.get(url).status_code == 403
