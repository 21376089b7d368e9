"""Concurrency against PostgreSQL: 20 clients posting events with deliberate duplicate ids, and
graders racing for the last adaptive slot."""

import json
import random
import threading
import time
from uuid import uuid4

import pytest
from django.db import connection, transaction

from grading.models import Assignment, GradingEvent
from grading.models.allocation import CampaignAllocation, UnitAllocation
from grading.models.choices import Policy
from grading.services.allocation import assignment_next
from grading.services.allocation_state import allocation_state_build
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import client_for, event, fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
CLIENTS = 20


def run_threads(target, n: int) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def wrapped(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            target(i)
        except BaseException as exc:  # noqa: BLE001 — reported to the test below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_twenty_clients_with_duplicate_ids_store_each_id_once():
    campaign = make_campaign(graders=4, n_queries=2, n_candidates=5, overlap=4)
    graders = graders_of(campaign)
    # A shared pool of events per grader; every client posts a random mix, so most ids arrive
    # several times, often at the same moment, singly and in batches.
    pool = {
        g.pk: [
            event(campaign, kind, payload, unit=u, seq=i)
            for i, u in enumerate(my_units(g, campaign))
            for kind, payload in [("broad_set", {"value": "SS"}), ("fine_set", {"value": 5.5}), ("unit_viewed", {})]
        ]
        for g in graders
    }
    sent: set[str] = set()
    lock = threading.Lock()
    statuses: list[int] = []

    def client(i: int) -> None:
        grader = graders[i % len(graders)]
        api = client_for(grader)
        rng = random.Random(i)
        for _ in range(6):
            chosen = rng.sample(pool[grader.pk], 8)
            body = chosen if rng.random() < 0.5 else chosen[0]
            response = api.post("/api/events/", json.dumps(body), content_type="application/json")
            with lock:
                statuses.append(response.status_code)
                sent.update(e["id"] for e in (chosen if isinstance(body, list) else [body]))

    assert run_threads(client, CLIENTS) == []
    assert set(statuses) <= {200, 201}
    assert GradingEvent.objects.count() == len(sent)
    assert set(map(str, GradingEvent.objects.values_list("id", flat=True))) == sent


def test_graders_racing_for_one_adaptive_slot_get_it_once():
    campaign = make_campaign(n_queries=1, n_candidates=1, graders=2, overlap=2)
    campaign.policy, campaign.max_overlap = Policy.CONSENSUS, 3
    campaign.save()
    a, b = graders_of(campaign)
    unit = campaign.units.get()
    for grader, value in [(a, "VS"), (b, "NS")]:
        record(grader, campaign, "broad_set", {"value": value}, unit=unit, event_id=uuid4())
        record(grader, campaign, "fine_set", {"value": 5.0}, unit=unit, event_id=uuid4())
    racers = [make_user() for _ in range(8)]
    from grading.services.campaigns import role_grant

    for user in racers:
        role_grant(campaign=campaign, user=user, role="grader")
    got = []

    def race(i: int) -> None:
        served = assignment_next(grader=racers[i], campaign=campaign)
        if served is not None:
            got.append(racers[i].pk)

    assert run_threads(race, len(racers)) == []
    assert len(got) == 1
    assert Assignment.objects.filter(unit=unit).count() == 3


def test_concurrent_graders_never_exceed_overlap_or_budget_and_the_state_stays_exact():
    from django.db.models import Count

    from grading.models import UnitAllocation
    from grading.models.choices import Scheme
    from grading.services.allocation_state import STATE_FIELDS, allocation_state_build

    campaign = make_campaign(scheme=Scheme.CATEGORICAL, n_queries=3, n_candidates=4, graders=2, overlap=2)
    campaign.policy, campaign.max_overlap = Policy.CONSENSUS, 4
    campaign.budget = Assignment.objects.filter(campaign=campaign).count() + 10
    campaign.save()
    for a in Assignment.objects.filter(campaign=campaign).order_by("pk"):
        record(a.grader, campaign, "label_set", {"value": ["bad", "good"][a.pk % 2]}, unit=a.unit)
    racers = [make_user() for _ in range(8)]
    from grading.services.campaigns import role_grant

    for user in racers:
        role_grant(campaign=campaign, user=user, role="grader")

    def work(i: int) -> None:
        rng = random.Random(i)
        for _ in range(12):
            served = assignment_next(grader=racers[i], campaign=campaign)
            if served is None:
                return
            record(racers[i], campaign, "label_set", {"value": rng.choice(["bad", "ok", "good"])}, unit=served.unit)

    assert run_threads(work, len(racers)) == []
    per_unit = Assignment.objects.filter(campaign=campaign).values("unit").annotate(n=Count("pk"))
    assert len(per_unit) == 12 and max(u["n"] for u in per_unit) <= campaign.max_overlap
    assert Assignment.objects.filter(campaign=campaign).count() == campaign.budget  # 10 extras, not one more
    live = {
        r.unit_id: tuple(getattr(r, f) for f in STATE_FIELDS[1:])
        for r in UnitAllocation.objects.filter(campaign=campaign)
    }
    allocation_state_build(campaign=campaign)
    rebuilt = {
        r.unit_id: tuple(getattr(r, f) for f in STATE_FIELDS[1:])
        for r in UnitAllocation.objects.filter(campaign=campaign)
    }
    assert len(live) == 12 and live == rebuilt


def test_a_judgment_recorded_during_the_first_state_build_is_counted():
    """The build finds a judgment whose transaction has not committed yet: it waits for it, so the
    unit's state counts it (without the wait, neither the build nor the judgment would)."""
    campaign = make_campaign(graders=2, n_queries=1, n_candidates=3, overlap=2)
    campaign.policy = Policy.CONSENSUS
    campaign.save()
    # A campaign whose allocation state was never built: the first request for more work builds it.
    UnitAllocation.objects.filter(campaign=campaign).delete()
    CampaignAllocation.objects.filter(campaign=campaign).delete()
    grader = graders_of(campaign)[0]
    unit = Assignment.objects.filter(campaign=campaign, grader=grader).order_by("pk").first().unit
    recorded, build_started = threading.Event(), threading.Event()
    built_at = []

    def judge() -> None:
        with transaction.atomic():
            record(grader, campaign, "broad_set", {"value": "VS"}, unit=unit)
            recorded.set()
            assert build_started.wait(timeout=30)
            time.sleep(0.5)  # the build is now waiting for this transaction, or has missed it
            built_at.append(("judgment commits", time.monotonic()))  # the last step before COMMIT

    def build() -> None:
        assert recorded.wait(timeout=30)
        build_started.set()
        allocation_state_build(campaign=campaign, only_if_missing=True)
        built_at.append(("build done", time.monotonic()))

    errors = run_threads(lambda i: [judge, build][i](), 2)
    assert not errors, errors
    # The build could not finish before the judgment's transaction did (it waited for it).
    assert [name for name, _ in sorted(built_at, key=lambda x: x[1])] == ["judgment commits", "build done"]
    row = UnitAllocation.objects.get(unit=unit)
    assert (row.n_judgments, row.values) == (1, {"VS": 1})
    before = {r.unit_id: (r.n_judgments, r.n_open, r.reason) for r in UnitAllocation.objects.filter(campaign=campaign)}
    allocation_state_build(campaign=campaign)
    assert before == {
        r.unit_id: (r.n_judgments, r.n_open, r.reason) for r in UnitAllocation.objects.filter(campaign=campaign)
    }
