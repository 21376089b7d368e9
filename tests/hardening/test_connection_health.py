"""The database health check at the start of a request (evalutron/postgres/base.py): a healthy idle
connection is trusted without a statement, and a connection the server ended is still found and
replaced before the request's first query."""

import time

import pytest
from django.db import close_old_connections, connection
from django.db.backends.postgresql import base as django_postgres

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's connections")


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_healthy_idle_connection_is_trusted_without_a_statement(monkeypatch):
    connection.ensure_connection()

    def ask_the_server(self):
        raise AssertionError("SELECT 1 sent to a healthy idle connection")

    monkeypatch.setattr(django_postgres.DatabaseWrapper, "is_usable", ask_the_server)
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]
    assert connection.is_usable()


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_ended_is_replaced_at_the_next_request():
    first = backend_pid()
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.execute("SELECT pg_terminate_backend(%s)", [first])
    finally:
        other.close()
    deadline = time.monotonic() + 10
    while connection.is_usable() and time.monotonic() < deadline:  # the server's goodbye is on its way
        time.sleep(0.01)
    assert not connection.is_usable()
    close_old_connections()  # what request_started does: the next query checks the connection first
    assert backend_pid() != first
