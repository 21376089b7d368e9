"""The live test server's gate: shut, it lets nothing reach the application, and shutting waits for the
requests inside until the server has closed their responses (streamed bodies included)."""

from __future__ import annotations

import threading

import pytest

from tests.server_gate import ServerGate


def start_response(status, headers):
    start_response.status = status


def streaming_app(release: threading.Event, started: threading.Event):
    def app(environ, start):
        start("200 OK", [])

        def body():
            started.set()
            release.wait(5)
            yield b"last"

        return body()

    return app


def test_a_shut_gate_answers_503_without_calling_the_application():
    called = []
    gate = ServerGate(lambda environ, start: called.append(1) or [b""])
    assert list(gate({}, start_response)) == [b"The test server is between tests."]
    assert start_response.status.startswith("503") and called == []
    gate.open()
    gate({}, start_response)
    assert called == [1]


def test_shutting_waits_for_a_response_still_streaming_and_then_lets_nothing_in():
    release, started = threading.Event(), threading.Event()
    gate = ServerGate(streaming_app(release, started))
    gate.open()
    response = gate({}, start_response)
    served = threading.Thread(target=lambda: (list(response), response.close()))
    served.start()
    assert started.wait(5)
    shut = threading.Thread(target=gate.shut_and_drain)
    shut.start()
    shut.join(0.2)
    assert shut.is_alive()  # the body is not finished: the reset must wait
    release.set()
    shut.join(5)
    served.join(5)
    assert not shut.is_alive() and gate.inside == 0
    assert list(gate({}, start_response)) == [b"The test server is between tests."]


def test_a_request_that_never_finishes_fails_the_shutting_loudly():
    gate = ServerGate(lambda environ, start: [b""])
    gate.open()
    gate({}, start_response)  # never closed
    with pytest.raises(RuntimeError, match="1 request"):
        gate.shut_and_drain(timeout=0.1)
