"""API tokens are issued by a service: one per user, the same one when asked again."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from grading.services.tokens import token_get_or_create
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_asking_twice_gives_the_same_token_and_stores_one():
    user = make_user("script-user")
    first = token_get_or_create(user=user)
    assert token_get_or_create(user=user).key == first.key
    assert Token.objects.filter(user=user).count() == 1


def test_the_endpoint_hands_out_the_services_token():
    user = make_user("script-user-2")
    response = APIClient().post(
        "/api/auth/token/", {"username": user.username, "password": "pw-for-tests-123"}, format="json"
    )
    assert response.status_code == 200
    assert response.json() == {"token": Token.objects.get(user=user).key}
