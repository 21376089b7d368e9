"""policy_params: one check for every way in (services, API, admin, campaign files), and readers that
fall back to the default for a value stored before the check existed."""

import math

import pytest

from grading.errors import InvalidValue
from grading.models import Campaign
from grading.services.campaigns import campaign_create
from grading.services.more_work import batch_size
from grading.services.organizer import campaign_update
from grading.services.policy_params import RULES, policy_param, policy_params_clean, policy_params_problems
from grading.services.repeats import repeat_share
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for, fast_passwords  # noqa: F401

BAD = [
    ("repeat_share", 0.9, "must be a number from 0 to 0.5"),
    ("repeat_share", -0.1, "must be a number from 0 to 0.5"),
    ("repeat_share", "0.1", "must be a number from 0 to 0.5"),
    ("repeat_share", True, "must be a number from 0 to 0.5"),
    ("repeat_share", None, "must be a number from 0 to 0.5"),
    ("repeat_share", float("nan"), "must be a number from 0 to 0.5"),
    ("batch_size", 0, "must be a whole number of at least 1"),
    ("batch_size", 2.5, "must be a whole number of at least 1"),
    ("batch_size", "3", "must be a whole number of at least 1"),
    ("threshold", "abc", "must be a number of at least 0"),
    ("threshold", -1, "must be a number of at least 0"),
    ("min_entropy", float("inf"), "must be a number of at least 0"),
    ("tolerance", 1.5, "must be a number from 0 to 1"),
    ("expected_rate", "high", "must be a number from 0 to 1"),
    ("ac_threshold", 2, "must be a number from -1 to 1"),
    ("ac_threshold", [0.5], "must be a number from -1 to 1"),
]


def _json_scalar(value) -> bool:
    """A value the API can receive and show back as it is: JSON has no NaN or infinity (the API
    refuses them as it reads the body), and an error shows a list as text."""
    return isinstance(value, str | bool | None) or (isinstance(value, int | float) and math.isfinite(value))


def test_usable_values_pass_and_unknown_keys_are_kept():
    params = {
        "repeat_share": 0.05,
        "batch_size": 3,
        "threshold": 1,
        "min_entropy": 0.4,
        "tolerance": 0.2,
        "expected_rate": 0,
        "ac_threshold": -0.5,
        "exclude_gold_below": 0.6,
        "exclude_reliability_below": 1,
        "exclude_min_judgments": 5,
        "note": "pilot",
    }
    assert len(params) == len(RULES) + 1
    assert policy_params_clean(params=params) == params
    assert policy_params_clean(params=None) == {} and policy_params_problems(params={}) == []
    assert policy_params_clean(params={"batch_size": 10**400}) == {"batch_size": 10**400}


@pytest.mark.parametrize(("name", "value", "problem"), BAD)
def test_it_rejects_a_bad_value_naming_the_parameter_and_the_value(name, value, problem):
    with pytest.raises(InvalidValue) as caught:
        policy_params_clean(params={"note": "kept", name: value})
    assert caught.value.field == f"policy_params.{name}" and caught.value.value is value
    assert caught.value.message.startswith(f"policy_params.{name} {problem}, got ")


def test_it_rejects_parameters_that_are_not_an_object_and_a_huge_whole_number_out_of_range():
    with pytest.raises(InvalidValue, match="must be a JSON object") as caught:
        policy_params_clean(params=[1])
    assert caught.value.field == "policy_params"
    with pytest.raises(InvalidValue, match="policy_params.repeat_share must be a number from 0 to 0.5"):
        policy_params_clean(params={"repeat_share": 10**400})


@pytest.mark.django_db
def test_the_services_store_nothing_when_a_parameter_is_bad():
    with pytest.raises(InvalidValue, match="policy_params.repeat_share"):
        campaign_create(name="x", slug="x", scheme="broad_fine", policy_params={"repeat_share": 0.9})
    assert not Campaign.objects.exists()
    campaign = make_campaign(n_queries=1, n_candidates=2)
    campaign_update(campaign=campaign, actor=None, policy_params={"repeat_share": 0.1})
    with pytest.raises(InvalidValue, match="policy_params.batch_size"):
        campaign_update(campaign=campaign, actor=None, name="renamed", policy_params={"batch_size": 0})
    campaign.refresh_from_db()
    assert (campaign.name, campaign.policy_params) != ("renamed", {"batch_size": 0})
    assert campaign.policy_params == {"repeat_share": 0.1}


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "value", "problem"), [b for b in BAD if _json_scalar(b[1])])
def test_the_api_answers_400_naming_the_parameter_and_stores_nothing(name, value, problem):
    organizer = make_user(is_staff=True)
    campaign = make_campaign(n_queries=1, n_candidates=2, organizer=organizer)
    before = (campaign.name, dict(campaign.policy_params))
    api = client_for(organizer)
    response = api.patch(
        f"/api/campaigns/{campaign.pk}/", {"name": "renamed", "policy_params": {name: value}}, format="json"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["field"], body["value"]) == (f"policy_params.{name}", value) and problem in body["detail"]
    campaign.refresh_from_db()
    assert (campaign.name, campaign.policy_params) == before
    created = api.post(
        "/api/campaigns/",
        {"name": "y", "slug": "y", "scheme": "broad_fine", "policy_params": {name: value}},
        format="json",
    )
    assert created.status_code == 400 and created.json()["field"] == f"policy_params.{name}"
    assert not Campaign.objects.filter(slug="y").exists()


@pytest.mark.django_db
def test_the_admin_shows_the_problem_next_to_the_field_and_stores_nothing(client):
    admin = make_user("boss", is_staff=True, is_superuser=True)
    client.force_login(admin)
    campaign = make_campaign(n_queries=1, n_candidates=2)
    data = {
        "name": campaign.name,
        "slug": campaign.slug,
        "description": "",
        "scheme": campaign.scheme,
        "scheme_params": '{"fine_bands": {"NS": [0, 4], "SS": [3, 8], "VS": [6, 10]}}',
        "status": campaign.status,
        "initial_overlap": campaign.initial_overlap,
        "max_overlap": campaign.max_overlap,
        "budget": "",
        "policy": campaign.policy,
        "policy_params": '{"repeat_share": 0.9}',
        "created_by": "",
        "new_guidelines": "",
        "guidelines-TOTAL_FORMS": 0,
        "guidelines-INITIAL_FORMS": 1,
        "roles-TOTAL_FORMS": 0,
        "roles-INITIAL_FORMS": 0,
    }
    response = client.post(f"/admin/grading/campaign/{campaign.pk}/change/", data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["policy_params"] and "policy_params.repeat_share must be" in errors["policy_params"][0]
    campaign.refresh_from_db()
    assert campaign.policy_params == {}
    added = client.post("/admin/grading/campaign/add/", {**data, "slug": "new-one", "guidelines-INITIAL_FORMS": 0})
    assert added.status_code == 200 and "policy_params" in added.context["adminform"].form.errors
    assert not Campaign.objects.filter(slug="new-one").exists()


@pytest.mark.django_db
def test_a_bad_value_stored_before_the_check_is_read_as_the_default():
    campaign = make_campaign(n_queries=1, n_candidates=2)
    Campaign.objects.filter(pk=campaign.pk).update(policy_params={"repeat_share": "lots", "batch_size": 0})
    campaign.refresh_from_db()
    assert repeat_share(campaign) == 0.0 and batch_size(campaign) == 10
    assert policy_param(campaign=campaign, name="threshold", default=0) == 0
    Campaign.objects.filter(pk=campaign.pk).update(policy_params=[1])
    campaign.refresh_from_db()
    assert policy_param(campaign=campaign, name="batch_size", default=10) == 10
