"""Organizer endpoints: campaign CRUD, members, assignments, progress — and every crossing."""

import json

import pytest

from grading.models import Assignment, Campaign
from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import client_for, fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def boss():
    return make_user(is_staff=True)


def create(api, **extra):
    body = {"name": "AMS 2006", "slug": "ams-2006", "scheme": "broad_fine", "guidelines": "Listen twice.", **extra}
    return api.post("/api/campaigns/", body, format="json")


def test_staff_create_a_campaign_and_become_its_organizer(boss):
    response = create(client_for(boss))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["roles"] == ["organizer"] and body["guidelines_version"] == 1 and body["guidelines"] == "Listen twice."
    assert body["scheme_params"]["fine_bands"]["NS"] == [0.0, 4.0]


@pytest.mark.parametrize(
    "extra,field",
    [
        ({"scheme": "stars"}, "scheme"),
        ({"slug": "not a slug"}, "slug"),
        ({"initial_overlap": 0}, "initial_overlap"),
        ({"initial_overlap": 4, "max_overlap": 2}, "max_overlap"),
        ({"scheme": "numeric", "scheme_params": {"min": 5, "max": 1}}, "scheme_params.max"),
        ({"scheme_params": [1]}, "scheme_params"),
        ({"policy": "whim"}, "policy"),
        ({"budget": "lots"}, "budget"),
        ({"policy_params": {"threshold": float("nan")}}, "policy_params"),
    ],
)
def test_campaign_creation_names_the_bad_field(boss, extra, field):
    response = client_for(boss).post(
        "/api/campaigns/",
        json.dumps({"name": "x", "slug": "x", "scheme": "broad_fine", **extra}, allow_nan=True),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not Campaign.objects.exists()


def test_a_taken_slug_is_refused(boss):
    create(client_for(boss))
    assert create(client_for(boss)).json()["field"] == "slug"


def test_graders_cannot_create_campaigns():
    response = create(client_for(make_user()))
    assert response.status_code == 403 and not Campaign.objects.exists()


def test_organizers_add_graders_assign_and_watch_progress(boss):
    api = client_for(boss)
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=0, overlap=2, assign=False, organizer=boss)
    users = [make_user(f"grader-{i}") for i in range(2)]
    for user in users:
        response = api.post(
            f"/api/campaigns/{campaign.pk}/members/", {"username": user.username, "role": "grader"}, format="json"
        )
        assert response.status_code == 201
    assert api.post(f"/api/campaigns/{campaign.pk}/assignments/", {}, format="json").json() == {"created": 6}
    record(users[0], campaign, "skip", {}, unit=my_units(users[0], campaign)[0])
    progress = api.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert (progress["n_assigned"], progress["n_done"]) == (6, 1)
    assert {row["grader"] for row in progress["per_grader"]} == {"G01", "G02"}
    assert sorted(row["done"] for row in progress["per_unit"]) == [0, 0, 1]
    assert "grader-0" not in json.dumps(progress)


def test_organizers_assign_units_to_one_grader_by_pseudonym(boss):
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=2, overlap=1, organizer=boss)
    units = list(campaign.units.values_list("pk", flat=True))
    response = client_for(boss).post(
        f"/api/campaigns/{campaign.pk}/assignments/", {"grader": "G01", "units": units}, format="json"
    )
    assert response.status_code == 201
    assert Assignment.objects.filter(campaign=campaign, grader=graders_of(campaign)[0]).count() == 3
    bad = client_for(boss).post(
        f"/api/campaigns/{campaign.pk}/assignments/", {"grader": "G09", "units": units}, format="json"
    )
    assert bad.status_code == 404 and bad.json()["field"] == "grader"
    unknown = client_for(boss).post(
        f"/api/campaigns/{campaign.pk}/assignments/", {"grader": "G01", "units": [10**9]}, format="json"
    )
    assert unknown.status_code == 404 and unknown.json()["value"] == 10**9


def test_organizers_patch_status_and_guidelines_make_a_new_version(boss):
    campaign = make_campaign(organizer=boss)
    response = client_for(boss).patch(
        f"/api/campaigns/{campaign.pk}/", {"guidelines": "New text.", "status": "closed"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["guidelines_version"] == 2 and response.json()["status"] == "closed"


def test_scheme_params_freeze_once_grading_started():
    organizer = make_user()
    campaign = make_campaign(organizer=organizer)
    grader = graders_of(campaign)[0]
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])
    response = client_for(organizer).patch(
        f"/api/campaigns/{campaign.pk}/",
        {"scheme_params": {"fine_bands": {"NS": [0, 1], "SS": [1, 2], "VS": [2, 3]}}},
        format="json",
    )
    assert response.status_code == 409 and response.json()["field"] == "scheme_params"


def test_status_changes_through_the_api_follow_the_lifecycle():
    organizer = make_user()
    campaign = make_campaign(organizer=organizer)  # open
    back_to_draft = client_for(organizer).patch(f"/api/campaigns/{campaign.pk}/", {"status": "draft"}, format="json")
    assert (
        back_to_draft.status_code == 409
        and back_to_draft.json()["code"] == "step_not_allowed"
        and back_to_draft.json()["field"] == "status"
    )
    assert "cannot become draft" in back_to_draft.json()["detail"]
    campaign.refresh_from_db()
    assert campaign.status == "open"


def test_a_graded_campaign_cannot_be_deleted_but_an_empty_one_can():
    organizer = make_user()
    campaign = make_campaign(organizer=organizer)
    grader = graders_of(campaign)[0]
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])
    assert client_for(organizer).delete(f"/api/campaigns/{campaign.pk}/").status_code == 409
    empty = make_campaign(organizer=organizer, scheme=Scheme.NUMERIC)
    assert client_for(organizer).delete(f"/api/campaigns/{empty.pk}/").status_code == 204
    assert Campaign.objects.filter(pk=campaign.pk).exists() and not Campaign.objects.filter(pk=empty.pk).exists()


@pytest.mark.parametrize(
    "method,suffix,body",
    [
        ("get", "progress/", None),
        ("patch", "", {"name": "mine now"}),
        ("delete", "", None),
        ("post", "members/", {"username": "x", "role": "grader"}),
        ("post", "assignments/", {}),
    ],
)
def test_graders_get_403_and_strangers_404_on_organizer_endpoints(method, suffix, body):
    campaign = make_campaign()
    grader = graders_of(campaign)[0]
    other_organizer = make_user()
    make_campaign(organizer=other_organizer)
    url = f"/api/campaigns/{campaign.pk}/{suffix}"
    as_grader = getattr(client_for(grader), method)(url, body, format="json")
    as_stranger = getattr(client_for(other_organizer), method)(url, body, format="json")
    assert (as_grader.status_code, as_stranger.status_code) == (403, 404)
    campaign.refresh_from_db()
    assert campaign.name.startswith("Campaign") and Assignment.objects.filter(campaign=campaign).count() == 12


def test_a_member_reads_the_campaign_a_stranger_does_not():
    campaign = make_campaign()
    assert client_for(graders_of(campaign)[0]).get(f"/api/campaigns/{campaign.pk}/").status_code == 200
    assert client_for(make_user()).get(f"/api/campaigns/{campaign.pk}/").status_code == 404
