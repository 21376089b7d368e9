"""Recording grading events: the only way judgments and orderings change.

Every write appends a GradingEvent and updates the derived Judgment or Ordering in the same
transaction. The client-generated event id is the idempotency key: the same id twice is stored
once and answered the same.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any
from uuid import UUID

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from grading.errors import CampaignClosed, EventConflict, InvalidValue, NotAssigned, NotFound
from grading.hooks import judgments_changed
from grading.models import Assignment, Campaign, GradingEvent, Judgment, Ordering, Query, Unit
from grading.models.choices import AssignmentStatus, EventType, Role, Scheme
from grading.services import payloads

# Event types about one unit, about a query's ordering, and about the campaign as a whole.
UNIT_EVENTS = {
    EventType.UNIT_VIEWED, EventType.BROAD_SET, EventType.FINE_SET, EventType.SCORE_SET, EventType.LABEL_SET,
    EventType.PAIRWISE_SET, EventType.SKIP, EventType.HINT_SHOWN,
}
QUERY_EVENTS = {EventType.ORDERING_CHANGED, EventType.ORDERING_SUBMITTED}
# Auditions and comments may be about a unit or about a query's own media.
UNIT_OR_QUERY_EVENTS = {EventType.AUDITION, EventType.COMMENT}
MAX_PAYLOAD_BYTES = 8192


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


@dataclass
class EventOutcome:
    event: GradingEvent
    replayed: bool = False
    judgment: Judgment | None = None
    ordering: Ordering | None = None
    hint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": str(self.event.id),
            "status": "replayed" if self.replayed else "stored",
            "event": event_summary(self.event),
        }
        if self.judgment is not None:
            out["judgment"] = judgment_summary(self.judgment)
        if self.ordering is not None:
            out["ordering"] = {"query": self.ordering.query_id, "items": self.ordering.items}
        if self.hint:
            out["hint"] = self.hint
        return out


def event_summary(event: GradingEvent) -> dict[str, Any]:
    return {
        "type": event.type,
        "campaign": event.campaign_id,
        "unit": event.unit_id,
        "query": event.query_id,
        "seq": event.seq,
        "server_ts": event.server_ts.isoformat(),
    }


def judgment_summary(judgment: Judgment) -> dict[str, Any]:
    return {
        "unit": judgment.unit_id,
        "broad": judgment.broad,
        "fine": float(judgment.fine) if judgment.fine is not None else None,
        "score": judgment.score,
        "label": judgment.label,
        "verdict": judgment.verdict,
        "comment": judgment.comment,
        "skipped": judgment.skipped,
        "guidelines_version": judgment.guidelines_version,
    }


@transaction.atomic
def event_record(*, grader: AbstractBaseUser, data: EventInput) -> EventOutcome:
    """Validate and store one event, and apply it to the grader's judgment or ordering.

    Raises a GradingError subclass (nothing stored) when the event is not acceptable.
    """
    existing = GradingEvent.objects.filter(pk=data.id).first()
    if existing is not None:
        return _replay(existing, grader=grader, data=data)
    campaign = _campaign_for_grader(grader, data.campaign_id)
    if data.type not in EventType.values:
        raise InvalidValue(f"type {data.type!r} is not one of {', '.join(EventType.values)}.", field="type", value=data.type)
    payloads.check_type_fits_scheme(campaign, data.type)
    unit, query = _target(campaign, data)
    assignment = _assignment_for(grader, campaign, unit, query)
    value = payloads.parse(campaign, data.type, _payload(data.payload), query=query)
    try:
        with transaction.atomic():
            event = GradingEvent.objects.create(
                id=data.id, campaign=campaign, grader=grader, unit=unit, query=query, type=data.type,
                payload=data.payload, client_ts=data.client_ts, session_id=data.session_id[:64], seq=data.seq,
                guidelines_version=campaign.guidelines_version,
            )
    except IntegrityError:
        # The same id arrived concurrently and the other request committed first.
        return _replay(GradingEvent.objects.get(pk=data.id), grader=grader, data=data)
    outcome = EventOutcome(event=event)
    if data.type == EventType.ORDERING_SUBMITTED:
        outcome.ordering = _apply_ordering(event, campaign, assignment, value)
    elif data.type in payloads.JUDGMENT_FIELD:
        outcome.judgment = _apply_judgment(event, campaign, assignment, data.type, value)
        outcome.hint = payloads.consistency_hint(campaign, outcome.judgment)
    transaction.on_commit(partial(judgments_changed, campaign.pk))  # reports read events too (stability)
    return outcome


def _replay(existing: GradingEvent, *, grader: AbstractBaseUser, data: EventInput) -> EventOutcome:
    if existing.grader_id != grader.pk or existing.type != data.type or existing.campaign_id != data.campaign_id:
        raise EventConflict(f"event id {data.id} was already used for a different event.", field="id", value=str(data.id))
    judgment = None
    if existing.unit_id is not None:
        judgment = Judgment.objects.filter(grader=grader, unit_id=existing.unit_id).first()
    return EventOutcome(event=existing, replayed=True, judgment=judgment)


def _payload(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise InvalidValue("payload must be a JSON object.", field="payload", value=payload)
    if len(json.dumps(payload, default=str)) > MAX_PAYLOAD_BYTES:
        raise InvalidValue(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes.", field="payload", value="(too large)")
    return payload


def _campaign_for_grader(grader: AbstractBaseUser, campaign_id: int) -> Campaign:
    campaign = Campaign.objects.filter(pk=campaign_id, roles__user=grader, roles__role=Role.GRADER).first()
    if campaign is None:
        raise NotFound(f"campaign {campaign_id} does not exist or you do not grade in it.", field="campaign", value=campaign_id)
    if not campaign.is_open:
        raise CampaignClosed(f"campaign {campaign_id} is {campaign.status}: it takes no judgments.", field="campaign", value=campaign_id)
    return campaign


def _target(campaign: Campaign, data: EventInput) -> tuple[Unit | None, Query | None]:
    unit = query = None
    if data.unit_id is not None:
        unit = Unit.objects.filter(pk=data.unit_id, campaign=campaign).select_related("query").first()
        if unit is None:
            raise NotFound(f"unit {data.unit_id} does not exist in campaign {campaign.pk}.", field="unit", value=data.unit_id)
        query = unit.query
    elif data.query_id is not None:
        query = Query.objects.filter(pk=data.query_id, campaign=campaign).first()
        if query is None:
            raise NotFound(f"query {data.query_id} does not exist in campaign {campaign.pk}.", field="query", value=data.query_id)
    kind = data.type
    if kind in UNIT_EVENTS and unit is None:
        raise InvalidValue(f"a {kind} event needs a unit.", field="unit", value=None)
    if kind in QUERY_EVENTS and query is None:
        raise InvalidValue(f"a {kind} event needs a query.", field="query", value=None)
    if kind in UNIT_OR_QUERY_EVENTS and unit is None and query is None:
        raise InvalidValue(f"a {kind} event needs a unit or a query.", field="unit", value=None)
    return unit, query


def _assignment_for(grader: AbstractBaseUser, campaign: Campaign, unit: Unit | None, query: Query | None) -> Assignment | None:
    """The grader's assignment for the target, locked for the rest of the transaction."""
    if unit is None and query is None:
        return None  # campaign-wide events (guidelines viewed)
    mine = Assignment.objects.select_for_update().filter(campaign=campaign, grader=grader)
    if unit is not None:
        assignment = mine.filter(unit=unit).first()
        if assignment is None:
            raise NotAssigned(f"unit {unit.pk} is not assigned to you.", field="unit", value=unit.pk)
        return assignment
    assignment = mine.filter(query=query, unit__isnull=True).first() or mine.filter(unit__query=query).first()
    if assignment is None:
        raise NotAssigned(f"query {query.pk} is not assigned to you.", field="query", value=query.pk)
    return assignment


def _stamp(event: GradingEvent) -> list[Any]:
    return [event.client_ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), event.session_id, event.seq]


def _apply_judgment(event: GradingEvent, campaign: Campaign, assignment: Assignment, kind: str, value: Any) -> Judgment:
    judgment, _ = Judgment.objects.get_or_create(grader_id=event.grader_id, unit_id=event.unit_id, defaults={"campaign": campaign})
    field_name = payloads.JUDGMENT_FIELD[kind]
    stamp, previous = _stamp(event), judgment.applied.get(field_name)
    # Same session: order by sequence number; otherwise by the client's clock.
    newer = previous is None or (
        stamp[2] >= previous[2] if previous[1] == stamp[1] and stamp[1] else stamp[0] >= previous[0]
    )
    if newer:
        setattr(judgment, field_name, value)
        judgment.applied = {**judgment.applied, field_name: stamp}
        if field_name != "skipped" and kind != EventType.COMMENT:
            judgment.skipped = False
    judgment.guidelines_version = campaign.guidelines_version
    judgment.last_event = event
    judgment.save()
    _update_assignment(assignment, campaign, judgment)
    return judgment


def _update_assignment(assignment: Assignment, campaign: Campaign, judgment: Judgment) -> None:
    if payloads.judgment_complete(campaign, judgment):
        status = AssignmentStatus.DONE
    elif judgment.skipped:
        status = AssignmentStatus.SKIPPED
    else:
        status = AssignmentStatus.OPEN
    if status != assignment.status:
        assignment.status = status
        assignment.completed_at = timezone.now() if status != AssignmentStatus.OPEN else None
        assignment.save(update_fields=["status", "completed_at"])


def _apply_ordering(event: GradingEvent, campaign: Campaign, assignment: Assignment, items: list[str]) -> Ordering:
    ordering, _ = Ordering.objects.update_or_create(
        grader_id=event.grader_id, query_id=event.query_id,
        defaults={"campaign": campaign, "items": items, "guidelines_version": campaign.guidelines_version, "last_event": event},
    )
    if assignment.status != AssignmentStatus.DONE:
        assignment.status = AssignmentStatus.DONE
        assignment.completed_at = timezone.now()
        assignment.save(update_fields=["status", "completed_at"])
    return ordering


__all__ = ["EventInput", "EventOutcome", "event_record", "Scheme"]
