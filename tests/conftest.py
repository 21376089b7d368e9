import os

import pytest

from tests import services
from tests.server_gate import gate_of


@pytest.fixture(autouse=True)
def _required_services(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("redis"):
        services.require_redis()
    if request.node.get_closest_marker("postgres"):
        request.getfixturevalue("db")
        services.require_postgres()
    if request.node.get_closest_marker("browser"):
        services.chromium_path()


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    # Tests make many users; the production hasher is deliberately slow.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No background thread may outlive a test and write to the next one's database; tests that want
    # embedded automatic runs executed call runs_execute_due themselves.
    settings.ANALYSIS_EMBEDDED_THREAD = False


@pytest.fixture(autouse=True)
def _forget_scheduled_runs() -> None:
    """Campaign ids repeat across tests (each test's database starts afresh): forget the process-local
    knowledge of queued automatic runs."""
    from analysis import scheduling

    scheduling._QUEUED_UNTIL.clear()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):  # noqa: F811 - extends pytest-django's fixture
    """After the session, close connections that threads (live server, workers' helpers) left open on
    PostgreSQL, so that the test database can be dropped instead of lingering."""
    yield
    with django_db_blocker.unblock():
        from django.db import connection

        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture(scope="session", autouse=True)
def _own_cache_keys():
    """On Redis, this process's cache keys under a prefix of its own, cleared without touching the
    other processes' keys or the Celery queues in the same database (``tests/cache.py``)."""
    from django.conf import settings
    from django.test import override_settings

    default = settings.CACHES["default"]
    if not default["BACKEND"].endswith(".RedisCache"):
        yield
        return
    prefix = f"test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    own = {**default, "BACKEND": "tests.cache.PrefixedRedisCache", "KEY_PREFIX": prefix}
    with override_settings(CACHES={"default": own}):
        yield


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    """Throttle and login-failure counts live in the cache, valid API tokens in the process's memory:
    each test starts with none."""
    from django.core.cache import cache

    from grading.api.authentication import memory

    cache.clear()
    memory.clear()


@pytest.fixture(autouse=True)
def _live_server_gate(request: pytest.FixtureRequest):
    """Every test that uses the live server opens its gate, and shuts it (waiting for the requests
    inside) before its database is reset: a request still served during the reset's TRUNCATE would
    deadlock with it (tests/browser/conftest.py). Set up after the database, so torn down before it;
    set up before the fixtures that open browser contexts, so torn down after them."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")
    gate = gate_of(request.getfixturevalue("live_server"))
    gate.open()
    yield
    gate.shut_and_drain()
