"""Shared helpers for the API tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from rest_framework.test import APIClient

from grading.models import Assignment


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def graders_of(campaign) -> list:
    return [r.user for r in campaign.roles.filter(role="grader").order_by("pk")]


def my_units(grader, campaign) -> list:
    return [a.unit for a in Assignment.objects.filter(grader=grader, campaign=campaign).order_by("position")]


def event(
    campaign, kind: str, payload: dict[str, Any] | None = None, *, unit=None, query=None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(uuid4()),
        "campaign": campaign.pk,
        "type": kind,
        "payload": payload or {},
        "client_ts": datetime.now(UTC).isoformat(),
        "seq": 1,
        "session_id": "test-session",
    }
    if unit is not None:
        body["unit"] = getattr(unit, "pk", unit)
    if query is not None:
        body["query"] = getattr(query, "pk", query)
    body.update(extra)
    return body


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    """Test users need no slow password hashing (import this into a test module to apply it)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
