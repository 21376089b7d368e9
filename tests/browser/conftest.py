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

# The gate's fixture is tests/conftest.py's _live_server_gate: it serves every test that uses the live
# server, browser or not (a test after the browser tests would otherwise find the gate shut).
