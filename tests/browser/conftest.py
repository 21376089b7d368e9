"""Every browser test talks to the live test server; between tests that server is shut to requests.

The database is reset after each test (a TRUNCATE of every table on PostgreSQL). A request still
being served at that moment (an event a page sent as the test ended, a `page_focus` sent as its tab
closed) holds row locks the TRUNCATE waits for while the request waits for a table the TRUNCATE
has locked: a deadlock, and the test errors at teardown. So the server's application is wrapped in a
gate: a test opens it; at the test's end, once its browser contexts are closed, the gate shuts
(later requests are answered 503 without reaching Django) and the requests already inside are
waited for, up to the last byte of their responses, before the reset begins.
"""

from __future__ import annotations

import pytest

from tests.server_gate import ServerGate


def gate_of(live_server) -> ServerGate:
    """The live server's gate, put around its application the first time it is asked for."""
    gate = getattr(live_server, "gate", None)
    if gate is None:
        httpd = live_server.thread.httpd
        gate = ServerGate(httpd.get_app())
        httpd.set_app(gate)
        live_server.gate = gate
    return gate


@pytest.fixture(autouse=True)
def _server_shut_before_the_reset(live_server, transactional_db):
    """Depends on transactional_db, so it ends before the database reset; autouse, so it starts
    before (and ends after) the fixtures that open browser contexts."""
    gate = gate_of(live_server)
    gate.open()
    yield
    gate.shut_and_drain()
