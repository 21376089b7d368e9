"""Every SQLite database gets WAL, IMMEDIATE transactions and a busy timeout, whether embedded or
named by a sqlite:// DATABASE_URL; and concurrent graders on SQLite lose nothing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from grading.models import GradingEvent
from tests.factories import make_campaign
from tests.grading.api_helpers import client_for, event, fast_passwords, graders_of, my_units  # noqa: F401
from tests.grading.test_allocation_concurrency import run_threads

ROOT = Path(__file__).resolve().parents[2]
PRINT = (
    "import django, json, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'evalutron.settings'; django.setup(); "
    "from django.conf import settings; d = settings.DATABASES['default']; "
    "print(json.dumps({'engine': d['ENGINE'], 'options': d.get('OPTIONS', {})}))"
)


def settings_under(tmp_path, **env) -> dict:
    environ = {**os.environ, "DEBUG": "true", "SECRET_KEY": "x" * 50, "DATA_DIR": str(tmp_path), **env}
    if "DATABASE_URL" not in env:
        environ.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PRINT], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("url", [None, "sqlite:///{tmp}/by-url.sqlite3"])
def test_every_sqlite_database_gets_the_same_options(tmp_path, url):
    env = {"DATABASE_URL": url.format(tmp=tmp_path)} if url else {}
    found = settings_under(tmp_path, **env)
    assert found["engine"] == "django.db.backends.sqlite3"
    assert found["options"] == {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL;",
    }


def test_the_busy_timeout_is_configurable(tmp_path):
    found = settings_under(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/x.sqlite3", SQLITE_BUSY_TIMEOUT="45")
    assert found["options"]["timeout"] == 45


@pytest.mark.both_backends  # `make test` on PostgreSQL runs it again on SQLite
@pytest.mark.django_db(transaction=True)
def test_twelve_graders_writing_at_once_on_sqlite_lose_nothing():
    if connection.vendor != "sqlite":
        pytest.skip("this test is about SQLite; PostgreSQL has its own in test_allocation_concurrency.py")
    campaign = make_campaign(graders=12, n_queries=2, n_candidates=4, overlap=12)
    graders = graders_of(campaign)
    statuses: list[int] = []

    def grader_posts(i: int) -> None:
        api = client_for(graders[i])
        for seq, unit in enumerate(my_units(graders[i], campaign)):
            for kind, payload in (("broad_set", {"value": "SS"}), ("fine_set", {"value": 4.5})):
                response = api.post(
                    "/api/events/",
                    json.dumps(event(campaign, kind, payload, unit=unit, seq=seq)),
                    content_type="application/json",
                )
                statuses.append(response.status_code)

    errors = run_threads(grader_posts, len(graders))
    assert errors == []
    assert len(statuses) == 12 * 8 * 2
    assert set(statuses) == {201}
    assert GradingEvent.objects.count() == 12 * 8 * 2
