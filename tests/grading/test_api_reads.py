"""The grader's reads: token, campaigns, assignments, next, judgments — and what they never show."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from grading.models import Assignment, GradingEvent
from grading.models.choices import CampaignStatus, Policy, Role, Scheme
from grading.services.allocation_state import allocation_state_ensure
from grading.services.campaigns import role_grant
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import client_for, fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_token_is_issued_for_good_credentials_and_works_for_scripts():
    campaign = make_campaign()
    grader = graders_of(campaign)[0]
    response = APIClient().post(
        "/api/auth/token/", {"username": grader.username, "password": "pw-for-tests-123"}, format="json"
    )
    assert response.status_code == 200
    client = APIClient(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert client.get("/api/campaigns/").json()["results"][0]["id"] == campaign.pk


@pytest.mark.parametrize(
    "body,field",
    [
        ({"username": "nobody", "password": "wrong"}, "password"),
        ({"username": "x"}, "password"),
        ({}, "username"),
    ],
)
def test_a_token_is_refused_for_bad_or_missing_credentials(body, field):
    make_user("somebody")
    response = APIClient().post("/api/auth/token/", body, format="json")
    assert response.status_code == 400 and response.json()["field"] == field


def test_anonymous_callers_get_nothing():
    for url in [
        "/api/campaigns/",
        "/api/assignments/?campaign=1",
        "/api/judgments/?campaign=1",
    ]:
        assert APIClient().get(url).status_code in (401, 403)
    assert APIClient().post("/api/assignments/next/", {"campaign": 1}, format="json").status_code in (401, 403)


def test_campaigns_lists_mine_with_my_progress():
    campaign = make_campaign(n_queries=1, n_candidates=3)
    make_campaign()  # somebody else's
    grader = graders_of(campaign)[0]
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])
    record(grader, campaign, "fine_set", {"value": 9.0}, unit=my_units(grader, campaign)[0])
    body = client_for(grader).get("/api/campaigns/").json()
    assert body["count"] == 1
    mine = body["results"][0]
    assert mine["progress"] == {"assigned": 3, "done": 1}
    assert mine["roles"] == ["grader"] and mine["scheme_params"]["fine_bands"]["VS"] == [6.0, 10.0]


def test_assignments_show_my_units_in_my_order_without_provenance_or_other_graders():
    campaign = make_campaign(n_queries=2, n_candidates=3)
    a, b = graders_of(campaign)
    record(b, campaign, "broad_set", {"value": "NS"}, unit=my_units(b, campaign)[0])
    response = client_for(a).get(f"/api/assignments/?campaign={campaign.pk}")
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["position"] for r in results] == sorted(r["position"] for r in results)
    assert {r["unit"]["id"] for r in results} == {u.pk for u in my_units(a, campaign)}
    text = json.dumps(response.json())
    for secret in ["system-a", "external_id", b.username, '"c0-', '"u0-', "rank", "NS"]:
        assert secret not in text
    assert results[0]["unit"]["candidate"]["id"] == my_units(a, campaign)[0].candidate.public_id
    assert results[0]["judgment"] is None


def test_assignments_carry_my_current_judgment():
    campaign = make_campaign()
    grader = graders_of(campaign)[0]
    unit = my_units(grader, campaign)[0]
    record(grader, campaign, "fine_set", {"value": 4.4}, unit=unit)
    results = client_for(grader).get(f"/api/assignments/?campaign={campaign.pk}").json()["results"]
    judged = [r for r in results if r["unit"]["id"] == unit.pk][0]
    assert judged["judgment"]["fine"] == 4.4 and judged["status"] == "open"


@pytest.mark.parametrize(
    "query,status,field",
    [
        ("", 400, "campaign"),
        ("?campaign=abc", 400, "campaign"),
        ("?campaign=-3", 400, "campaign"),
        ("?campaign=99999999999999999999999", 400, "campaign"),
        ("?campaign=424242", 404, "campaign"),
    ],
)
@pytest.mark.parametrize("url", ["/api/assignments/", "/api/judgments/"])
def test_reads_need_a_campaign_of_mine(url, query, status, field):
    grader = graders_of(make_campaign())[0]
    response = client_for(grader).get(url + query)
    assert response.status_code == status and response.json()["field"] == field


@pytest.mark.parametrize(
    "body,status",
    [
        ({}, 400),
        ({"campaign": "abc"}, 400),
        ({"campaign": -3}, 400),
        ({"campaign": 99999999999999999999999}, 400),
        ({"campaign": 424242}, 404),
    ],
)
def test_taking_work_needs_a_campaign_of_mine(body, status):
    grader = graders_of(make_campaign())[0]
    leases = list(Assignment.objects.values_list("pk", "lease_expires_at"))
    response = client_for(grader).post("/api/assignments/next/", body, format="json")
    assert response.status_code == status and response.json()["field"] == "campaign"
    assert list(Assignment.objects.values_list("pk", "lease_expires_at")) == leases


def test_another_campaign_is_a_404_for_reads_and_for_taking_work():
    mine, other = make_campaign(), make_campaign()
    grader = graders_of(mine)[0]
    for url in ["/api/assignments/", "/api/judgments/"]:
        assert client_for(grader).get(f"{url}?campaign={other.pk}").status_code == 404
    assert client_for(grader).post("/api/assignments/next/", {"campaign": other.pk}, format="json").status_code == 404


def test_taking_work_with_a_get_is_refused_naming_the_post_and_changes_nothing():
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1)
    grader = graders_of(campaign)[0]
    leases = list(Assignment.objects.values_list("pk", "lease_expires_at"))
    response = client_for(grader).get(f"/api/assignments/next/?campaign={campaign.pk}")
    assert response.status_code == 405 and response.headers["Allow"] == "POST, OPTIONS"
    assert 'POST /api/assignments/next/ with {"campaign": <id>}' in response.json()["detail"]
    assert list(Assignment.objects.values_list("pk", "lease_expires_at")) == leases


def test_judgments_are_only_mine():
    campaign = make_campaign()
    a, b = graders_of(campaign)
    record(a, campaign, "broad_set", {"value": "VS"}, unit=my_units(a, campaign)[0])
    record(b, campaign, "broad_set", {"value": "NS"}, unit=my_units(b, campaign)[1])
    body = client_for(a).get(f"/api/judgments/?campaign={campaign.pk}").json()
    assert body["count"] == 1 and body["results"][0]["broad"] == "VS"


def test_next_serves_my_first_open_assignment_with_a_lease_then_204_when_done():
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1)
    grader = graders_of(campaign)[0]
    api = client_for(grader)
    first = api.post("/api/assignments/next/", {"campaign": campaign.pk}, format="json")
    assert first.status_code == 200
    assert first.json()["unit"]["id"] == my_units(grader, campaign)[0].pk and first.json()["lease_expires_at"]
    for unit in my_units(grader, campaign):
        record(grader, campaign, "skip", {}, unit=unit)
    assert api.post("/api/assignments/next/", {"campaign": campaign.pk}, format="json").status_code == 204


def test_next_in_a_closed_campaign_is_refused():
    campaign = make_campaign(status=CampaignStatus.CLOSED)
    response = client_for(graders_of(campaign)[0]).post(
        "/api/assignments/next/", {"campaign": campaign.pk}, format="json"
    )
    assert response.status_code == 403


def test_orderings_are_submitted_as_permutations_of_public_ids():
    campaign = make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=4)
    grader = graders_of(campaign)[0]
    query = campaign.queries.get()
    ids = list(campaign.candidates.values_list("public_id", flat=True))
    api = client_for(grader)
    response = api.post(
        "/api/orderings/", {"campaign": campaign.pk, "query": query.pk, "items": ids[::-1]}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["ordering"]["items"] == ids[::-1]
    assert Assignment.objects.get(grader=grader, query=query).status == "done"


@pytest.mark.parametrize(
    "items,field",
    [
        ("abc", "items"),
        ([1, 2], "items"),
        (None, "items"),
        ([], "items"),
        (["nope"], "items"),
    ],
)
def test_an_ordering_that_is_not_a_permutation_is_refused(items, field):
    campaign = make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=3)
    grader = graders_of(campaign)[0]
    query = campaign.queries.get()
    response = client_for(grader).post(
        "/api/orderings/", {"campaign": campaign.pk, "query": query.pk, "items": items}, format="json"
    )
    assert response.status_code == 400 and response.json()["field"] == field
    assert GradingEvent.objects.count() == 0


def test_an_ordering_of_another_graders_query_is_a_403():
    campaign = make_campaign(scheme=Scheme.ORDERING, n_queries=2, n_candidates=3, graders=2, overlap=1)
    a, b = graders_of(campaign)
    query = Assignment.objects.filter(grader=b, campaign=campaign).first().query
    ids = list(query.units.values_list("candidate__public_id", flat=True))
    response = client_for(a).post(
        "/api/orderings/", {"campaign": campaign.pk, "query": query.pk, "items": ids}, format="json"
    )
    assert response.status_code == 403
    assert GradingEvent.objects.count() == 0


@pytest.mark.parametrize("n_candidates", [2, 6])
def test_an_extra_unit_from_next_is_served_whole_in_the_same_number_of_queries(n_candidates):
    campaign = make_campaign(n_queries=2, n_candidates=n_candidates, graders=2, overlap=2)
    campaign.policy, campaign.max_overlap = Policy.CONSENSUS, 3
    campaign.save()
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit"):
        record(
            a.grader,
            campaign,
            "broad_set",
            {"value": "VS" if a.grader == graders_of(campaign)[0] else "NS"},
            unit=a.unit,
        )
        record(a.grader, campaign, "fine_set", {"value": 5.0}, unit=a.unit)
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role=Role.GRADER)
    api = client_for(newcomer)
    allocation_state_ensure(campaign=campaign)  # the policy changed: the state is rebuilt once, here
    with CaptureQueriesContext(connection) as queries:
        served = api.post("/api/assignments/next/", {"campaign": campaign.pk}, format="json")
    statements = [q["sql"] for q in queries.captured_queries]  # the next request clears the log
    assert served.status_code == 200 and served.json()["unit"]["candidate"]["id"]
    listed = api.get(f"/api/assignments/?campaign={campaign.pk}").json()["results"]
    assert [served.json()] == listed  # the same assignment, every field as the list shows it
    # Campaign, BEGIN, own work, expired slot, state, pick, budget, insert, unit with its items, unit
    # state, COMMIT: no lazy read of a relation, whatever the campaign's size.
    assert len(statements) == 11, [sql[:80] for sql in statements]
