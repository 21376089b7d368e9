"""Adjudication (docs/design.md §5.6): an organizer records the value of a unit the graders could
not settle, with a note. It is an event of its own type by the organizer, kept apart from grader
judgments; ground truth takes the value and flags it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.errors import InvalidValue, NotAllowed
from grading.models import Adjudication, CampaignRole, GradingEvent, Unit
from grading.models.choices import EventType, Role, Scheme
from grading.services import payloads
from grading.services.audit import audit_record

# The event whose value check an adjudicated value of each scheme passes.
VALUE_KIND = {
    Scheme.BROAD_FINE: EventType.BROAD_SET,
    Scheme.NUMERIC: EventType.SCORE_SET,
    Scheme.CATEGORICAL: EventType.LABEL_SET,
    Scheme.PAIRWISE: EventType.PAIRWISE_SET,
}
MAX_NOTE = 5000


def can_adjudicate(*, user: AbstractBaseUser, campaign_id: int) -> bool:
    return bool(
        user.is_staff or CampaignRole.objects.filter(campaign_id=campaign_id, user=user, role=Role.ORGANIZER).exists()
    )


def unit_value_checked(*, unit: Unit, value: Any, purpose: str) -> Any:
    """An organizer's value for a unit (adjudicated or gold), checked like a grader's value."""
    campaign = unit.campaign
    kind = VALUE_KIND.get(campaign.scheme)
    if kind is None:
        raise InvalidValue(
            f"{campaign.get_scheme_display()} campaigns have no per-unit value to {purpose}.",
            field="unit",
            value=unit.pk,
        )
    if campaign.scheme == Scheme.NUMERIC and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidValue(f"value must be a number, got {value!r}.", field="value", value=value) from None
    try:
        return payloads.parse(campaign, kind, {"value": value}, query=None)
    except InvalidValue as exc:  # the same checks as a grader's value, named as this form's field
        raise InvalidValue(exc.message.replace("payload.value", "value"), field="value", value=value) from None


def organizer_event_record(
    *, organizer: AbstractBaseUser, unit: Unit, kind: str, payload: dict[str, Any], event_id: UUID | None = None
) -> GradingEvent:
    """Append an organizer's event about a unit (one of ORGANIZER_EVENTS). The caller holds the
    transaction that also writes what the event records, so neither is stored without the other."""
    return GradingEvent.objects.create(
        id=event_id or uuid4(),
        campaign=unit.campaign,
        grader=organizer,
        unit=unit,
        query_id=unit.query_id,
        type=kind,
        payload=payload,
        client_ts=datetime.now(UTC),
        guidelines_version=unit.campaign.guidelines_version,
    )


@transaction.atomic
def adjudication_record(
    *, organizer: AbstractBaseUser, unit: Unit, value: Any, note: str = "", event_id: UUID | None = None
) -> Adjudication:
    """Validate and store an organizer's value for a unit (the same checks as a grader's value)."""
    campaign = unit.campaign
    if not can_adjudicate(user=organizer, campaign_id=campaign.pk):
        raise NotAllowed(
            f"only organizers of campaign {campaign.pk} adjudicate its units.", field="unit", value=unit.pk
        )
    parsed = unit_value_checked(unit=unit, value=value, purpose="adjudicate")
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise InvalidValue(f"note is longer than {MAX_NOTE} characters.", field="note", value=len(note))
    previous = Adjudication.objects.select_for_update().filter(unit=unit).values("value", "note").first()
    event = organizer_event_record(
        organizer=organizer,
        unit=unit,
        kind=EventType.ADJUDICATED,
        payload={"value": parsed, "note": note},
        event_id=event_id,
    )
    adjudication, _ = Adjudication.objects.update_or_create(
        unit=unit,
        defaults={"campaign": campaign, "value": str(parsed), "note": note, "organizer": organizer, "event": event},
    )
    audit_record(
        actor=organizer,
        campaign=campaign,
        action="unit.adjudicated",
        target=unit.external_id,
        before=previous,
        after={"value": adjudication.value, "note": note},
    )
    return adjudication
