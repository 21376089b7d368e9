"""The audit trail reads: the campaign's Activity tab and GET /api/campaigns/{id}/activity/, newest
first, a page at a time, in words, for the campaign's organizers and the admins alone."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from grading.activity import sentence, words
from grading.models import AuditEntry, Campaign
from grading.models.choices import CampaignStatus
from tests.factories import make_campaign, make_user, settings_form_data
from tests.grading.api_helpers import client_for, graders_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def organizer():
    return make_user("olga")


@pytest.fixture
def campaign(organizer) -> Campaign:
    return make_campaign(n_queries=1, n_candidates=3, graders=2, organizer=organizer, status=CampaignStatus.DRAFT)


@pytest.fixture
def page(client, organizer):
    client.force_login(organizer)
    return client


def test_the_activity_tab_reads_newest_first_in_words_a_page_at_a_time(page, campaign, organizer):
    for to in ("open", "closed"):
        page.post(f"/organize/campaigns/{campaign.pk}/status/{to}/")
    html = page.get(f"/organize/campaigns/{campaign.pk}/activity/").content.decode()
    newest, older = (
        html.index("changed the status from Open to Closed"),
        html.index("changed the status from Draft to Open"),
    )
    assert newest < older and "<strong>olga</strong>" in html
    assert "Status:</span>\n          Open" in html and "changed to</span> Closed" in html
    for i in range(60):
        page.post(f"/organize/campaigns/{campaign.pk}/", settings_form_data(campaign, name=f"Name {i}"))
    first = page.get(f"/organize/campaigns/{campaign.pk}/activity/").content.decode()
    second = page.get(f"/organize/campaigns/{campaign.pk}/activity/?page=2").content.decode()
    assert "Page 1 of 2" in first and "changed to</span> Name 10</li>" in first  # the 50 newest: 59 down to 10
    assert "changed to</span> Name 9</li>" not in first and "changed to</span> Name 9</li>" in second
    assert "Page 2 of 2" in second and "changed the status from Draft to Open" in second


def test_the_activity_tab_is_the_organizers_alone(client, campaign):
    url = f"/organize/campaigns/{campaign.pk}/activity/"
    client.force_login(graders_of(campaign)[0])
    assert client.get(url).status_code == 403
    client.force_login(make_user())
    assert client.get(url).status_code == 404


def test_the_activity_api_lists_entries_newest_first_for_organizers_and_admins(campaign, organizer):
    client_for(organizer).patch(f"/api/campaigns/{campaign.pk}/", {"status": "open"}, format="json")
    client_for(organizer).patch(f"/api/campaigns/{campaign.pk}/", {"name": "Renamed"}, format="json")
    url = f"/api/campaigns/{campaign.pk}/activity/"
    body = client_for(organizer).get(url + "?limit=1").json()
    assert body["count"] == 2 and body["next"] and len(body["results"]) == 1
    newest = body["results"][0]
    assert (newest["actor"], newest["action"], newest["after"]) == ("olga", "campaign.settings", {"name": "Renamed"})
    assert newest["summary"] == "olga changed the settings"
    assert newest["changes"] == [{"field": "name", "label": "name", "before": campaign.name, "after": "Renamed"}]
    assert client_for(make_user("root", is_staff=True)).get(url).json()["count"] == 2
    assert client_for(graders_of(campaign)[0]).get(url).status_code == 403
    assert client_for(make_user()).get(url).status_code == 404
    assert APIClient().get(url).status_code in (401, 403)
    assert client_for(organizer).get(url + "?limit=abc").json()["field"] == "limit"


def test_an_action_added_later_still_reads_and_values_read_in_words():
    entry = AuditEntry(actor_name="ann", action="pay_rate.changed", target="link 3", after={"expires": None})
    assert sentence(entry) == "pay rate: changed link 3"
    assert words("budget", None) == "no limit" and words("policy", "consensus") == "Until consensus"
    assert words("emailed", False) == "no" and words("policy_params", {"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
