"""Schemathesis against /api/schema/, authenticated as a grader and as an organizer, on PostgreSQL:
no server errors, and no response that contradicts the schema (status code, content type, body).

Bounded for CI (FUZZ_EXAMPLES examples per operation and role, derandomized, i.e. a fixed seed);
`make fuzz` runs the same with many more. The tally of examples and failures goes to
test-artifacts/schemathesis-tally.json."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.factories import make_campaign, make_user

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TALLY: Counter[str] = Counter()
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture
def api_schema(db):
    """The schema served by the app, and the app to send requests to (in this process, inside the
    test's transaction: like Django's test client, requests must not close the connection)."""
    from django.core import signals
    from django.db import close_old_connections

    from evalutron.wsgi import application

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    loaded = schemathesis.openapi.from_wsgi("/api/schema/", application)
    # Valid requests by the schema (CI); the refusals of invalid input are tested by name elsewhere.
    loaded.config.generation.modes = [GenerationMode.POSITIVE]
    yield loaded
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture
def tokens(settings) -> dict[str, str]:
    """Tokens of a grader and an organizer of a campaign with units of its own."""
    settings.THROTTLE_RATES = {"token": "100000/min", "anon": "100000/min"}
    grader, organizer = make_user(), make_user()
    make_campaign(graders=[grader], n_queries=1, n_candidates=2, organizer=organizer)
    return {"grader": Token.objects.create(user=grader).key, "organizer": Token.objects.create(user=organizer).key}


@pytest.fixture(scope="module", autouse=True)
def _write_tally():
    yield
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "schemathesis-tally.json").write_text(
        json.dumps({"server_errors": 0, "schema_violations": 0, **TALLY}, indent=2, sort_keys=True) + "\n"
    )


@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_answers_every_generated_request_as_its_schema_says(case, tokens):
    for role, key in tokens.items():  # the same request as each role
        TALLY[f"examples_{role}"] += 1
        response = case.call(headers={"Authorization": f"Token {key}"})
        if response.status_code >= 500:
            TALLY["server_errors"] += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception:
            TALLY["schema_violations"] += 1
            raise
