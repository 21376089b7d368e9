"""Availability of the outside services some tests need.

On a laptop a missing service skips the test with a reason; in CI (CI=true) it fails the test,
because there every service-backed test must really run.
"""

from __future__ import annotations

import os
import shutil
import socket
from urllib.parse import urlparse

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def broker_url() -> str:
    return os.environ["EVALUTRON_TEST_BROKER_URL"]


def redis_reachable(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def require_redis() -> str:
    url = broker_url()
    if not redis_reachable(url):
        unavailable(f"Redis is not reachable at {url}")
    return url


def require_postgres() -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        unavailable("the suite is not running on PostgreSQL (set DATABASE_URL=postgres://...)")


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        unavailable("Chromium is not installed (apt-get install chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        unavailable("the playwright package is not installed")
    return path
