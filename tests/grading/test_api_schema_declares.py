"""The OpenAPI schema at /api/schema/ declares what the server does (the fuzzing in tests/fuzz holds
the server to it), and every refusal carries the one error body the schema declares."""

from __future__ import annotations

import json

import pytest
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema() -> dict:
    response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_the_schema_is_valid_openapi_3_1(schema):
    """OpenAPI 3.1, whose schemas are JSON Schema: a key's pattern (``propertyNames``, no NUL) and
    ``type: null`` are part of it, where 3.0 refuses both."""
    assert schema["openapi"] == "3.1.0"
    validate_schema(schema)  # raises on the first place the schema breaks the specification
    # a field of any value that may be null stays "any value": null would match both branches of a oneOf
    assert schema["components"]["schemas"]["ErrorOut"]["properties"]["value"] == {
        "description": "The value found there."
    }
    assert '"oneOf": [{}, {"type": "null"}]' not in json.dumps(schema)


def test_every_operation_declares_the_refusals_it_can_give_with_the_one_error_body(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            for code in ("400", "401", "403", "404", "411", "413", "429"):
                assert code in responses, (method, path, code)
            assert ("415" in responses) == ("requestBody" in operation), (method, path)
            assert responses["429"]["headers"]["Retry-After"]["required"] is True
            assert responses["413"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorOut"
            }
    error = schema["components"]["schemas"]["ErrorOut"]
    assert set(error["required"]) == {"code", "detail"} and {"field", "value"} <= set(error["properties"])


def test_the_schema_carries_the_bounds_the_server_checks(schema):
    events = schema["paths"]["/api/events/"]["post"]["requestBody"]["content"]
    assert list(events) == ["application/json"]
    one, batch = events["application/json"]["schema"]["oneOf"]
    assert (batch["minItems"], batch["maxItems"]) == (1, 500)
    event = schema["components"]["schemas"]["EventIn"]["properties"]
    assert event["id"]["format"] == "uuid" and event["client_ts"]["format"] == "date-time"
    assert event["campaign"]["minimum"] == 1 and event["payload"]["type"] == "object"
    assert "nullable" not in event["payload"]
    campaign_param = next(
        p for p in schema["paths"]["/api/assignments/"]["get"]["parameters"] if p["name"] == "campaign"
    )
    assert (campaign_param["schema"]["minimum"], campaign_param["schema"]["maximum"]) == (1, 2**63 - 1)
    assert list(schema["paths"]["/api/campaigns/"]["post"]["requestBody"]["content"]) == ["application/json"]
    assert schema["components"]["schemas"]["CampaignIn"]["properties"]["name"]["pattern"]


def test_a_refusal_made_before_the_view_runs_carries_a_code():
    anonymous = APIClient().get("/api/campaigns/")
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"
    assert anonymous["WWW-Authenticate"].startswith("Token")
    missing = client_for(make_user()).get("/api/campaigns/999999/analyses/")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_a_status_step_the_campaign_does_not_allow_is_a_conflict_not_invalid_input():
    organizer = make_user()
    campaign = make_campaign(organizer=organizer)  # open
    refused = client_for(organizer).patch(f"/api/campaigns/{campaign.pk}/", {"status": "draft"}, format="json")
    assert refused.status_code == 409
    assert refused.json() == {
        "code": "step_not_allowed",
        "detail": "a open campaign cannot become draft; it can become closed.",
        "field": "status",
        "value": "draft",
    }
