"""A client that goes away in the middle of its body: a client abort, logged as one (not a server
error, no traceback), answered 400 in case anyone is still listening, and nothing stored."""

import io
import json
import logging

import pytest

from grading.models import GradingEvent
from tests.factories import make_user
from tests.grading.api_helpers import event, fast_passwords, graders_of, my_units  # noqa: F401
from tests.grading.test_api_events import api, campaign, grader  # noqa: F401

pytestmark = pytest.mark.django_db


class Dropped(io.RawIOBase):
    """A request body whose sender disconnects after `head`: the server reads an OSError, as from
    gunicorn or a socket reset."""

    def __init__(self, head: bytes) -> None:
        self.head = head

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > len(self.head):  # waits for the rest, which never comes
            raise ConnectionResetError("the client closed the connection")
        chunk, self.head = self.head[:size], self.head[size:]
        return chunk


def dropped(body: bytes) -> dict:
    return {"wsgi.input": Dropped(body[: len(body) // 3]), "CONTENT_LENGTH": str(len(body))}


def assert_client_abort(response, caplog) -> None:
    assert response.status_code == 400
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    aborts = [r for r in caplog.records if r.name == "evalutron.client_abort"]
    assert len(aborts) == 1 and "client" in aborts[0].getMessage() and aborts[0].levelno == logging.INFO


def test_an_event_body_cut_short_is_a_client_abort_not_a_server_error(api, campaign, grader, caplog):  # noqa: F811
    caplog.set_level(logging.INFO)
    body = json.dumps([event(campaign, "broad_set", {"value": "VS"}, unit=my_units(grader, campaign)[0])]).encode()
    response = api.post("/api/events/", content_type="application/json", **dropped(body))
    assert_client_abort(response, caplog)
    assert response.json()["code"] == "client_abort" and response.json()["field"] == "body"
    assert GradingEvent.objects.count() == 0


def test_a_form_cut_short_is_a_client_abort_too(client, caplog):
    caplog.set_level(logging.INFO)
    body = b"username=someone&password=" + b"p" * 300
    response = client.post("/accounts/login/", content_type="application/x-www-form-urlencoded", **dropped(body))
    assert_client_abort(response, caplog)


def test_a_multipart_upload_cut_short_is_a_client_abort_too(client, caplog):
    caplog.set_level(logging.INFO)
    user = make_user()
    user.is_staff = True
    user.save()
    client.force_login(user)
    boundary = "BoUnDaRy"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.json"\r\n'
        f"Content-Type: application/json\r\n\r\n{'x' * 3000}\r\n--{boundary}--\r\n"
    ).encode()
    response = client.post("/organize/new/", content_type=f"multipart/form-data; boundary={boundary}", **dropped(body))
    assert_client_abort(response, caplog)
