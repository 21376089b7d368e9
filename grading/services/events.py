"""Recording grading events: the only way judgments and orderings change.

Every write appends a GradingEvent and updates the derived Judgment or Ordering in the same
transaction. The client-generated event id is the idempotency key: the same event sent twice is
stored once and answered the same; the same id with different content is a conflict (409). The
client's clock is checked against a window and stored in UTC, but never decides which value is
current (docs/design.md §2, Timestamps).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from grading.errors import EventConflict, GradingError, InvalidValue
from grading.hooks import judgments_changed
from grading.models import Assignment, Campaign, GradingEvent, Judgment, Ordering, RepeatAnswer
from grading.models.allocation import UnitAllocation
from grading.models.choices import AssignmentSource, AssignmentStatus, EventType
from grading.services import allocation_state, payloads, qualification, repeats
from grading.services.event_context import EventContext
from grading.services.event_input import EventInput, client_ts_checked
from grading.services.event_queries import Writes, batch_write
from grading.services.query_deviation import counted, query_counts_apply
from grading.services.sql_rows import new_instance

MAX_PAYLOAD_BYTES = 8192
EVENT_TYPES = tuple(EventType.values)  # (EventType.values builds its list on every call)
_encode = json.JSONEncoder(default=str).encode  # json.dumps(..., default=str) builds an encoder per call


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
        "server_ts": _isoformat(event.server_ts),
    }


_last_moment: tuple[datetime | None, str] = (None, "")


def _isoformat(moment: datetime) -> str:
    """moment.isoformat(), remembering the last moment written: every event of a batch has the
    batch's one server_ts, and an aware datetime's isoformat is slow. By identity (the remembered
    object is held, so its id cannot be reused); one tuple, swapped whole, so threads share it safely."""
    global _last_moment
    last = _last_moment
    if last[0] is moment:
        return last[1]
    text = moment.isoformat()
    _last_moment = (moment, text)
    return text


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


def event_record(*, grader: AbstractBaseUser, data: EventInput) -> EventOutcome:
    """Validate and store one event, and apply it to the grader's judgment or ordering.

    Raises a GradingError subclass (nothing stored) when the event is not acceptable.
    """
    result = events_record(grader=grader, items=[data])[0]
    if isinstance(result, GradingError):
        raise result
    return result


def events_record(*, grader: AbstractBaseUser, items: list[EventInput]) -> list[EventOutcome | GradingError]:
    """Record a batch of one grader's events, in order; each is accepted or rejected on its own.

    Returns, per event, its outcome or the GradingError that rejected it (nothing of a rejected
    event is stored). The batch is written with a handful of queries. It is first tried as if every
    id were new (replays are rare: a client retrying after a lost answer); when an id turns out to be
    stored already, the batch is redone looking ids up first, and should a concurrent request store
    one of the same ids meanwhile, one event per transaction.
    """
    for look_up in (False, True):
        try:
            return _record_batch(grader, items, look_up_ids=look_up)
        except IntegrityError:
            continue
    return [_record_alone(grader, item) for item in items]


def _record_alone(grader: AbstractBaseUser, item: EventInput) -> EventOutcome | GradingError:
    try:
        return _record_batch(grader, [item])[0]
    except IntegrityError:
        # The same id arrived concurrently and the other request committed first.
        existing = GradingEvent.objects.filter(pk=item.id).first()
        if existing is None:
            raise
        try:
            return _replay(existing, grader=grader, data=item)
        except GradingError as exc:
            return exc


@transaction.atomic
def _record_batch(
    grader: AbstractBaseUser,
    items: list[EventInput],
    *,
    look_up_ids: bool = True,
) -> list[EventOutcome | GradingError]:
    existing = {e.pk: e for e in GradingEvent.objects.filter(pk__in=[i.id for i in items])} if look_up_ids else {}
    context = EventContext(grader, (i for i in items if i.id not in existing))
    batch = _Batch()
    results: list[EventOutcome | GradingError] = []
    for item in items:
        try:
            if item.id in existing:
                results.append(_replay(existing[item.id], grader=grader, data=item, judgments=context.judgments))
                continue
            outcome = _accept(context, batch, item)
            existing[item.id] = outcome.event
            results.append(outcome)
        except GradingError as exc:
            results.append(exc)
    # Adaptive allocation's per-unit state follows the judgments in this same transaction (§5.6):
    # units whose state row is locked in the context are decided here and written with the batch.
    changed = {*batch.new_judgments, *batch.changed_judgments, *(a.unit_id for a in batch.assignments.values())}
    changed.discard(None)
    states = [context.states[u] for u in sorted(changed) if u in context.states]
    before = {row.unit_id: counted(row) for row in states}
    allocation_state.unit_states_decide(rows=states, tallies=context.tallies(row.unit_id for row in states))
    batch.write(states)
    allocation_state.units_changed(unit_ids=[u for u in changed if u not in context.states])
    query_counts_apply(before=before, rows=states)
    for campaign_id in sorted(batch.qualifying):  # a crowd participant's qualification units (docs/design.md §2)
        qualification.qualification_decide(grader=grader, campaign=context.campaigns[campaign_id])
    for campaign_id in batch.campaigns:
        repeats.repeat_add_due(grader=grader, campaign=context.campaigns[campaign_id])  # hidden repeats (§5.6)
        transaction.on_commit(partial(judgments_changed, campaign_id))  # reports read events too (stability)
    return results


def _accept(context: EventContext, batch: _Batch, data: EventInput) -> EventOutcome:
    """Check one event against the context and apply it in memory (written by batch.write())."""
    campaign = context.campaign(data.campaign_id)
    client_ts = client_ts_checked(data.client_ts, now=batch.now)
    if data.type not in EVENT_TYPES:
        raise InvalidValue(
            f"type {data.type!r} is not one of {', '.join(EventType.values)}.", field="type", value=data.type
        )
    payloads.check_type_fits_scheme(campaign, data.type)
    unit, query = context.target(campaign, data)
    assignment = context.assignment(campaign, unit, query)
    value = payloads.parse(campaign, data.type, _payload(data.payload), query=query)
    event = new_instance(  # by ids: the related objects are at hand, and never read through the event
        GradingEvent,
        id=data.id,
        campaign_id=campaign.pk,
        grader_id=context.grader.pk,
        unit_id=unit.pk if unit is not None else None,
        type=data.type,
        query_id=unit.query_id if unit is not None else getattr(query, "pk", None),
        payload=data.payload,
        client_ts=client_ts,
        session_id=data.session_id[:64],
        seq=data.seq,
        guidelines_version=campaign.guidelines_version,
        server_ts=batch.now,
    )
    batch.events.append(event)
    batch.campaigns.add(campaign.pk)
    outcome = EventOutcome(event=event)
    if data.type == EventType.ORDERING_SUBMITTED:
        batch.orderings.append((outcome, campaign, value))
        _set_assignment_status(batch, assignment, AssignmentStatus.DONE)
    elif data.type in payloads.JUDGMENT_FIELD and unit is not None:
        outcome.judgment = _apply_judgment(context, batch, event, campaign, assignment, data.type, value)
        outcome.hint = payloads.consistency_hint(campaign, outcome.judgment)
    return outcome


class _Batch:
    """Rows to write at the end of a batch: a few bulk statements instead of one per event."""

    def __init__(self) -> None:
        self.now = timezone.now()
        self.events: list[GradingEvent] = []
        self.new_judgments: dict[int, Judgment] = {}
        self.changed_judgments: dict[int, Judgment] = {}
        self.assignments: dict[int, Assignment] = {}
        self.orderings: list[tuple[EventOutcome, Campaign, list[str]]] = []
        self.campaigns: set[int] = set()
        self.repeat_answers: dict[int, RepeatAnswer] = {}  # by assignment id (hidden repeats, §5.6)
        self.qualifying: set[int] = set()  # campaigns where a qualification assignment changed status

    def write(self, states: list[UnitAllocation]) -> None:
        """Events, judgments, assignments and the units' decided state rows in one statement
        (event_queries.batch_write); hidden repeats' answers and orderings, rarer, by the ORM."""
        batch_write(
            Writes(
                events=self.events,
                judgments_new=list(self.new_judgments.values()),
                judgments_changed=list(self.changed_judgments.values()),
                judgment_columns=JUDGMENT_COLUMNS,
                assignments=list(self.assignments.values()),
                assignment_columns=["status", "completed_at"],
                states=states,
            )
        )
        for answer in self.repeat_answers.values():  # few: a small share of a grader's work
            answer.save()
        for outcome, campaign, items in self.orderings:
            event = outcome.event
            outcome.ordering, _ = Ordering.objects.update_or_create(
                grader_id=event.grader_id,
                query_id=event.query_id,
                defaults={
                    "campaign": campaign,
                    "items": items,
                    "guidelines_version": campaign.guidelines_version,
                    "last_event": event,
                },
            )


JUDGMENT_COLUMNS = [
    "broad",
    "fine",
    "score",
    "label",
    "verdict",
    "comment",
    "skipped",
    "guidelines_version",
    "last_event",
    "applied",
    "updated_at",
]


def _replay(
    existing: GradingEvent, *, grader: AbstractBaseUser, data: EventInput, judgments: dict[int, Judgment] | None = None
) -> EventOutcome:
    if not _same_event(existing, grader=grader, data=data):
        raise EventConflict(
            f"event id {data.id} was already used for a different event: a new event needs a new id.",
            field="id",
            value=str(data.id),
        )
    judgment = None
    if existing.unit_id is not None:
        # An event of a hidden repeat is answered with the repeat's answer, as when it was stored (§5.6).
        judgment = (
            RepeatAnswer.objects.filter(
                grader=grader, unit_id=existing.unit_id, assignment__created_at__lte=existing.server_ts
            ).first()
            or (judgments or {}).get(existing.unit_id)
            or Judgment.objects.filter(grader=grader, unit_id=existing.unit_id).first()
        )
    return EventOutcome(event=existing, replayed=True, judgment=judgment)


def _same_event(existing: GradingEvent, *, grader: AbstractBaseUser, data: EventInput) -> bool:
    """Whether `data` is a resend of `existing` (a replay) rather than new content under a used id.
    The client clock is left out: a script that resends without a timestamp gets the server's."""
    # A unit event stores its unit's query; the query a client sends with a unit is not used.
    same_target = existing.unit_id == data.unit_id and (
        existing.unit_id is not None or existing.query_id == data.query_id
    )
    return (
        existing.grader_id == grader.pk
        and existing.campaign_id == data.campaign_id
        and existing.type == data.type
        and same_target
        and existing.payload == data.payload
        and existing.seq == data.seq
        and existing.session_id == data.session_id[:64]
    )


def _payload(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise InvalidValue("payload must be a JSON object.", field="payload", value=payload)
    if len(_encode(payload)) > MAX_PAYLOAD_BYTES:
        raise InvalidValue(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes.", field="payload", value="(too large)")
    return payload


def _stamp(event: GradingEvent) -> list[Any]:
    return [event.server_ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), event.session_id, event.seq]


def _supersedes(stamp: list[Any], previous: list[Any] | None) -> bool:
    """Whether an event stamped `stamp` (server time, session, seq) replaces the value set by
    `previous`. Within one page session the sequence number decides (requests may overtake each
    other); across sessions the server's arrival order, i.e. the event arriving now wins. Client
    clocks never decide: a clock running a day fast would otherwise freeze the value
    (docs/design.md §2, Timestamps)."""
    if previous is None:
        return True
    same_session = bool(stamp[1]) and previous[1] == stamp[1]
    return stamp[2] >= previous[2] if same_session else True


def _apply_judgment(
    context: EventContext,
    batch: _Batch,
    event: GradingEvent,
    campaign: Campaign,
    assignment: Assignment,
    kind: str,
    value: Any,
) -> Judgment:
    if assignment.repeat:  # a hidden repeat: its own answer, never the grader's Judgment (§5.6)
        judgment = _repeat_answer(batch, event, campaign, assignment)
    else:
        judgment = context.judgments.get(event.unit_id)
        if judgment is None:
            judgment = new_instance(
                Judgment, campaign_id=campaign.pk, grader_id=event.grader_id, unit_id=event.unit_id, applied={}
            )
            context.judgments[event.unit_id] = judgment
            batch.new_judgments[event.unit_id] = judgment
        elif event.unit_id not in batch.new_judgments:
            batch.changed_judgments[event.unit_id] = judgment
    field_name = payloads.JUDGMENT_FIELD[kind]
    stamp = _stamp(event)
    if _supersedes(stamp, judgment.applied.get(field_name)):
        setattr(judgment, field_name, value)
        judgment.applied = {**judgment.applied, field_name: stamp}
        if field_name != "skipped" and kind != EventType.COMMENT:
            judgment.skipped = False
    judgment.guidelines_version = campaign.guidelines_version
    judgment.last_event_id = event.pk
    judgment.updated_at = batch.now
    if payloads.judgment_complete(campaign, judgment):
        status = AssignmentStatus.DONE
    elif judgment.skipped:
        status = AssignmentStatus.SKIPPED
    else:
        status = AssignmentStatus.OPEN
    _set_assignment_status(batch, assignment, status)
    return judgment


def _repeat_answer(batch: _Batch, event: GradingEvent, campaign: Campaign, assignment: Assignment) -> RepeatAnswer:
    """The answer of a repeat assignment (it has the Judgment's value fields), from this batch or stored."""
    answer = batch.repeat_answers.get(assignment.pk)
    if answer is None:
        answer = RepeatAnswer.objects.filter(pk=assignment.pk).first() or RepeatAnswer(
            assignment=assignment, campaign=campaign, grader_id=event.grader_id, unit_id=event.unit_id, applied={}
        )
        batch.repeat_answers[assignment.pk] = answer
    return answer


def _set_assignment_status(batch: _Batch, assignment: Assignment, status: str) -> None:
    if status != assignment.status:
        assignment.status = status
        assignment.completed_at = batch.now if status != AssignmentStatus.OPEN else None
        batch.assignments[assignment.pk] = assignment
        if assignment.source == AssignmentSource.QUALIFY:  # read with the assignment: no statement for others
            batch.qualifying.add(assignment.campaign_id)


__all__ = ["EventInput", "EventOutcome", "event_record", "events_record"]
