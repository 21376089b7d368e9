"""404 for whatever a user may not know exists, on every endpoint; 401 for bad tokens."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from analysis.models import AnalysisRun
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(graders=1, n_queries=1, n_candidates=2, organizer=make_user())


def urls(campaign):
    run = AnalysisRun.objects.create(campaign=campaign, parameters={}, seed=1)
    unit = campaign.units.first()
    return {
        "get": [
            f"/reports/campaigns/{campaign.pk}/",
            f"/reports/campaigns/{campaign.pk}/tables/graders.csv",
            f"/reports/campaigns/{campaign.pk}/units/{unit.pk}/",
            f"/api/campaigns/{campaign.pk}/analyses/",
            f"/api/analyses/{run.pk}/",
            f"/api/campaigns/{campaign.pk}/ground-truth/?format=csv",
            f"/api/campaigns/{campaign.pk}/events/",
            f"/api/campaigns/{campaign.pk}/",
            f"/api/campaigns/{campaign.pk}/progress/",
            f"/api/assignments/?campaign={campaign.pk}",
        ],
        "post": [
            f"/reports/campaigns/{campaign.pk}/run/",
            f"/api/campaigns/{campaign.pk}/analyses/",
            f"/api/campaigns/{campaign.pk}/members/",
        ],
    }


def test_a_stranger_gets_404_everywhere_exactly_as_for_a_campaign_that_does_not_exist(client, campaign):
    stranger = make_user()
    make_campaign(graders=1, organizer=stranger)  # an organizer, but of another campaign
    client.force_login(stranger)
    found = urls(campaign)
    assert len(found["get"]) == 10 and len(found["post"]) == 3
    for url in found["get"]:
        assert client.get(url).status_code == 404, url
    for url in found["post"]:
        assert client.post(url, {}, content_type="application/json").status_code == 404, url


def test_a_grader_of_the_campaign_knows_it_exists_and_gets_403_on_reports(client, campaign):
    client.force_login(campaign.roles.get(role="grader").user)
    assert client.get(f"/reports/campaigns/{campaign.pk}/").status_code == 403
    assert client.get(f"/api/campaigns/{campaign.pk}/ground-truth/").status_code == 403


@pytest.mark.parametrize("header", ["Token not-a-real-token", "Token " + "0" * 40, "Token", "Token a b"])
def test_a_bad_token_is_a_401_with_www_authenticate(campaign, header):
    response = APIClient().get("/api/campaigns/", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_a_token_of_a_deactivated_user_is_a_401(campaign):
    user = make_user()
    token = Token.objects.create(user=user)
    user.is_active = False
    user.save()
    response = APIClient().get("/api/campaigns/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"


def test_no_credentials_at_all_is_a_401_too_and_a_good_token_works(campaign):
    assert APIClient().get("/api/campaigns/").status_code == 401
    user = campaign.roles.get(role="grader").user
    token = Token.objects.create(user=user)
    assert APIClient().get("/api/campaigns/", HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
