"""API tokens are remembered by each web process for TOKEN_CACHE_SECONDS, and forgotten at once when
the token is deleted or its user is saved (deactivated, new password) or deleted."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from grading.api import authentication
from grading.services.tokens import token_get_or_create
from tests.factories import make_user

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(authentication.time, "monotonic", fake)
    return fake


def scripted(token: Token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def token_queries(client: APIClient) -> tuple[int, int]:
    """The answer's status and how many queries read the token table."""
    with CaptureQueriesContext(connection) as queries:
        status = client.get("/api/campaigns/").status_code
    return status, sum("authtoken_token" in q["sql"] for q in queries.captured_queries)


def test_a_valid_token_is_looked_up_once_then_remembered(clock):
    client = scripted(token_get_or_create(user=make_user()))
    assert token_queries(client) == (200, 1)
    assert token_queries(client) == (200, 0)
    clock.now += 4.9
    assert token_queries(client) == (200, 0)


def test_a_remembered_token_is_looked_up_again_once_its_time_is_up(clock, settings):
    settings.TOKEN_CACHE_SECONDS = 5
    client = scripted(token_get_or_create(user=make_user()))
    token_queries(client)
    clock.now += 5.0
    assert token_queries(client) == (200, 1)


def test_a_deleted_token_stops_working_at_once(clock):
    token = token_get_or_create(user=make_user())
    client = scripted(token)
    assert token_queries(client) == (200, 1)
    token.delete()
    assert client.get("/api/campaigns/").status_code == 401


def test_a_deactivated_user_is_refused_at_once(clock):
    user = make_user()
    client = scripted(token_get_or_create(user=user))
    assert token_queries(client)[0] == 200
    user.is_active = False
    user.save()
    assert client.get("/api/campaigns/").status_code == 401


def test_a_deleted_user_is_refused_at_once(clock):
    user = make_user()
    client = scripted(token_get_or_create(user=user))
    assert token_queries(client)[0] == 200
    user.delete()
    assert client.get("/api/campaigns/").status_code == 401


def test_a_new_password_makes_the_token_be_looked_up_again(clock):
    user = make_user()
    client = scripted(token_get_or_create(user=user))
    token_queries(client)
    user.set_password("another-pw-for-tests-456")
    user.save()
    assert token_queries(client) == (200, 1)


def test_a_token_revoked_without_this_process_knowing_works_until_its_time_is_up(clock, settings):
    """What another web process sees of a revocation made here: nothing is signalled to it, so the
    token it remembers works for at most TOKEN_CACHE_SECONDS more."""
    settings.TOKEN_CACHE_SECONDS = 5
    token = token_get_or_create(user=make_user())
    client = scripted(token)
    assert token_queries(client)[0] == 200
    with connection.cursor() as cursor:  # no model signal: as if another process had deleted it
        cursor.execute("DELETE FROM authtoken_token WHERE key = %s", [token.key])
    clock.now += 4.9
    assert client.get("/api/campaigns/").status_code == 200
    clock.now += 0.1
    assert client.get("/api/campaigns/").status_code == 401


def test_unknown_keys_are_never_remembered(clock):
    client = scripted(Token(key="0" * 40))
    for _ in range(2):
        assert token_queries(client) == (401, 1)
    assert not authentication.memory._entries


def test_without_a_cache_time_every_request_looks_the_token_up(clock, settings):
    settings.TOKEN_CACHE_SECONDS = 0
    client = scripted(token_get_or_create(user=make_user()))
    assert token_queries(client) == (200, 1)
    assert token_queries(client) == (200, 1)


def test_each_request_gets_its_own_user_object(clock):
    user = make_user()
    token = token_get_or_create(user=user)
    auth = authentication.CachedTokenAuthentication()
    first, _ = auth.authenticate_credentials(token.key)
    second, again = auth.authenticate_credentials(token.key)
    assert first == second == user and first is not second
    assert again.key == token.key and again.user is second
    first.first_name = "changed in one request"
    assert auth.authenticate_credentials(token.key)[0].first_name == user.first_name


def test_the_memory_holds_a_bounded_number_of_tokens(clock, monkeypatch):
    monkeypatch.setattr(authentication, "MAX_ENTRIES", 2)
    clients = [scripted(token_get_or_create(user=make_user())) for _ in range(3)]
    for client in clients:
        token_queries(client)
    assert len(authentication.memory._entries) == 2
    assert token_queries(clients[0]) == (200, 1)  # the oldest was forgotten


def test_a_remembered_user_and_token_are_what_the_database_holds(clock):
    user = make_user()
    token = token_get_or_create(user=user)
    auth = authentication.CachedTokenAuthentication()
    auth.authenticate_credentials(token.key)  # looked up and remembered
    remembered, again = auth.authenticate_credentials(token.key)
    for model, made in ((type(user), remembered), (type(token), again)):
        stored = model.objects.get(pk=made.pk)
        assert [getattr(made, f.attname) for f in model._meta.concrete_fields] == [
            getattr(stored, f.attname) for f in model._meta.concrete_fields
        ]
        assert not made._state.adding and made._state.db == stored._state.db
    assert again.user is remembered and remembered.is_authenticated and remembered.is_active
    remembered.save(update_fields=["first_name"])  # a stored row: saved as an UPDATE
