"""The event path's SQL (grading/services/event_queries.py, sql_rows.py) reads what the ORM queries it
replaces read and writes what the ORM would write, on both backends, in campaigns left in many
states by random work; the allocation state it keeps equals a rebuild from scratch; and a request
costs a fixed, small number of statements whatever the batch's size."""

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from uuid import UUID, uuid4

import pytest
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from grading.models import Assignment, CampaignRole, GradingEvent, Judgment, UnitAllocation
from grading.models.allocation import QueryAllocation
from grading.models.choices import AssignmentStatus, Policy, Role, Scheme
from grading.services import event_queries, sql_rows
from grading.services.allocation_state import STATE_COLUMNS, allocation_state_build
from grading.services.campaigns import role_grant
from grading.services.event_input import EventInput
from grading.services.events import JUDGMENT_COLUMNS, events_record
from grading.services.tokens import token_get_or_create
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


def fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def random_batch(rng: random.Random, grader, campaign, n: int, seq: list[int]) -> list[EventInput]:
    """A batch of a grader's events on their units: values, comments, skips and views, a unit twice."""
    units = list(Assignment.objects.filter(grader=grader, campaign=campaign).values_list("unit_id", flat=True))
    items = []
    for _ in range(n):
        seq[0] += 1
        unit = rng.choice(units)
        if campaign.scheme == Scheme.BROAD_FINE:
            kind, payload = rng.choice(
                [
                    ("broad_set", {"value": rng.choice(["NS", "SS", "VS"])}),
                    ("fine_set", {"value": rng.randint(0, 100) / 10}),
                ]
            )
        else:
            kind, payload = "score_set", {"value": rng.randint(0, 10)}
        kind, payload = rng.choices(
            [
                (kind, payload),
                ("comment", {"text": f"note {seq[0]} 'quoted' \"é\" \\"}),
                ("skip", {}),
                ("unit_viewed", {}),
            ],
            weights=[8, 1, 1, 1],
        )[0]
        items.append(
            EventInput(
                id=uuid4(),
                campaign_id=campaign.pk,
                type=kind,
                payload=payload,
                unit_id=unit,
                client_ts=datetime.now(UTC),
                seq=seq[0],
                session_id=f"s{rng.randint(0, 2)}",
            )
        )
    return items


def worked_campaign(seed: int, *, scheme=Scheme.BROAD_FINE, policy=Policy.CONSENSUS):
    """A campaign after random batches of events by its graders (and a grader of no campaign unit)."""
    campaign = make_campaign(scheme=scheme, n_queries=3, n_candidates=4, graders=4, overlap=3)
    campaign.policy, campaign.max_overlap = policy, 5
    campaign.save()
    rng, seq = random.Random(seed), [0]
    for _ in range(12):
        grader = rng.choice(graders_of(campaign))
        events_record(grader=grader, items=random_batch(rng, grader, campaign, rng.randint(1, 8), seq))
    return campaign, rng


def state_snapshot(campaign) -> dict:
    rows = UnitAllocation.objects.filter(campaign=campaign)
    counts = QueryAllocation.objects.filter(campaign=campaign).values_list("query_key", "n_rated", "n_disagree")
    return {
        "units": {r.unit_id: tuple(getattr(r, c) for c in STATE_COLUMNS if c != "updated_at") for r in rows},
        "queries": sorted(counts),
    }


@pytest.mark.parametrize(
    "scheme,policy",
    [
        (Scheme.BROAD_FINE, Policy.CONSENSUS),
        (Scheme.BROAD_FINE, Policy.CONFUSABILITY),
        (Scheme.BROAD_FINE, Policy.QUERY_DEVIATION),
        (Scheme.BROAD_FINE, Policy.UNCERTAINTY),
        (Scheme.NUMERIC, Policy.CONSENSUS),
    ],
)
def test_the_state_kept_by_recording_events_equals_a_rebuild(scheme, policy):
    campaign, _ = worked_campaign(7, scheme=scheme, policy=policy)
    allocation_state_build(campaign=campaign)  # the policy changed after the campaign's first build
    rng, seq = random.Random(11), [1000]
    for _ in range(15):
        grader = rng.choice(graders_of(campaign))
        events_record(grader=grader, items=random_batch(rng, grader, campaign, rng.randint(1, 10), seq))
    kept = state_snapshot(campaign)
    assert len(kept["units"]) == campaign.units.count() == 12
    assert sum(n for n, *_ in kept["units"].values()) > 0  # judgments were counted
    allocation_state_build(campaign=campaign)
    assert state_snapshot(campaign) == kept


def orm_locked(grader, campaign_ids, unit_ids) -> list:
    graded = CampaignRole.objects.filter(campaign=OuterRef("campaign"), user=grader, role=Role.GRADER)
    rows = (
        Assignment.objects.filter(grader=grader, campaign_id__in=campaign_ids, unit_id__in=unit_ids)
        .filter(unit__allocation__isnull=False)
        .select_related("campaign", "unit", "unit__allocation")
        .annotate(graded=Exists(graded))
        .order_by("unit_id", "pk")
    )
    return [(fields(a), fields(a.campaign), fields(a.unit), fields(a.unit.allocation), a.graded) for a in rows]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_locked_read_finds_what_the_orm_finds(seed):
    campaign, rng = worked_campaign(seed)
    other, _ = worked_campaign(seed + 10, scheme=Scheme.NUMERIC)
    outsider = make_user()
    role_grant(campaign=campaign, user=outsider, role=Role.ORGANIZER)  # not a grader: `graded` is false
    Assignment.objects.create(campaign=campaign, grader=outsider, unit=campaign.units.first())
    UnitAllocation.objects.filter(unit=campaign.units.last()).delete()  # a unit without a state row
    units = list(campaign.units.values_list("pk", flat=True)) + list(other.units.values_list("pk", flat=True))
    checked = 0
    for grader in [*graders_of(campaign), outsider]:
        asked = rng.sample(units, 10)
        for campaign_ids in ([campaign.pk], [campaign.pk, other.pk], [other.pk]):
            with transaction.atomic():
                found = event_queries.assignments_locked(grader_id=grader.pk, campaign_ids=campaign_ids, unit_ids=asked)
            got = [
                (fields(f.assignment), fields(f.campaign), fields(f.assignment.unit), fields(f.state), f.graded)
                for f in found
            ]
            assert got == orm_locked(grader, campaign_ids, asked)
            assert all(f.assignment.campaign is f.campaign is f.state.campaign for f in found)
            checked += len(got)
    assert checked > 10


def test_timestamps_read_by_hand_are_the_orms_to_the_time_zone():
    """sql_rows.read_cursor reads timestamps with psycopg's own loader on PostgreSQL: the same
    instants, in the same zone object (datetime.UTC), as the ORM's."""
    campaign = make_campaign(status="open")
    unit = campaign.units.first()
    grader = make_user()
    Assignment.objects.create(
        campaign=campaign, grader=grader, unit=unit, completed_at=datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
    )
    stored = Assignment.objects.get(grader=grader)
    table = connection.ops.quote_name(Assignment._meta.db_table)
    with sql_rows.read_cursor(connection) as cursor:
        if connection.vendor == "postgresql":  # the fast loader is the one in use
            loader = cursor.cursor.adapters.get_loader(1184, 0)
            assert loader.__module__.startswith("psycopg_binary"), loader
        cursor.execute(f"SELECT created_at, completed_at FROM {table} WHERE id = %s", [stored.pk])
        row = cursor.fetchone()
    converted = [
        sql_rows.Columns(Assignment, "a", only=[name]).values(row, i, connection)[0]
        for i, name in enumerate(["created_at", "completed_at"])
    ]
    assert converted == [stored.created_at, stored.completed_at]
    assert all(
        value.tzinfo is orm.tzinfo
        for value, orm in zip(converted, [stored.created_at, stored.completed_at], strict=True)
    )


def test_the_read_after_the_locks_finds_what_the_orm_finds():
    campaign, rng = worked_campaign(3)
    numeric, _ = worked_campaign(4, scheme=Scheme.NUMERIC)
    units = list(campaign.units.values_list("pk", flat=True)) + list(numeric.units.values_list("pk", flat=True))
    Assignment.objects.filter(campaign=campaign).order_by("pk").filter(
        pk=Assignment.objects.filter(campaign=campaign).order_by("pk").first().pk
    ).update(repeat=True)  # a hidden repeat is not counted among the unit's assignments
    checked = {"own": 0, "others": 0, "statuses": 0}
    for grader in graders_of(campaign) + graders_of(numeric):
        asked, counted = sorted(rng.sample(units, 12)), sorted(rng.sample(units, 6))
        read = event_queries.judgments_read(grader_id=grader.pk, unit_ids=asked, counted=counted)
        own = {j.unit_id: fields(j) for j in Judgment.objects.filter(grader=grader, unit_id__in=asked)}
        assert {u: fields(j) for u, j in read.own.items()} == own
        others = {u: {} for u in counted}
        for j in Judgment.objects.filter(unit_id__in=counted).exclude(grader=grader):
            others[j.unit_id][j.grader_id] = {name: getattr(j, name) for name in event_queries.VALUE_COLUMNS}
        assert read.others == others
        statuses = {u: {} for u in counted}
        for unit_id, grader_id, status in Assignment.objects.filter(unit_id__in=counted, repeat=False).values_list(
            "unit_id", "grader_id", "status"
        ):
            statuses[unit_id][grader_id] = status
        assert read.statuses == statuses
        checked["own"] += len(own)
        checked["others"] += sum(map(len, others.values()))
        checked["statuses"] += sum(map(len, statuses.values()))
    assert min(checked.values()) > 0, checked


NOW = datetime(2025, 6, 1, 12, 30, 15, 123456, tzinfo=UTC)


def rows_to_write(campaign, grader) -> event_queries.Writes:
    """Every kind of row a batch writes, with awkward values (quotes, backslashes, non-ASCII, JSON,
    decimals, floats that need all their digits, NULLs); fresh instances on each call."""
    mine = list(Assignment.objects.filter(grader=grader, campaign=campaign).order_by("unit_id"))
    judged = {j.unit_id: j for j in Judgment.objects.filter(grader=grader, campaign=campaign)}
    new_units = [a.unit_id for a in mine if a.unit_id not in judged][:2]
    events = [
        GradingEvent(
            id=UUID(int=i + 1),
            campaign=campaign,
            grader=grader,
            unit_id=unit,
            query_id=None,
            type="comment",
            payload={"text": 'it\'s "odd" \\ é 🎵', "n": [1, 2.5, None, True]},
            client_ts=NOW - timedelta(seconds=i),
            server_ts=NOW,
            session_id="sess'ion",
            seq=i,
            guidelines_version=campaign.guidelines_version,
        )
        for i, unit in enumerate(new_units + list(judged)[:1])
    ]
    new = [
        Judgment(
            campaign=campaign,
            grader=grader,
            unit_id=unit,
            broad="SS",
            fine=Decimal("7.5"),
            comment="a 'new' one \\ ü",
            guidelines_version=3,
            last_event=events[i],
            applied={"broad": ["2025-06-01T12:30:15.123456Z", "s", 4]},
        )
        for i, unit in enumerate(new_units)
    ]
    changed = list(judged.values())[:3]
    for i, j in enumerate(changed):
        j.broad, j.fine, j.comment, j.skipped = "NS", Decimal("0.1") * i, f"changed {i} ''", bool(i % 2)
        j.last_event, j.applied = events[-1], {"fine": ["x", "y", i], "skipped": None}
    statuses = [AssignmentStatus.DONE, AssignmentStatus.SKIPPED, AssignmentStatus.OPEN]
    assignments = mine[:3]
    for i, a in enumerate(assignments):
        a.status, a.completed_at = statuses[i], NOW if i < 2 else None
    states = list(UnitAllocation.objects.filter(campaign=campaign).order_by("unit_id")[:3])
    for i, s in enumerate(states):
        s.n_judgments, s.n_assigned, s.n_open = i, i + 1, 1
        s.values, s.spread, s.priority = {"VS": i, "NS": 1}, 0.9182958340544896 * i, 1 / 3
        s.disagree, s.needs_more, s.reason = bool(i), not i, "disagreement"
    return event_queries.Writes(
        events=events,
        judgments_new=new,
        judgments_changed=changed,
        judgment_columns=JUDGMENT_COLUMNS,
        assignments=assignments,
        assignment_columns=["status", "completed_at"],
        states=states,
    )


def orm_write(w: event_queries.Writes) -> None:
    GradingEvent.objects.bulk_create(w.events)
    Judgment.objects.bulk_create(w.judgments_new)
    for j in w.judgments_changed:
        j.save(update_fields=w.judgment_columns)
    for a in w.assignments:
        a.save(update_fields=w.assignment_columns)
    for s in w.states:
        s.save(update_fields=STATE_COLUMNS)


def stored(campaign) -> dict:
    def without_id(obj):
        return {k: v for k, v in fields(obj).items() if k != "id"}

    return {
        "events": sorted((fields(e) for e in GradingEvent.objects.filter(campaign=campaign)), key=str),
        "judgments": sorted((without_id(j) for j in Judgment.objects.filter(campaign=campaign)), key=str),
        "assignments": sorted((fields(a) for a in Assignment.objects.filter(campaign=campaign)), key=str),
        "states": sorted((fields(s) for s in UnitAllocation.objects.filter(campaign=campaign)), key=str),
    }


def test_the_batch_write_stores_what_the_orm_stores(monkeypatch):
    campaign, _ = worked_campaign(5)
    grader = graders_of(campaign)[0]
    monkeypatch.setattr(timezone, "now", lambda: NOW)  # auto_now columns: the same on both sides
    results = []
    for write in (event_queries.batch_write, orm_write):
        with transaction.atomic():
            writes = rows_to_write(campaign, grader)
            assert writes.judgments_new and writes.judgments_changed and writes.events
            write(writes)
            assert all(j.pk is not None and not j._state.adding for j in writes.judgments_new)
            results.append(stored(campaign))
            transaction.set_rollback(True)
    assert results[0] == results[1]


# --- statements per request --------------------------------------------------------------------------
def statements(client: APIClient, body) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/api/events/", body, format="json")
    assert response.status_code in (200, 201), response.content
    return [q["sql"] for q in queries.captured_queries]


def api_events(campaign, units, kind, value, seq) -> list[dict]:
    return [
        {
            "id": str(uuid4()),
            "campaign": campaign.pk,
            "unit": unit,
            "type": kind,
            "payload": {"value": value},
            "client_ts": datetime.now(UTC).isoformat(),
            "seq": seq + i,
            "session_id": "count",
        }
        for i, unit in enumerate(units)
    ]


@pytest.mark.parametrize("batch", [1, 20])
def test_a_request_costs_the_same_few_statements_whatever_its_size(batch, django_capture_on_commit_callbacks):
    """Once the process is warm (the token remembered, an automatic analysis queued): BEGIN, the
    locked read, the read after the locks, one write of everything, COMMIT on PostgreSQL (the test
    runs inside a transaction, so BEGIN and COMMIT are a SAVEPOINT and its RELEASE). SQLite writes
    each table with a statement of its own."""
    campaign = make_campaign(n_queries=2, n_candidates=20, graders=2, overlap=2)
    grader = graders_of(campaign)[0]
    units = list(Assignment.objects.filter(grader=grader).order_by("position").values_list("unit_id", flat=True))
    assert len(units) == 40 and UnitAllocation.objects.filter(campaign=campaign).count() == 40
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_get_or_create(user=grader).key}")
    one = (lambda events: events[0]) if batch == 1 else (lambda events: events)
    with django_capture_on_commit_callbacks(execute=True):
        statements(client, one(api_events(campaign, units[:batch], "broad_set", "VS", 1)))  # warms the process
    with django_capture_on_commit_callbacks(execute=True):
        first = statements(client, one(api_events(campaign, units[batch : 2 * batch], "broad_set", "SS", 100)))
        again = statements(client, one(api_events(campaign, units[:batch], "fine_set", 5.0, 200)))
    postgres = connection.vendor == "postgresql"
    # New judgments: SQLite writes the events, the units' state and the judgments.
    assert len(first) == (5 if postgres else 7), first
    # Changed judgments that complete their assignments: events, judgments, assignments, state.
    assert len(again) == (5 if postgres else 8), again
    assert first[0].startswith("SAVEPOINT") and first[-1].startswith("RELEASE SAVEPOINT")
    assert Judgment.objects.filter(grader=grader, fine=5, broad__isnull=False).count() == batch
