"""What a client sends for one grading event, and the checks every event's timestamp passes.

Kept apart from events.py so that the recording service and its context (event_context.py) can
both speak of an EventInput without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings

from grading.errors import InvalidValue


@dataclass(frozen=True)
class EventInput:
    id: UUID
    campaign_id: int
    type: str
    client_ts: datetime
    payload: dict[str, Any] = field(default_factory=dict)
    unit_id: int | None = None
    query_id: int | None = None
    seq: int = 0
    session_id: str = ""


def client_ts_window(now: datetime) -> tuple[datetime, datetime]:
    """The client timestamps accepted at server time `now` (docs/design.md §2, Timestamps)."""
    return (
        now - timedelta(seconds=settings.EVENT_CLIENT_TS_MAX_AGE_SECONDS),
        now + timedelta(seconds=settings.EVENT_CLIENT_TS_MAX_AHEAD_SECONDS),
    )


def client_ts_checked(value: Any, *, now: datetime) -> datetime:
    """`value` in UTC when it is an aware datetime inside the window around `now`, else InvalidValue
    naming client_ts, the value and the window. A clock in year 1 or 9999, or an offset PostgreSQL
    cannot store (+16:00), would otherwise reach the append-only log and stay there."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValue(
            "client_ts must be an ISO-8601 timestamp with a time zone.", field="client_ts", value=str(value)
        )
    earliest, latest = client_ts_window(now)
    text = value.isoformat()
    try:
        stamp = value.astimezone(UTC)
    except (OverflowError, ValueError):
        stamp = None
    if stamp is None or not earliest <= stamp <= latest:
        raise InvalidValue(
            f"client_ts {text} is outside the accepted window {_iso(earliest)} to {_iso(latest)} "
            "(the server's clock, less one year to plus one day by default): check the device's clock.",
            field="client_ts",
            value=text,
        )
    return stamp


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
