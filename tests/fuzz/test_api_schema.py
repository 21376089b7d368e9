"""Schemathesis against /api/schema/, authenticated as a grader and as an organizer, on PostgreSQL:
no server errors, and no response that contradicts the schema (status code, content type, body).

Bounded for CI (FUZZ_EXAMPLES examples per operation and role, derandomized, i.e. a fixed seed);
`make fuzz` runs the same with many more. The same requests meet the same rows in every run: the
database's id sequences start again from 1 for each operation, so which generated ids name the
campaign and its objects does not depend on the tests that ran before in the same process. The
tally of examples and failures goes to test-artifacts/schemathesis-tally.json."""

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
    allow_header_conformance,
    content_type_conformance,
    ensure_resource_availability,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    not_a_server_error,
    object_level_authorization,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
    use_after_free,
)
from schemathesis.core.failures import FailureGroup

from tests.factories import make_campaign, make_user

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TALLY: Counter[str] = Counter()
# Every check schemathesis 4.32.5 has (schemathesis.checks.CHECKS after load_all_checks()); the
# stateful ones (use_after_free, ensure_resource_availability, object_level_authorization) look at
# earlier calls of a scenario and find nothing to compare in these single requests.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    missing_required_header,
    unsupported_method,
    allow_header_conformance,
    use_after_free,
    ensure_resource_availability,
    ignored_auth,
    object_level_authorization,
]

# Committed requests and sequences reset per test: without the reset, the campaign's id was whatever
# the earlier tests of the process left, and a generated id named it in some runs and not in others.
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True, reset_sequences=True)]


@pytest.fixture
def api_schema(transactional_db):
    """The schema served by the app, and the app to send requests to (in this process: like Django's
    test client, requests must not close the test's connection)."""
    from django.core import signals
    from django.db import close_old_connections

    from evalutron.wsgi import application

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    loaded = schemathesis.openapi.from_wsgi("/api/schema/", application)
    # Requests valid by the schema (each must be answered 2xx or a documented refusal, never refused
    # as invalid input) and invalid ones (each must be refused with a 4xx).
    loaded.config.generation.modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    # A refusal is a refusal: a body too large for the endpoint (413) or sent without its length
    # (411) is refused before anything reads it, as the schema declares.
    rejection = loaded.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "411", "413"]
    yield loaded
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


schema = schemathesis.pytest.from_fixture("api_schema")


def _nul_in_a_key(value) -> bool:
    if isinstance(value, dict):
        return any("\x00" in key or _nul_in_a_key(item) for key, item in value.items())
    return isinstance(value, list) and any(_nul_in_a_key(item) for item in value)


@schemathesis.hook
def filter_body(context, body) -> bool:
    """The generator does not apply `propertyNames` (keys without NUL, which PostgreSQL refuses),
    so it offers objects the schema itself refuses as valid ones: they are left out."""
    return not _nul_in_a_key(body)


@pytest.fixture
def tokens(settings) -> dict[str, str]:
    """Tokens of a grader and an organizer of a campaign with units of its own."""
    settings.THROTTLE_RATES = {"token": "100000/min", "anon": "100000/min"}
    settings.THROTTLE_USER_BURST = settings.THROTTLE_USER_SUSTAINED = "1000000/min"
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


def _credentials_refused(case, response) -> bool:
    """Which user names and passwords log in is no part of the schema: a well-formed pair that
    does not is refused with 400 naming the password (tests/grading/test_api*.py hold it to that)."""
    if case.operation.label != "POST /api/auth/token/" or response.status_code != 400:
        return False
    body = response.json()
    return body.get("field") == "password" and body.get("detail") == "unable to log in with these credentials."


SYSTEMS_UPLOADS = {
    "POST /api/campaigns/{campaign_id}/system-orderings/",
    "POST /api/campaigns/{campaign_id}/system-scores/",
}


def _upload_content_refused(case, response) -> bool:
    """Whether a systems upload's rows name the campaign's own queries, units and candidates, and
    whether the campaign's scheme takes that upload, is no part of the schema: such an upload is
    refused with 400 saying `where` (the row, or the campaign) and nothing is imported
    (tests/analysis/test_system_orderings.py and test_systems_section.py hold it to that)."""
    if case.operation.label not in SYSTEMS_UPLOADS or response.status_code != 400:
        return False
    body = response.json()
    return "where" in body and body.get("detail", "").endswith("Nothing was imported.")


def _batch_rejected_per_event(case, response) -> bool:
    """A batch of events is answered 200 with each event's own result: an invalid event in it is
    refused there (`rejected`, with its 4xx and error), not by refusing the whole batch."""
    if case.operation.label != "POST /api/events/" or not isinstance(case.body, list) or response.status_code != 200:
        return False
    results = response.json().get("results", [])
    return any(r.get("status") == "rejected" and 400 <= r.get("http_status", 0) < 500 for r in results)


def _client_ts_outside_window(case, response) -> bool:
    """Whether an event's client_ts lies within the accepted window (the server's clock less
    EVENT_CLIENT_TS_MAX_AGE_SECONDS to plus EVENT_CLIENT_TS_MAX_AHEAD_SECONDS) is no part of the
    schema, which has no bounds for a date-time: a well-formed one outside it is refused with 400
    naming client_ts (tests/hardening/test_degenerate.py holds it to that)."""
    if case.operation.label != "POST /api/events/" or response.status_code != 400:
        return False
    body = response.json()
    return body.get("field") == "client_ts" and "outside the accepted window" in body.get("detail", "")


JOIN_LINK_WRITES = {"POST /api/campaigns/{id}/join-links/", "PATCH /api/campaigns/{id}/join-links/{link_id}/"}


def _join_link_content_refused(case, response) -> bool:
    """Whether a join link's qualification names gold units of the campaign, its return_url is an
    http(s) address and its expires_at lies ahead is no part of the schema: such a link is refused
    with 400 naming that field and nothing is made (tests/grading/test_join_links.py and
    test_qualification.py hold it to that). Its code, currency and rates are in the schema, exactly."""
    if case.operation.label not in JOIN_LINK_WRITES or response.status_code != 400:
        return False
    field = response.json().get("field", "")
    return field in ("return_url", "expires_at") or field.split(".")[0] == "qualification"


@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_answers_every_generated_request_as_its_schema_says(case, tokens):
    for role, key in tokens.items():  # the same request as each role
        TALLY[f"examples_{role}"] += 1
        headers = {"Authorization": f"Token {key}"}
        response = case.call(headers=headers)
        if response.status_code >= 500:
            TALLY["server_errors"] += 1
        skip = set()
        if (
            _credentials_refused(case, response)
            or _upload_content_refused(case, response)
            or _client_ts_outside_window(case, response)
            or _join_link_content_refused(case, response)
        ):
            skip.add(positive_data_acceptance)
            TALLY["refused_by_content"] += 1  # counted, so that a growing share shows
        if _batch_rejected_per_event(case, response):
            skip.add(negative_data_rejection)
            TALLY["batch_rejected_per_event"] += 1
        try:
            case.validate_response(response, checks=[c for c in CHECKS if c not in skip], headers=headers)
        except FailureGroup:  # a BaseExceptionGroup: `except Exception` would not count it
            TALLY["schema_violations"] += 1
            raise
