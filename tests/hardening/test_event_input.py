"""Events that used to break a campaign: implausible clocks, reused ids, invalid Unicode, paging."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from grading.models import GradingEvent, Judgment
from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for, event, fast_passwords, graders_of, my_units  # noqa: F401
from tests.grading.test_api_events import URL, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def unit(campaign, grader):
    return my_units(grader, campaign)[0]


def post_raw(api, text):
    return api.post(URL, text, content_type="application/json")


# --- 1. timestamps ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "stamp",
    [
        "0001-01-01T00:00:00+00:00",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:59:59+00:00",
        "9999-12-31T23:00:00-05:00",
        # Named, not shown: the collected test ids must not depend on the clock (parallel workers
        # collect the suite each at its own moment and must find the same tests).
        pytest.param((datetime.now(UTC) - timedelta(days=400)).isoformat(), id="400-days-ago"),
        pytest.param((datetime.now(UTC) + timedelta(days=2)).isoformat(), id="2-days-ahead"),
    ],
)
def test_a_client_ts_outside_the_window_is_refused_naming_it_and_the_window(api, campaign, unit, stamp):
    response = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=unit, client_ts=stamp))
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["field"] == "client_ts" and error["value"] == datetime.fromisoformat(stamp).isoformat()
    assert "window" in error["detail"] and str(datetime.now(UTC).year - 1) in error["detail"]
    assert GradingEvent.objects.count() == 0 and Judgment.objects.count() == 0


def test_a_client_ts_in_a_batch_is_refused_alone(api, campaign, unit):
    good = event(campaign, "broad_set", {"value": "VS"}, unit=unit)
    bad = event(campaign, "fine_set", {"value": 3.0}, unit=unit, client_ts="9999-01-01T00:00:00Z")
    body = post(api, [bad, good]).json()
    assert [r["status"] for r in body["results"]] == ["rejected", "stored"]
    assert body["results"][0]["error"]["field"] == "client_ts"


def test_the_window_is_configurable(api, campaign, unit, settings):
    settings.EVENT_CLIENT_TS_MAX_AHEAD_SECONDS = 0
    ahead = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert post(api, event(campaign, "broad_set", {"value": "VS"}, unit=unit, client_ts=ahead)).status_code == 400


@pytest.mark.parametrize("offset", ["+16:00", "-16:00", "+23:59", "+05:45"])
def test_an_offset_of_any_size_is_stored_in_utc(api, campaign, unit, offset):
    sign = 1 if offset[0] == "+" else -1
    hours, minutes = map(int, offset[1:].split(":"))
    moment = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    local = moment.astimezone(__import__("datetime").timezone(sign * timedelta(hours=hours, minutes=minutes)))
    response = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=unit, client_ts=local.isoformat()))
    assert response.status_code == 201, response.content
    stored = GradingEvent.objects.get().client_ts
    assert stored == moment and stored.utcoffset() == timedelta(0)


def test_a_clock_running_fast_does_not_freeze_a_judgment(api, campaign, unit):
    """A first page session with a clock 20 hours ahead, then a correction from a second session with
    a correct clock: the correction arrives later, so it is the current value."""
    fast = (datetime.now(UTC) + timedelta(hours=20)).isoformat()
    post(api, event(campaign, "broad_set", {"value": "VS"}, unit=unit, client_ts=fast, session_id="tab-1", seq=9))
    post(api, event(campaign, "broad_set", {"value": "NS"}, unit=unit, session_id="tab-2", seq=1))
    assert Judgment.objects.get(unit=unit).broad == "NS"


def test_within_a_session_the_sequence_number_decides_not_the_clock(api, campaign, unit):
    later_clock_earlier_seq = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    post(api, event(campaign, "broad_set", {"value": "SS"}, unit=unit, seq=5, session_id="tab"))
    post(
        api,
        event(
            campaign,
            "broad_set",
            {"value": "VS"},
            unit=unit,
            seq=4,
            session_id="tab",
            client_ts=later_clock_earlier_seq,
        ),
    )
    assert Judgment.objects.get(unit=unit).broad == "SS"
    post(
        api,
        event(
            campaign,
            "broad_set",
            {"value": "NS"},
            unit=unit,
            seq=6,
            session_id="tab",
            client_ts=(datetime.now(UTC) - timedelta(days=30)).isoformat(),
        ),
    )
    assert Judgment.objects.get(unit=unit).broad == "NS"


# --- 4. id reuse --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "change",
    [
        {"payload": {"value": "NS"}},
        {"seq": 7},
        {"session_id": "another"},
        {"type": "unit_viewed", "payload": {}},
    ],
)
def test_an_id_reused_with_different_content_is_a_409_naming_it(api, campaign, unit, change):
    body = event(campaign, "broad_set", {"value": "VS"}, unit=unit)
    assert post(api, body).status_code == 201
    response = post(api, {**body, **change})
    assert response.status_code == 409, response.content
    assert (response.json()["field"], response.json()["value"]) == ("id", body["id"])
    assert GradingEvent.objects.count() == 1 and Judgment.objects.get().broad == "VS"


def test_an_id_reused_with_another_unit_is_a_409(api, campaign, grader):
    first, second = my_units(grader, campaign)[:2]
    body = event(campaign, "broad_set", {"value": "VS"}, unit=first)
    post(api, body)
    assert post(api, {**body, "unit": second.pk}).status_code == 409


def test_the_identical_event_stays_a_200_replay_in_a_batch_too(api, campaign, unit):
    body = event(campaign, "broad_set", {"value": "VS"}, unit=unit)
    assert post(api, body).status_code == 201
    assert post(api, body).status_code == 200
    results = post(api, [body, {**body, "payload": {"value": "SS"}}]).json()["results"]
    assert [(r["status"], r["http_status"]) for r in results] == [("replayed", 200), ("rejected", 409)]


# --- 2. invalid Unicode -------------------------------------------------------------------------------
LONE = "\\ud800"


def test_a_lone_surrogate_in_the_payload_is_a_400_naming_the_field(api, campaign, unit):
    text = json.dumps(event(campaign, "comment", {"text": "x"}, unit=unit)).replace(
        '"text": "x"', f'"text": "a{LONE}b"'
    )
    response = post_raw(api, text)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "payload.text"
    assert GradingEvent.objects.count() == 0


@pytest.mark.parametrize("key", ["session_id", "client_ts", "id", "type"])
def test_a_lone_surrogate_in_any_event_field_is_named(api, campaign, unit, key):
    body = event(campaign, "broad_set", {"value": "VS"}, unit=unit)
    body[key] = "abc"
    response = post_raw(api, json.dumps(body).replace('"abc"', f'"ab{LONE}"'))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == key


def test_a_lone_surrogate_in_a_payload_key_is_named(api, campaign, unit):
    text = json.dumps(event(campaign, "broad_set", {"value": "VS", "k": 1}, unit=unit)).replace('"k"', f'"{LONE}"')
    response = post_raw(api, text)
    assert response.status_code == 400 and response.json()["field"].startswith("payload")


def test_in_a_batch_only_the_event_with_a_lone_surrogate_is_rejected(api, campaign, unit):
    bad = event(campaign, "comment", {"text": "BAD"}, unit=unit)
    good = event(campaign, "broad_set", {"value": "VS"}, unit=unit)
    response = post_raw(api, json.dumps([bad, good]).replace("BAD", LONE))
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["rejected", "stored"]
    assert results[0]["error"]["field"] == "payload.text" and results[0]["http_status"] == 400
    assert GradingEvent.objects.count() == 1


def test_a_lone_surrogate_in_a_token_request_is_a_400(api):
    from rest_framework.test import APIClient

    response = APIClient().post(
        "/api/auth/token/", f'{{"username": "a{LONE}", "password": "x"}}', content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["field"] == "username"


def test_a_lone_surrogate_in_organizer_writes_is_a_400_naming_the_field():
    organizer = make_user()
    campaign = make_campaign(organizer=organizer)
    api = client_for(organizer)
    patch = api.patch(f"/api/campaigns/{campaign.pk}/", f'{{"name": "x{LONE}"}}', content_type="application/json")
    assert patch.status_code == 400 and patch.json()["field"] == "name"
    member = api.post(
        f"/api/campaigns/{campaign.pk}/members/",
        f'{{"username": "{LONE}", "role": "grader"}}',
        content_type="application/json",
    )
    assert member.status_code == 400 and member.json()["field"] == "username"
    created = api.post(
        "/api/campaigns/",
        f'{{"name": "n", "slug": "s", "scheme": "numeric", "scheme_params": {{"{LONE}": 1}}}}',
        content_type="application/json",
    )
    assert created.status_code == 400 and created.json()["field"].startswith("scheme_params")
    campaign.refresh_from_db()
    assert "\\" not in campaign.name


# --- 3. paging ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "limit=100000000000000000000",
        "limit=abc",
        "limit=0",
        "limit=-3",
        "limit=1001",
        "offset=-1",
        "offset=1e5",
        "offset=100000000000000000000",
        "limit=1.5",
    ],
)
def test_paging_parameters_out_of_bounds_are_a_400_naming_them(api, campaign, query):
    for url in (
        "/api/campaigns/",
        f"/api/assignments/?campaign={campaign.pk}",
        f"/api/judgments/?campaign={campaign.pk}",
    ):
        response = api.get(f"{url}{'&' if '?' in url else '?'}{query}")
        assert response.status_code == 400, (url, response.content)
        assert response.json()["field"] == query.split("=")[0]


def test_paging_within_bounds_works(api, campaign, grader):
    body = api.get(f"/api/assignments/?campaign={campaign.pk}&limit=2&offset=1").json()
    assert body["count"] == len(my_units(grader, campaign)) and len(body["results"]) == 2
    assert api.get("/api/campaigns/?limit=1000").status_code == 200


# --- 5. values the event path used to take ------------------------------------------------------------
@pytest.mark.parametrize("bad_id", [12345, 0, "00000000-0000-0000-0000-000000000000", True, 1.5])
def test_an_event_id_must_be_a_uuid_string_and_not_the_nil_uuid(api, campaign, unit, bad_id):
    response = post(api, event(campaign, "broad_set", {"value": "VS"}, unit=unit, id=bad_id))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "id" and str(response.json()["value"]).lower() == str(bad_id).lower()
    assert GradingEvent.objects.count() == 0


def test_two_clients_sending_integers_cannot_collide_on_one_id(api, campaign, unit):
    batch = [event(campaign, "broad_set", {"value": "VS"}, unit=unit, id=12345)]
    body = post(api, batch).json()
    assert body["rejected"] == 1 and body["results"][0]["error"]["field"] == "id"


@pytest.mark.parametrize("stamp", ["2026-11-25T10:00:00", "2026-11-25T10:00:00.123", "2026-11-25 10:00"])
def test_a_client_ts_without_an_offset_or_z_is_refused(api, campaign, unit, stamp):
    for body in (event(campaign, "broad_set", {"value": "VS"}, unit=unit, client_ts=stamp),):
        response = post(api, body)
        assert response.status_code == 400, response.content
        assert response.json()["field"] == "client_ts" and response.json()["value"] == stamp
        assert "offset" in response.json()["detail"]
    assert GradingEvent.objects.count() == 0


def test_an_ordering_s_client_ts_needs_an_offset_too():
    campaign = make_campaign(scheme=Scheme.ORDERING, graders=1)
    query = campaign.queries.first()
    items = sorted({u.candidate.public_id for u in query.units.all()})
    body = {"campaign": campaign.pk, "query": query.pk, "items": items, "client_ts": "2026-11-25T10:00:00"}
    response = client_for(graders_of(campaign)[0]).post("/api/orderings/", body, format="json")
    assert response.status_code == 400 and response.json()["field"] == "client_ts", response.content
    assert GradingEvent.objects.count() == 0


@pytest.mark.parametrize("position", [1e300, 86_400.5, 10**30])
def test_an_audition_position_beyond_any_clip_is_refused(api, campaign, unit, position):
    response = post(api, event(campaign, "audition", {"action": "seek", "position": position}, unit=unit))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "payload.position" and response.json()["value"] == position
    assert "86400" in response.json()["detail"]
    assert GradingEvent.objects.count() == 0


def test_an_audition_position_within_a_long_clip_is_stored(api, campaign, unit):
    response = post(api, event(campaign, "audition", {"action": "seek", "position": 3 * 3600.25}, unit=unit))
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("version", [1e30, 2, 0, -1, "1", True, 1.5, None])
def test_a_guidelines_version_the_campaign_never_had_is_refused(api, campaign, version):
    assert campaign.guidelines_version == 1
    response = post(api, event(campaign, "guidelines_viewed", {"version": version}))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "payload.version" and "1" in response.json()["detail"]
    assert GradingEvent.objects.count() == 0


def test_an_empty_batch_is_a_400(api):
    response = post(api, [])
    assert response.status_code == 400
    assert response.json()["field"] == "body" and response.json()["value"] == 0
    assert "empty" in response.json()["detail"]


def test_the_events_endpoint_takes_json_only(api, campaign, unit):
    body = event(campaign, "broad_set", {"value": "VS"}, unit=unit)
    for response in (
        api.post(URL, {k: json.dumps(v) if isinstance(v, dict) else v for k, v in body.items()}, format="multipart"),
        api.post(URL, "id=x&type=broad_set", content_type="application/x-www-form-urlencoded"),
    ):
        assert response.status_code == 415, response.content
        assert response.json()["code"] == "unsupported_media_type" and response.json()["field"] == "body"
        assert "application/json" in response.json()["detail"]
    assert GradingEvent.objects.count() == 0


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_is_reported_on_payload_value_as_the_docs_say(api, campaign, unit, constant):
    raw = json.dumps(event(campaign, "fine_set", {}, unit=unit)).replace(
        '"payload": {}', f'"payload": {{"value": {constant}}}'
    )
    for text in (raw, f"[{raw}]"):
        body = post_raw(api, text).json()
        error = body["results"][0]["error"] if "results" in body else body
        assert error["field"] == "payload.value" and error["value"] in ("nan", "inf", "-inf"), error
    assert GradingEvent.objects.count() == 0
