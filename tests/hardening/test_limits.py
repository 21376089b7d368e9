"""Body limits (413), throttling (429 + Retry-After) of token requests, anonymous API calls and
browser logins, and the Content-Security-Policy header on every page."""

import http.client
import json
import socket
import uuid
from types import SimpleNamespace

import pytest
import redis
from django.core.cache import cache
from rest_framework.test import APIClient

from evalutron import limits
from grading.models import GradingEvent
from grading.services.tokens import token_get_or_create
from tests import services
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for, event, graders_of, my_units
from tests.test_settings import PRODUCTION
from tests.test_settings import django as manage

pytestmark = pytest.mark.django_db


def test_a_body_larger_than_the_endpoint_takes_is_a_413_before_parsing(settings):
    settings.BODY_LIMIT_DEFAULT = 2048
    response = APIClient().post(
        "/api/auth/token/", json.dumps({"username": "x" * 5000, "password": "y"}), content_type="application/json"
    )
    assert response.status_code == 413
    assert response.json()["field"] == "body" and "at most 2048" in response.json()["detail"]


def test_the_events_endpoint_takes_a_full_batch_but_not_more(settings):
    campaign = make_campaign(graders=1)
    api = client_for(graders_of(campaign)[0])
    batch = [{"id": "x", "payload": {"pad": "p" * 8000}}] * 500
    body = json.dumps(batch)
    assert len(body) < settings.BODY_LIMIT_EVENTS
    assert api.post("/api/events/", body, content_type="application/json").status_code == 200
    too_big = json.dumps(batch + [{"payload": {"pad": "p" * 1_000_000}}])
    assert api.post("/api/events/", too_big, content_type="application/json").status_code == 413


def test_a_large_page_form_is_a_413_too(client, settings):
    settings.BODY_LIMIT_DEFAULT = 4096
    response = client.post("/accounts/login/", {"username": "u", "password": "p" * 10_000})
    assert response.status_code == 413


def test_token_requests_are_throttled_with_retry_after(settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "token": "3/min"}
    user = make_user(password="pw-for-tests-123")
    api = APIClient()
    codes = [
        api.post("/api/auth/token/", {"username": user.username, "password": "wrong"}, format="json").status_code
        for _ in range(4)
    ]
    assert codes == [400, 400, 400, 429]
    response = api.post("/api/auth/token/", {"username": user.username, "password": "pw-for-tests-123"}, format="json")
    assert response.status_code == 429 and 0 < int(response["Retry-After"]) <= 60


def test_anonymous_api_calls_are_throttled(settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "anon": "2/min"}
    api = APIClient()
    assert [api.get("/api/schema/").status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.redis
def test_the_counts_live_in_redis_when_configured(settings):
    settings.CACHES = {  # a prefix of its own, cleared alone: the database is the suite's (tests/cache.py)
        "default": {
            "BACKEND": "tests.cache.PrefixedRedisCache",
            "LOCATION": "redis://127.0.0.1:6379/13",
            "KEY_PREFIX": uuid.uuid4().hex,
        }
    }  # not the brokers' 14 and 15
    from django.core.cache import caches

    caches["default"].clear()
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "token": "1/min"}
    api = APIClient()
    assert api.post("/api/auth/token/", {"username": "a", "password": "b"}, format="json").status_code == 400
    assert any(k for k in caches["default"]._cache.get_client().keys("*throttle_token*"))
    assert api.post("/api/auth/token/", {"username": "a", "password": "b"}, format="json").status_code == 429
    caches["default"].clear()


def test_password_guessing_on_the_login_page_is_stopped(client, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    user = make_user(password="pw-for-tests-123")
    for _ in range(3):
        assert client.post("/accounts/login/", {"username": user.username, "password": "guess"}).status_code == 200
    blocked = client.post("/accounts/login/", {"username": user.username, "password": "pw-for-tests-123"})
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) == settings.LOGIN_FAILURE_WINDOW
    assert "Too many failed attempts" in blocked.content.decode()
    assert "_auth_user_id" not in client.session


def test_guessing_across_accounts_from_one_address_is_stopped_too(client, settings):
    settings.LOGIN_FAILURE_LIMIT = 1
    codes = [
        client.post("/accounts/login/", {"username": f"someone{i}", "password": "guess"}).status_code for i in range(11)
    ]
    assert codes == [200] * 10 + [429]


def test_a_good_login_still_works_below_the_limit(client):
    user = make_user(password="pw-for-tests-123")
    client.post("/accounts/login/", {"username": user.username, "password": "guess"})
    response = client.post("/accounts/login/", {"username": user.username, "password": "pw-for-tests-123"})
    assert response.status_code == 302


@pytest.mark.parametrize("url", ["/accounts/login/", "/"])
def test_every_page_carries_a_content_security_policy(client, url):
    client.force_login(make_user())
    policy = client.get(url)["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'"  # no inline code; a page that needs some gets a nonce
    assert directives["object-src"] == "'none'" and directives["default-src"] == "'self'"


# --- the client's address: REMOTE_ADDR, X-Forwarded-For only from trusted proxies ---------------------------------
@pytest.mark.parametrize(
    "remote,forwarded,trusted,expected",
    [
        ("198.51.100.7", "203.0.113.1", [], "198.51.100.7"),  # no trusted proxy: the header is ignored
        ("198.51.100.7", "203.0.113.1", ["10.0.0.0/8"], "198.51.100.7"),  # not sent by a trusted proxy
        ("10.0.0.2", "203.0.113.1", ["10.0.0.0/8"], "203.0.113.1"),
        ("10.0.0.2", "6.6.6.6, 203.0.113.1", ["10.0.0.0/8"], "203.0.113.1"),  # the right-most untrusted one
        ("10.0.0.2", "6.6.6.6, 203.0.113.1, 10.0.0.9", ["10.0.0.0/8"], "203.0.113.1"),  # two proxies
        ("10.0.0.2", "", ["10.0.0.0/8"], "10.0.0.2"),
        ("10.0.0.2", "10.0.0.3", ["10.0.0.0/8"], "10.0.0.3"),  # only proxies: the farthest
        ("::1", "2001:db8::5", ["::1"], "2001:db8::5"),
        ("10.0.0.2", "not-an-address, 203.0.113.1", ["10.0.0.2"], "203.0.113.1"),
    ],
)
def test_the_client_address_is_the_one_the_server_sees_unless_a_trusted_proxy_forwards_it(
    rf, settings, remote, forwarded, trusted, expected
):
    settings.TRUSTED_PROXIES = trusted
    request = rf.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert limits.client_address(request) == expected


def test_forged_forwarded_addresses_do_not_reset_the_token_count(settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "token": "3/min"}
    user = make_user(password="pw-for-tests-123")
    api = APIClient()
    codes = [
        api.post(
            "/api/auth/token/",
            {"username": user.username, "password": "wrong"},
            format="json",
            HTTP_X_FORWARDED_FOR=f"203.0.113.{i}",
        ).status_code
        for i in range(30)
    ]
    assert codes == [400] * 3 + [429] * 27
    right = api.post(
        "/api/auth/token/",
        {"username": user.username, "password": "pw-for-tests-123"},
        format="json",
        HTTP_X_FORWARDED_FOR="198.51.100.99",
    )
    assert right.status_code == 429


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_count(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.2"]
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "anon": "2/min"}
    api = APIClient(REMOTE_ADDR="10.0.0.2")
    first = [api.get("/api/schema/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.1").status_code for _ in range(3)]
    other = api.get("/api/schema/", HTTP_X_FORWARDED_FOR="203.0.113.2").status_code
    forged = api.get("/api/schema/", HTTP_X_FORWARDED_FOR="7.7.7.7, 203.0.113.1").status_code
    assert (first, other, forged) == ([200, 200, 429], 200, 429)


def test_login_failures_behind_a_trusted_proxy_are_counted_per_forwarded_client(client, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    settings.LOGIN_FAILURE_LIMIT = 1
    user = make_user(password="pw-for-tests-123")

    def attempt(address: str, password: str = "guess") -> int:
        data = {"username": user.username, "password": password}
        return client.post("/accounts/login/", data, REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR=address).status_code

    assert [attempt("203.0.113.1"), attempt("203.0.113.1")] == [200, 429]
    assert attempt("203.0.113.2", "pw-for-tests-123") == 302


@pytest.mark.parametrize("value", ["10.0.0.0/33", "proxy.internal", "10.0.0.1,,nonsense"])
def test_a_trusted_proxies_entry_that_is_not_an_address_or_network_stops_the_start(value):
    result = manage(["check"], {**PRODUCTION, "TRUSTED_PROXIES": value})
    assert result.returncode != 0 and "TRUSTED_PROXIES" in result.stderr


# --- the admin's login page: the same failed-login limit ------------------------------------------------------------
def test_password_guessing_on_the_admin_login_page_is_stopped_until_the_window_passes(client, settings):
    user = make_user(password="pw-for-tests-123")
    user.is_staff = user.is_superuser = True
    user.save()
    codes = [
        client.post("/admin/login/", {"username": user.username, "password": f"guess{i}"}).status_code
        for i in range(25)
    ]
    assert codes == [200] * settings.LOGIN_FAILURE_LIMIT + [429] * (25 - settings.LOGIN_FAILURE_LIMIT)
    right = {"username": user.username, "password": "pw-for-tests-123"}
    blocked = client.post("/admin/login/", right)
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) == settings.LOGIN_FAILURE_WINDOW
    assert "Too many failed attempts" in blocked.content.decode()
    assert "_auth_user_id" not in client.session
    cache.clear()  # the window has passed: its counts have expired
    assert client.post("/admin/login/", right).status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)


def test_admin_and_site_login_failures_share_one_count(client, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    user = make_user(password="pw-for-tests-123")
    client.post("/accounts/login/", {"username": user.username, "password": "guess"})
    client.post("/admin/login/", {"username": user.username, "password": "guess"})
    assert client.post("/admin/login/", {"username": user.username, "password": "guess"}).status_code == 429
    assert client.post("/accounts/login/", {"username": user.username, "password": "guess"}).status_code == 429


# --- per-user API rates: a burst and a sustained rate, a fixed window counted in the cache ---------------------------
def _events(campaign, grader, n: int) -> str:
    unit = my_units(grader, campaign)[0]
    return json.dumps([event(campaign, "unit_viewed", unit=unit) for _ in range(n)])


def test_a_logged_in_api_user_past_the_burst_rate_is_answered_429_with_retry_after(settings):
    settings.THROTTLE_USER_BURST = "3/min"
    campaign = make_campaign(graders=1)
    api = client_for(graders_of(campaign)[0])
    codes = [api.get("/api/campaigns/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = api.get("/api/campaigns/")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["code"] == "throttled" and refused["Retry-After"] in refused.json()["detail"]


def test_the_sustained_rate_binds_below_the_burst_one(settings, monkeypatch):
    settings.THROTTLE_USER_BURST, settings.THROTTLE_USER_SUSTAINED = "100/min", "2/hour"
    monkeypatch.setattr(limits, "_now", lambda: 1_800_000_000.0)  # the start of an hour
    api = client_for(make_user())
    codes = [api.get("/api/campaigns/").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert api.get("/api/campaigns/")["Retry-After"] == "3600"


def test_a_batch_of_events_counts_once_per_request(settings):
    settings.THROTTLE_USER_BURST = "2/min"
    campaign = make_campaign(graders=1)
    grader = graders_of(campaign)[0]
    api = client_for(grader)
    codes = [
        api.post("/api/events/", _events(campaign, grader, 50), content_type="application/json").status_code
        for _ in range(3)
    ]
    assert codes == [200, 200, 429]
    assert GradingEvent.objects.count() == 100  # the refused batch stored nothing


def test_each_user_has_a_count_of_their_own(settings):
    settings.THROTTLE_USER_BURST = "1/min"
    first, second = client_for(make_user()), client_for(make_user())
    assert [first.get("/api/campaigns/").status_code, first.get("/api/campaigns/").status_code] == [200, 429]
    assert second.get("/api/campaigns/").status_code == 200


def test_the_browsers_session_is_limited_too(client, settings):
    settings.THROTTLE_USER_BURST = "1/min"
    client.force_login(make_user())
    assert [client.get("/api/campaigns/").status_code for _ in range(2)] == [200, 429]


def test_the_count_starts_again_when_the_window_passes(settings, monkeypatch):
    settings.THROTTLE_USER_BURST = "1/min"
    now = [1_800_000_000.0]
    monkeypatch.setattr(limits, "_now", lambda: now[0])
    api = client_for(make_user())
    assert [api.get("/api/campaigns/").status_code for _ in range(2)] == [200, 429]
    assert api.get("/api/campaigns/")["Retry-After"] == "60"
    now[0] += 59.5
    assert api.get("/api/campaigns/")["Retry-After"] == "1"
    now[0] += 0.5
    assert api.get("/api/campaigns/").status_code == 200


def test_the_defaults_leave_room_for_a_fast_grader():
    from evalutron import settings as defaults

    burst, sustained = (
        limits.parse_rate(rate) for rate in (defaults.THROTTLE_USER_BURST, defaults.THROTTLE_USER_SUSTAINED)
    )
    assert burst[0] / burst[1] >= 2 and sustained[0] / sustained[1] * 3600 >= 3000


@pytest.mark.parametrize("value", ["fast", "10/fortnight", "-3/min", "0/min"])
def test_a_user_rate_that_is_not_in_drfs_rate_format_stops_the_start(value):
    result = manage(["check"], {**PRODUCTION, "THROTTLE_USER_BURST": value})
    assert result.returncode != 0 and "THROTTLE_USER_BURST" in result.stderr


@pytest.mark.redis
def test_on_redis_both_user_rates_cost_one_round_trip(settings, monkeypatch):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": services.broker_url(),
            "KEY_PREFIX": uuid.uuid4().hex,  # this run's counters only
        }
    }
    settings.THROTTLE_USER_BURST = "3/min"
    request = SimpleNamespace(user=make_user(), META={})
    throttle = limits.UserRateThrottle()
    assert throttle.allow_request(request, None)  # connects (the client introduces itself)
    sent = []
    original = redis.connection.AbstractConnection.send_packed_command
    monkeypatch.setattr(
        redis.connection.AbstractConnection,
        "send_packed_command",
        lambda self, *args, **kwargs: (sent.append(1), original(self, *args, **kwargs))[1],
    )
    assert [throttle.allow_request(request, None) for _ in range(3)] == [True, True, False]
    assert len(sent) == 3
    assert 0 < throttle.wait() <= 60


# --- chunked bodies: no length announced, so none can be checked: 411 -------------------------------------------------
@pytest.mark.parametrize("path", ["/api/events/", "/api/auth/token/", "/accounts/login/"])
def test_a_chunked_body_is_answered_411_before_anything_reads_it(path):
    response = APIClient().post(
        path, b'{"username": "a"}', content_type="application/json", HTTP_TRANSFER_ENCODING="chunked", CONTENT_LENGTH=""
    )
    assert response.status_code == 411
    text = response.content.decode()
    assert "Content-Length" in text and "chunked" in text
    if path.startswith("/api/"):
        assert response.json()["code"] == "length_required" and response.json()["field"] == "body"


@pytest.mark.django_db(transaction=True)
def test_a_real_chunked_request_gets_411_not_an_empty_body(live_server):
    campaign = make_campaign(graders=1)
    token = token_get_or_create(user=graders_of(campaign)[0]).key
    unit = my_units(graders_of(campaign)[0], campaign)[0]
    body = json.dumps(event(campaign, "broad_set", {"value": "VS"}, unit=unit)).encode()
    host, port = live_server.url.removeprefix("http://").split(":")
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (body[i : i + 100] for i in range(0, len(body), 100)))
    head = (
        f"POST /api/events/ HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Authorization: Token {token}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(head.encode() + chunked + b"0\r\n\r\n")  # the whole request at once: no race with the answer
        response = http.client.HTTPResponse(raw)
        response.begin()
        answer = json.loads(response.read())
    assert response.status == 411 and answer["code"] == "length_required", answer
    assert GradingEvent.objects.count() == 0
