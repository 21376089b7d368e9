"""POST /api/events/: every event type, replays, batches, permissions and validation."""

import json
from decimal import Decimal

import pytest

from grading.models import Assignment, GradingEvent, Judgment
from grading.models.choices import AssignmentStatus, CampaignStatus, Scheme
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for, event, fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = pytest.mark.django_db
URL = "/api/events/"


@pytest.fixture
def campaign():
    return make_campaign(graders=2, n_queries=2, n_candidates=3)


@pytest.fixture
def grader(campaign):
    return graders_of(campaign)[0]


@pytest.fixture
def api(grader):
    return client_for(grader)


def post(api, body):
    return api.post(URL, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    "kind,payload",
    [
        ("unit_viewed", {}),
        ("audition", {"action": "play", "position": 1.5}),
        ("audition", {"action": "seek", "position": 30}),
        ("audition", {"action": "pause", "position": 2}),
        ("audition", {"action": "ended", "position": 4.0}),
        ("broad_set", {"value": "VS"}),
        ("fine_set", {"value": 7.3}),
        ("comment", {"text": "a lovely clip"}),
        ("skip", {"reason": "cannot play"}),
        ("hint_shown", {"broad": "VS", "fine": 2.1}),
    ],
)
def test_it_stores_each_broad_fine_event_type(api, campaign, grader, kind, payload):
    unit = my_units(grader, campaign)[0]
    response = post(api, event(campaign, kind, payload, unit=unit))
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "stored"
    assert GradingEvent.objects.get().type == kind


def test_it_records_guidelines_viewed_without_a_unit(api, campaign):
    response = post(api, event(campaign, "guidelines_viewed", {"version": 1}))
    assert response.status_code == 201
    assert GradingEvent.objects.get().guidelines_version == 1


@pytest.mark.parametrize(
    "scheme,kind,value",
    [
        (Scheme.NUMERIC, "score_set", 7),
        (Scheme.CATEGORICAL, "label_set", "good"),
        (Scheme.PAIRWISE, "pairwise_set", "equal"),
    ],
)
def test_it_stores_score_label_and_verdict_events(scheme, kind, value):
    campaign = make_campaign(scheme=scheme, n_queries=0, n_candidates=3)
    grader = graders_of(campaign)[0]
    if scheme == Scheme.PAIRWISE:
        unit = my_units(grader, campaign)[0]
        unit.candidate_b = campaign.candidates.exclude(pk=unit.candidate_id).first()
        unit.save()
    unit = my_units(grader, campaign)[0]
    response = post(client_for(grader), event(campaign, kind, {"value": value}, unit=unit))
    assert response.status_code == 201, response.json()
    assert Assignment.objects.get(grader=grader, unit=unit).status == AssignmentStatus.DONE


def test_broad_and_fine_make_a_judgment_and_the_answer_says_so(api, campaign, grader):
    unit = my_units(grader, campaign)[0]
    post(api, event(campaign, "broad_set", {"value": "VS"}, unit=unit))
    body = post(api, event(campaign, "fine_set", {"value": 2.1}, unit=unit)).json()
    assert body["judgment"]["broad"] == "VS" and body["judgment"]["fine"] == 2.1
    assert "unusual for Very Similar" in body["hint"]
    assert Judgment.objects.get(grader=grader, unit=unit).fine == Decimal("2.1")


def test_a_replayed_id_is_stored_once_and_answered_the_same_with_200(api, campaign, grader):
    body = event(campaign, "broad_set", {"value": "SS"}, unit=my_units(grader, campaign)[0])
    first = post(api, body)
    again = post(api, body)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["status"] == "replayed"
    assert again.json()["event"] == first.json()["event"]
    assert GradingEvent.objects.count() == 1


def test_a_batch_answers_each_event_and_stores_the_good_ones(api, campaign, grader):
    unit = my_units(grader, campaign)[0]
    good = event(campaign, "broad_set", {"value": "NS"}, unit=unit)
    batch = [
        good,
        event(campaign, "fine_set", {"value": 11}, unit=unit),
        good,
        "not an event",
        event(campaign, "fine_set", {"value": 1.0}, unit=unit),
    ]
    response = post(api, batch)
    assert response.status_code == 200
    body = response.json()
    assert [r["status"] for r in body["results"]] == ["stored", "rejected", "replayed", "rejected", "stored"]
    assert body["results"][1]["error"]["field"] == "payload.value" and body["results"][1]["http_status"] == 400
    assert body["results"][3]["error"]["field"] == "body"
    assert (body["stored"], body["replayed"], body["rejected"]) == (2, 1, 2)
    assert GradingEvent.objects.count() == 2


def test_an_empty_batch_and_an_oversized_one_are_refused(api):
    empty = post(api, [])
    assert empty.status_code == 400 and empty.json()["field"] == "body"
    response = post(api, [{}] * 501)
    assert response.status_code == 400 and response.json()["field"] == "body"


@pytest.mark.parametrize(
    "change,field,value",
    [
        ({"payload": {"value": 10.5}, "type": "fine_set"}, "payload.value", 10.5),
        ({"payload": {"value": -0.1}, "type": "fine_set"}, "payload.value", -0.1),
        ({"payload": {"value": 7.25}, "type": "fine_set"}, "payload.value", 7.25),
        ({"payload": {"value": "7"}, "type": "fine_set"}, "payload.value", "7"),
        ({"payload": {"value": True}, "type": "fine_set"}, "payload.value", True),
        ({"payload": {}, "type": "fine_set"}, "payload.value", None),
        ({"payload": {"value": "XX"}}, "payload.value", "XX"),
        ({"payload": {"value": None}}, "payload.value", None),
        ({"payload": ["VS"]}, "payload", '["VS"]'),
        ({"type": "score_set", "payload": {"value": 3}}, "type", "score_set"),
        ({"type": "made_up"}, "type", "made_up"),
        ({"type": "adjudicated"}, "type", "adjudicated"),  # organizers' events: not a grader's to send
        ({"type": "gold_set"}, "type", "gold_set"),
        ({"type": "gold_removed"}, "type", "gold_removed"),
        ({"id": "not-a-uuid"}, "id", "not-a-uuid"),
        ({"id": None}, "id", None),
        ({"client_ts": "yesterday"}, "client_ts", "yesterday"),
        ({"client_ts": 12}, "client_ts", 12),
        ({"seq": -1}, "seq", -1),
        ({"seq": "three"}, "seq", "three"),
        ({"seq": 2**40}, "seq", 2**40),
        ({"campaign": "abc"}, "campaign", "abc"),
        ({"campaign": 2**70}, "campaign", 2**70),
        ({"unit": 1.5}, "unit", 1.5),
        ({"unit": [1]}, "unit", "[1]"),
        ({"session_id": "x" * 65}, "session_id", "x" * 65),
        ({"session_id": "a\x00b"}, "session_id", "a\x00b"),
        (
            {"payload": {"value": "VS", "note": "a\x00b"}},
            "payload.note",
            "a\\u0000b",
        ),
        ({"type": "audition", "payload": {"action": "rewind", "position": 1}}, "payload.action", "rewind"),
        ({"type": "audition", "payload": {"action": "play", "position": -3}}, "payload.position", -3),
        ({"type": "comment", "payload": {"text": ""}}, "payload.text", ""),
    ],
)
def test_it_rejects_bad_input_naming_field_and_value_and_stores_nothing(api, campaign, grader, change, field, value):
    body = {**event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0]), **change}
    response = post(api, body)
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["field"] == field
    if field != "payload" or change.get("payload") == ["VS"]:
        assert error["value"] == value
    else:
        assert "\\u0000" in error["detail"]
    assert GradingEvent.objects.count() == 0 and Judgment.objects.count() == 0


@pytest.mark.parametrize("missing", ["id", "campaign", "type", "client_ts"])
def test_a_missing_field_is_named(api, campaign, grader, missing):
    body = event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])
    del body[missing]
    response = post(api, body)
    assert response.status_code == 400 and response.json()["field"] == missing
    assert GradingEvent.objects.count() == 0


@pytest.mark.parametrize("constant,kind", [("NaN", "fine_set"), ("Infinity", "fine_set"), ("-Infinity", "broad_set")])
def test_nan_and_infinity_in_the_json_are_refused_by_name(api, campaign, grader, constant, kind):
    unit = my_units(grader, campaign)[0]
    body = event(campaign, kind, {}, unit=unit)
    raw = json.dumps(body).replace('"payload": {}', f'"payload": {{"value": {constant}}}')
    response = api.post(URL, raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["field"].startswith("payload")
    assert "nan" in json.dumps(response.json()).lower() or "inf" in json.dumps(response.json()).lower()
    assert GradingEvent.objects.count() == 0


def test_malformed_json_and_odd_bodies_get_a_400(api):
    assert api.post(URL, "{not json", content_type="application/json").status_code == 400
    assert api.post(URL, "[" * 100_000, content_type="application/json").status_code == 400
    assert post(api, "a string").json()["field"] == "body"
    assert post(api, 7).status_code == 400


def test_a_unit_that_does_not_exist_is_a_404_naming_it(api, campaign):
    response = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=999_999))
    assert response.status_code == 404
    assert (response.json()["field"], response.json()["value"]) == ("unit", 999_999)


def test_another_graders_unit_is_refused_with_403_and_nothing_stored():
    campaign = make_campaign(graders=2, overlap=1, n_queries=1, n_candidates=4)
    a, b = graders_of(campaign)
    response = post(client_for(a), event(campaign, "broad_set", {"value": "VS"}, unit=my_units(b, campaign)[0]))
    assert response.status_code == 403 and response.json()["code"] == "not_assigned"
    assert GradingEvent.objects.count() == 0


def test_a_unit_of_another_campaign_is_a_404(api, campaign):
    other = make_campaign()
    response = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=other.units.first()))
    assert response.status_code == 404 and response.json()["field"] == "unit"
    assert GradingEvent.objects.count() == 0


def test_a_campaign_i_do_not_grade_in_is_a_404(campaign, grader):
    other = make_campaign()
    response = post(client_for(grader), event(other, "broad_set", {"value": "VS"}, unit=other.units.first()))
    assert response.status_code == 404 and response.json()["field"] == "campaign"
    assert GradingEvent.objects.count() == 0


@pytest.mark.parametrize("state", [CampaignStatus.CLOSED, CampaignStatus.DRAFT])
def test_a_campaign_that_is_not_open_takes_nothing(api, campaign, grader, state):
    campaign.status = state
    campaign.save()
    response = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0]))
    assert response.status_code == 403 and response.json()["code"] == "campaign_closed"
    assert GradingEvent.objects.count() == 0


def test_an_id_reused_for_a_different_event_is_a_409(api, campaign, grader):
    body = event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])
    post(api, body)
    response = post(api, {**body, "type": "fine_set", "payload": {"value": 3.0}})
    assert response.status_code == 409 and response.json()["field"] == "id"


def test_strangers_and_anonymous_callers_are_refused(campaign, grader):
    from rest_framework.test import APIClient

    body = event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])
    assert APIClient().post(URL, body, format="json").status_code in (401, 403)
    assert post(client_for(make_user()), body).status_code == 404
    assert GradingEvent.objects.count() == 0


def test_the_answer_names_no_grader_and_no_provenance(api, campaign, grader):
    body = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])).json()
    text = json.dumps(body)
    assert grader.username not in text and "system-a" not in text and '"c0-' not in text
