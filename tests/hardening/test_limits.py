"""Body limits (413), throttling (429 + Retry-After) of token requests, anonymous API calls and
browser logins, and the Content-Security-Policy header on every page."""

import json

import pytest
from rest_framework.test import APIClient

from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for, graders_of

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
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/13"}
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
