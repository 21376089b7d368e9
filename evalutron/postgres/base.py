"""Django's PostgreSQL backend with a health check that costs no statement on a healthy connection.

With CONN_HEALTH_CHECKS Django checks a reused connection once per request, before its first query,
by running `SELECT 1`: a round trip and a sixth of the statements of an event (docs/design.md §5.6).
A connection the server ended (restart, pg_terminate_backend, idle timeout) has its goodbye on the
socket, an error message and end-of-file, so an idle connection with nothing to read is alive as far
as a `SELECT 1` could tell. Only when something waits on the socket is the server asked, as Django
does; a connection found dead is closed, and the request's first query opens a new one.
(A peer that vanished without a word, no end-of-file, would leave `SELECT 1` waiting for the TCP
timeout too; neither check finds it sooner.)
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed:
            return False
        pgconn = connection.pgconn
        if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return super().is_usable()
        poller = select.poll()
        poller.register(pgconn.socket, select.POLLIN | select.POLLERR | select.POLLHUP)
        if poller.poll(0):  # something to read on an idle connection: ask the server
            return super().is_usable()
        return True
