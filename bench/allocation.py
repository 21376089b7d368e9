"""Cost of a grader's next-unit request as the campaign grows, on PostgreSQL, in one process.

    .venv/bin/python bench/allocation.py                         # 10^3, 10^4, 10^5 units × 5 graders
    .venv/bin/python bench/allocation.py --sizes 1000,10000 --requests 200 --policy uncertainty
    .venv/bin/python bench/allocation.py --policy query_deviation

For each size it builds a categorical campaign in a scratch database with bulk inserts (every unit
judged by two of the five graders, a third of them in disagreement, so adaptive allocation has work
to give), then has the graders ask for their next unit through the API (POST /api/assignments/next/,
in-process, no network), judging each unit they are given (not timed) so that every request takes
the path of a grader with no open work: find a unit that needs more and make a new assignment.
It prints p50/p99 per size and the ratio of the largest campaign's to the smallest's. Aims:
p99 ≤ 20 ms, ratio ≤ 1.5 (docs/design.md §5.6, "Cost of next").

Needs PostgreSQL (--database-url, default postgres://postgres@127.0.0.1:5432/postgres: the server
on which the scratch database is made and afterwards dropped).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LABELS = ["bad", "ok", "good"]
N_GRADERS = 5


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="campaign sizes in units (default 1000,10000,100000)")
    p.add_argument("--requests", type=int, default=400, help="timed requests per size (default 400)")
    p.add_argument("--policy", choices=["consensus", "uncertainty", "query_deviation"], default="consensus")
    p.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    args = p.parse_args()
    try:
        args.sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        p.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if any(s < 10 for s in args.sizes) or len(args.sizes) < 2:
        p.error(f"--sizes needs at least two sizes of at least 10 units, got {args.sizes}")
    if not 10 <= args.requests <= 10_000:
        p.error(f"--requests must be in 10..10000, got {args.requests}")
    return args


def admin_sql(server_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(server_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def setup_django(database_url: str) -> None:
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "DEBUG": "false",
            "SECRET_KEY": "bench-" + "k" * 50,
            "ALLOWED_HOSTS": "testserver",
            "SECURE_SSL_REDIRECT": "false",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "evalutron.settings",
            "DATA_DIR": str(ROOT / "var" / "bench"),
        }
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", "--no-input", verbosity=0)


def build(n_units: int, policy: str, seed: int) -> tuple[object, list]:
    """A campaign of n_units, five graders, two done judgments per unit; made with bulk inserts."""
    from django.contrib.auth import get_user_model

    from grading.models import Assignment, Candidate, Judgment, Unit
    from grading.services.allocation_state import allocation_state_build
    from grading.services.campaigns import campaign_create, role_grant

    rng = random.Random(seed)
    campaign = campaign_create(
        name=f"bench {n_units}",
        slug=f"bench-{n_units}-{policy}",
        scheme="categorical",
        scheme_params={"labels": LABELS, "ordered": True},
        status="open",
        initial_overlap=2,
        max_overlap=5,
        guidelines="bench",
    )
    campaign.policy = policy
    if policy == "query_deviation":  # the units have no query: they deviate together from a rate of 0
        campaign.policy_params = {"expected_rate": 0.0, "tolerance": 0.1}
    campaign.save(update_fields=["policy", "policy_params"])
    graders = [
        get_user_model().objects.create_user(username=f"b{n_units}-{policy}-{g}", password=None)
        for g in range(N_GRADERS)
    ]
    for g in graders:
        role_grant(campaign=campaign, user=g, role="grader")
    cands = Candidate.objects.bulk_create(
        [Candidate(campaign=campaign, external_id=f"c{i}", text="x") for i in range(n_units)], batch_size=5000
    )
    units = Unit.objects.bulk_create(
        [Unit(campaign=campaign, external_id=f"u{i}", candidate=c, position=i) for i, c in enumerate(cands)],
        batch_size=5000,
    )
    now = datetime.now(UTC)
    assignments, judgments = [], []
    for i, unit in enumerate(units):
        pair = rng.sample(graders, 2)
        first = rng.choice(LABELS)
        labels = [first, first if rng.random() > 1 / 3 else rng.choice([x for x in LABELS if x != first])]
        for g, label in zip(pair, labels, strict=True):
            assignments.append(
                Assignment(campaign=campaign, grader=g, unit=unit, status="done", position=i, completed_at=now)
            )
            judgments.append(Judgment(campaign=campaign, grader=g, unit=unit, label=label, applied={}))
    Assignment.objects.bulk_create(assignments, batch_size=5000)
    Judgment.objects.bulk_create(judgments, batch_size=5000)
    allocation_state_build(campaign=campaign)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return campaign, graders


def run(campaign, graders: list, n_requests: int, seed: int) -> tuple[list[float], list[float]]:
    from rest_framework.test import APIClient

    from grading.services.events import EventInput, event_record

    rng = random.Random(seed)
    clients = [APIClient() for _ in graders]
    for client, grader in zip(clients, graders, strict=True):
        client.force_authenticate(grader)
    times: list[float] = []
    reference: list[float] = []
    for i in range(n_requests + 20):  # the first 20 warm caches up and are not counted
        g = i % len(graders)
        elapsed, response = timed_next(clients[g], campaign.pk)
        if response.status_code != 200:
            raise SystemExit(f"request {i} got {response.status_code}: nothing left to give? use a larger campaign")
        # Reference: the same request again, now served the grader's own open assignment (the
        # cheapest path of the same view), timed in the same conditions.
        again, _ = timed_next(clients[g], campaign.pk)
        if i >= 20:
            times.append(elapsed)
            reference.append(again)
        unit = response.json()["unit"]
        unit_id = unit["id"] if isinstance(unit, dict) else unit
        event_record(
            grader=graders[g],
            data=EventInput(
                id=uuid.uuid4(),
                campaign_id=campaign.pk,
                type="label_set",
                payload={"value": rng.choice(LABELS)},
                unit_id=unit_id,
                client_ts=datetime.now(UTC),
            ),
        )
    return times, reference


def timed_next(client, campaign_id: int) -> tuple[float, object]:
    start = time.perf_counter()
    response = client.post("/api/assignments/next/", {"campaign": campaign_id}, format="json")
    return time.perf_counter() - start, response


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    args = parse_args()
    name = f"evalutron_bench_alloc_{os.getpid()}"
    admin_sql(args.database_url, f'CREATE DATABASE "{name}"')
    try:
        setup_django(urlunparse(urlparse(args.database_url)._replace(path=f"/{name}")))
        rows = []
        for n in args.sizes:
            t0 = time.perf_counter()
            campaign, graders = build(n, args.policy, seed=n)
            built = time.perf_counter() - t0
            # The bulk build leaves hundreds of thousands of model instances in reference cycles: a
            # web process never holds them, and their collection must not be timed as a request's.
            gc.collect()
            times, reference = run(campaign, graders, args.requests, seed=n)
            rows.append(
                (
                    n,
                    percentile(times, 0.5) * 1000,
                    percentile(times, 0.99) * 1000,
                    percentile(reference, 0.5) * 1000,
                    built,
                )
            )
        print(f"policy {args.policy}, {N_GRADERS} graders, {args.requests} timed next-unit requests per size")
        print("(ref p50: the same request served the grader's own open assignment, in the same conditions)")
        print(f"{'units':>8} {'p50 ms':>8} {'p99 ms':>8} {'ref p50':>8} {'p50/ref':>8} {'build s':>8}")
        for n, p50, p99, ref, built in rows:
            print(f"{n:>8} {p50:>8.2f} {p99:>8.2f} {ref:>8.2f} {p50 / ref:>8.2f} {built:>8.1f}")
        small, large = rows[0], rows[-1]
        print(
            f"ratio largest/smallest: p50 {large[1] / small[1]:.2f}, p99 {large[2] / small[2]:.2f}"
            f"   (aims: p99 ≤ 20 ms, ratio ≤ 1.5)"
        )
    finally:
        from django.db import connections

        connections.close_all()
        admin_sql(args.database_url, f'DROP DATABASE IF EXISTS "{name}"')


if __name__ == "__main__":
    main()
