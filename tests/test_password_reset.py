"""Password reset by e-mail: the login page offers it; a known address gets a one-time link that sets
a new password; an unknown one is answered the same and gets nothing; a server that sends no e-mail
says so and sends nothing; requests are rate-limited per address."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import authenticate
from django.core import mail
from django.test import Client

from evalutron import limits
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def sending(settings):
    settings.EMAIL_ENABLED = True


def test_the_login_page_offers_a_password_reset():
    assert 'id="forgot-password"' in Client().get("/accounts/login/").content.decode()


def test_a_known_address_gets_a_link_that_sets_a_new_password(sending):
    make_user("ana", email="ana@example.org", password="old-password-123")
    client = Client()
    response = client.post("/accounts/password-reset/", {"email": "ana@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password-reset/sent/"
    assert 'id="reset-sent"' in client.get(response["Location"]).content.decode()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ana@example.org"]
    link = re.search(r"http://testserver(/accounts/set-password/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert 'id="set-password-user"' in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-new-one-987", "new_password2": "a-new-one-987"})
    assert done.status_code == 302
    assert authenticate(username="ana", password="a-new-one-987") is not None
    assert authenticate(username="ana", password="old-password-123") is None
    again = Client().get(link, follow=True)
    assert "has already been used or has expired" in again.content.decode()


def test_an_unknown_address_is_answered_the_same_and_gets_nothing(sending):
    response = Client().post("/accounts/password-reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302 and mail.outbox == []


def test_a_server_that_sends_no_email_says_so_and_sends_nothing(settings):
    settings.EMAIL_ENABLED, settings.DEBUG = False, False
    make_user("ana", email="ana@example.org")
    assert 'id="no-email"' in Client().get("/accounts/password-reset/").content.decode()
    assert Client().post("/accounts/password-reset/", {"email": "ana@example.org"}).status_code == 503
    assert mail.outbox == []


def test_reset_requests_are_rate_limited_per_address(sending, settings, monkeypatch):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "reset": "2/min"}
    monkeypatch.setattr(limits, "_now", lambda: 1_800_000_000.0)  # the start of a minute: one window
    make_user("ana", email="ana@example.org")
    client = Client()
    codes = [client.post("/accounts/password-reset/", {"email": "ana@example.org"}).status_code for _ in range(3)]
    assert codes == [302, 302, 429]
    assert len(mail.outbox) == 2
