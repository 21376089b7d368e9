"""Grader pages rendered on the server: login, home, continue, every scheme's page, guidelines."""

import re

import pytest
from django.test import Client

from grading.models import Assignment, GradingEvent
from grading.models.choices import CampaignStatus, Scheme
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_home_page_needs_a_login_and_the_login_page_works():
    user = make_user("ann")
    response = Client().get("/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    page = Client().get("/accounts/login/")
    assert page.status_code == 200 and b'name="username"' in page.content
    client = Client()
    done = client.post("/accounts/login/", {"username": "ann", "password": "pw-for-tests-123"})
    assert done.status_code == 302 and client.get("/").status_code == 200
    assert user.username in client.get("/").content.decode()


def test_home_lists_my_campaigns_with_progress_and_a_continue_link():
    campaign = make_campaign(n_queries=1, n_candidates=3)
    grader = graders_of(campaign)[0]
    record(grader, campaign, "skip", {}, unit=my_units(grader, campaign)[0])
    html = logged_in(grader).get("/").content.decode()
    assert campaign.name in html and "<strong>1</strong> of 3 done" in html
    assert f"/campaigns/{campaign.pk}/continue/" in html and "Continue where I left off" in html


def test_continue_goes_to_the_first_page_with_open_work():
    campaign = make_campaign(n_queries=3, n_candidates=2, graders=1)
    grader = graders_of(campaign)[0]
    for unit in my_units(grader, campaign)[:2]:  # the whole first page
        record(grader, campaign, "skip", {}, unit=unit)
    response = logged_in(grader).get(f"/campaigns/{campaign.pk}/continue/")
    assert response.status_code == 302 and response["Location"] == f"/campaigns/{campaign.pk}/grade/2/"


def test_the_broad_fine_page_shows_my_candidates_in_my_order_and_my_values():
    campaign = make_campaign(n_queries=1, n_candidates=4)
    grader = graders_of(campaign)[0]
    units = my_units(grader, campaign)
    record(grader, campaign, "broad_set", {"value": "SS"}, unit=units[1])
    record(grader, campaign, "fine_set", {"value": 6.4}, unit=units[1])
    html = logged_in(grader).get(f"/campaigns/{campaign.pk}/grade/1/").content.decode()
    assert [int(u) for u in re.findall(r'class="card"[^>]*data-unit="(\d+)"', html)] == [u.pk for u in units]
    assert 'data-broad="SS" data-fine="6.4"' in html
    for secret in ["system-a", "c0-0", "u0-0"]:
        assert secret not in html
    assert 'id="grading-config"' in html and "fine_bands" in html


@pytest.mark.parametrize(
    "scheme,marker",
    [
        (Scheme.NUMERIC, "score-range"),
        (Scheme.CATEGORICAL, 'data-value="good"'),
        (Scheme.PAIRWISE, 'data-value="equal"'),
        (Scheme.ORDERING, "order-item"),
    ],
)
def test_each_scheme_has_its_page(scheme, marker):
    campaign = make_campaign(scheme=scheme, n_queries=1, n_candidates=3)
    grader = graders_of(campaign)[0]
    response = logged_in(grader).get(f"/campaigns/{campaign.pk}/continue/", follow=True)
    assert response.status_code == 200 and marker in response.content.decode()


def test_pages_of_other_campaigns_and_missing_pages_are_404():
    campaign, other = make_campaign(), make_campaign()
    grader = graders_of(campaign)[0]
    client = logged_in(grader)
    assert client.get(f"/campaigns/{other.pk}/grade/1/").status_code == 404
    assert client.get(f"/campaigns/{other.pk}/continue/").status_code == 404
    assert client.get(f"/campaigns/{campaign.pk}/grade/99/").status_code == 404
    assert client.get(f"/campaigns/{campaign.pk}/grade/0/").status_code == 404


def test_a_closed_campaign_page_is_read_only():
    campaign = make_campaign(status=CampaignStatus.CLOSED)
    grader = graders_of(campaign)[0]
    html = logged_in(grader).get(f"/campaigns/{campaign.pk}/grade/1/").content.decode()
    assert "takes no judgments" in html and '"readonly": true' in html


def test_leaving_the_guidelines_page_by_its_button_records_that_they_were_read():
    campaign = make_campaign()
    grader = graders_of(campaign)[0]
    client = logged_in(grader)
    response = client.get(f"/campaigns/{campaign.pk}/guidelines/")
    assert response.status_code == 200 and "Judge how similar" in response.content.decode()
    assert not GradingEvent.objects.exists()  # looking changes nothing
    response = client.post(f"/campaigns/{campaign.pk}/guidelines/")
    assert response["Location"] == f"/campaigns/{campaign.pk}/continue/"
    event = GradingEvent.objects.get()
    assert (event.type, event.payload["via"], event.grader) == ("guidelines_viewed", "page", grader)


def test_the_guidelines_of_a_closed_campaign_lead_back_without_an_event():
    campaign = make_campaign(status=CampaignStatus.CLOSED)
    response = logged_in(graders_of(campaign)[0]).post(f"/campaigns/{campaign.pk}/guidelines/")
    assert response.status_code == 302 and not GradingEvent.objects.exists()


def test_a_grader_with_nothing_assigned_is_told_so():
    campaign = make_campaign(assign=False)
    grader = graders_of(campaign)[0]
    assert not Assignment.objects.exists()
    assert "Nothing is assigned" in logged_in(grader).get(f"/campaigns/{campaign.pk}/continue/").content.decode()


def test_organizers_see_their_campaigns_progress_on_home():
    boss = make_user()
    campaign = make_campaign(organizer=boss)
    assert campaign.name in logged_in(boss).get("/").content.decode()
