"""A gate around the live test server's WSGI application: it counts the requests inside and, once
shut, lets no more in (503) while those inside are waited for (tests/browser/conftest.py says why)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

DRAIN_TIMEOUT = 60  # seconds: a request still running after this is a bug worth a loud failure


class _Closing:
    """A WSGI response that tells the gate when the server has closed it (sent or abandoned)."""

    def __init__(self, result: Iterable[bytes], done: Callable[[], None]) -> None:
        self.result = result
        self.done = done

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.result)

    def close(self) -> None:
        try:
            if hasattr(self.result, "close"):
                self.result.close()  # Django's request_finished: the request's connection is released
        finally:
            self.done()


class ServerGate:
    """Counts the requests inside the wrapped application and lets none in while shut."""

    def __init__(self, app) -> None:
        self.app = app
        self.changed = threading.Condition()
        self.is_open = False
        self.inside = 0

    def __call__(self, environ, start_response):
        with self.changed:
            if not self.is_open:
                start_response("503 Service Unavailable", [("Content-Type", "text/plain"), ("Retry-After", "1")])
                return [b"The test server is between tests."]
            self.inside += 1
        try:
            result = self.app(environ, start_response)
        except BaseException:
            self._left()
            raise
        return _Closing(result, self._left)

    def _left(self) -> None:
        with self.changed:
            self.inside -= 1
            self.changed.notify_all()

    def open(self) -> None:
        with self.changed:
            self.is_open = True

    def shut_and_drain(self, timeout: float = DRAIN_TIMEOUT) -> None:
        with self.changed:
            self.is_open = False
            if not self.changed.wait_for(lambda: self.inside == 0, timeout=timeout):
                raise RuntimeError(f"{self.inside} request(s) to the live server still running after {timeout} s")


def gate_of(live_server) -> ServerGate:
    """The live server's gate, put around its application the first time it is asked for."""
    gate = getattr(live_server, "gate", None)
    if gate is None:
        httpd = live_server.thread.httpd
        gate = ServerGate(httpd.get_app())
        httpd.set_app(gate)
        live_server.gate = gate
    return gate
