"""Benchmark: a full analysis of 1,000,000 judgments in PostgreSQL, the report page, the exports.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalutron_bench .venv/bin/python bench/analysis.py
    ... bench/analysis.py --judgments 10000000                 # 2,000,000 units (--units 2000000)
    ... bench/analysis.py --steps report,ground_truth_csv_stream,ground_truth_json_stream
    ... bench/analysis.py --steps model                        # the run's model stage, CPU seconds
    ... bench/analysis.py --judgments 10000000 --workers 2     # one process against 2 Celery workers

Builds (once per size; reused on later runs) a synthetic BROAD+FINE campaign of 200,000 units × 5
graders with two events per judgment, a few hundred judgments with comments, and prints the time it
took. Rows go in by COPY of CSV blocks written by pandas; the tables' foreign keys and plain indexes
are dropped for the load and made again after it, so each constraint is checked once over all rows
rather than once per row at COMMIT (Django's foreign keys are deferred).
Then measures, each in a fresh process so peak memory (max RSS) belongs to that step alone: the
analysis run from database to stored result, the report page render (its time at the campaign's
size is printed on a line of its own, with its CPU per request), the streamed event-log CSV export,
the ground-truth CSV export in memory, and the streamed ground truth as CSV and as JSON (rows per
second of each, and their ratio; and per CPU second of this process and its PostgreSQL backend,
which a busy machine disturbs much less than wall time). A step that needs a finished analysis
runs one first when the campaign has none.
With --workers W the steps give way to a comparison (docs/analysis.md, "Sharded runs"): an analysis
in one process (embedded, ANALYSIS_SHARD_JUDGMENTS so large that the campaign is one shard), then W
Celery workers started here (solo pool, so each computes in its own process) on --broker-url
(default redis://127.0.0.1:6379/15; give each concurrent bench a broker database of its own) with
ANALYSIS_SHARD_JUDGMENTS from --shard-judgments, and the same analysis sent to them as the app sends
one and waited for; the workers are stopped afterwards, also on error. Printed as the last line: the
seconds of both runs (the sharded one's from its creation to its end), its shards, the peak RSS of
the one-process run and of each worker (the largest; and the workers' largest alone,
peak_rss_mb_sharded), and whether the two runs' results and
per-unit rows are the same to 1e-9 (analysis.reports.compare; the differences go to stderr).
Then a grader joins and judges 1% more (one judgment in NEW_SHARE of the campaign's, with two
events each), the workers run the analysis again, and the bench takes the new grader's rows away
(docs/analysis.md, "Reusing shards"): seconds_after_new_work, shards_reused,
bootstrap_blocks_reused and slices_reused are that run's. With --after-new-repeats N that run is
made N times, each against the same run before it (the runs after it deleted, and what it kept for
the next given back), its seconds each time in seconds_after_new_work_repeated: on a noisy machine
one run says little. The full sharded run takes nothing from
the one-process run before it: the bench drops what that run kept for the next (its bootstrap's
blocks and its slices' sums) first.
Aims: analysis < 60 s and < 2 GB; report ≤ 30 ms at 10^6 judgments and ≤ 60 ms at 10^7; export
≥ 100,000 rows/s; streamed JSON at least as many rows/s as streamed CSV. With --workers at 10^7
judgments on this 2-core machine: sharded on 2 workers ≤ 150 s, ≤ 1 GB in any process, identical.
"""

from __future__ import annotations

import argparse
import binascii
import json
import os
import pickle
import resource
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/evalutron_bench")
os.environ.setdefault("SECRET_KEY", "bench-secret-key-" + "b" * 40)
os.environ.setdefault("DEBUG", "true")
os.environ.pop("CELERY_BROKER_URL", None)  # embedded: the run executes in this process
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalutron.settings")

N_GRADERS = 5
UNITS_PER_QUERY = 100
COMMENT_EVERY = 997  # one judgment in so many has a comment (the report lists them)
BROADS = ["NS", "SS", "VS"]


def slug_of(n_units: int) -> str:
    return "bench-1m" if n_units == 200_000 else f"bench-{n_units * N_GRADERS}"


def _setup() -> None:
    import django

    django.setup()


def _ensure_database() -> None:
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], dbname="postgres", autocommit=True
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _copy(cursor, table: str, columns: list[str], rows) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def build(n_units: int) -> int:
    """The synthetic campaign of n_units × 5 judgments: returns its id (reused when it already exists)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from grading.models import Campaign, Judgment
    from grading.models.choices import Role, Scheme
    from grading.services.campaigns import campaign_create, role_grant

    def make_user(username: str, **extra):  # no password: hashing one costs a second of CPU
        return get_user_model().objects.create_user(username=username, password=None, **extra)

    slug = slug_of(n_units)
    existing = Campaign.objects.filter(slug=slug).first()
    if existing and get_user_model().objects.filter(username__startswith=NEW_GRADER).exists():
        step_remove(existing.pk)  # the new work of a bench left before it took it away (interrupted)
    if existing and Judgment.objects.filter(campaign=existing).count() == n_units * N_GRADERS:
        _comments_ensure(existing.pk)
        return existing.pk
    t0 = time.perf_counter()
    with transaction.atomic():
        if existing:
            raise SystemExit(f"campaign {slug} exists but is incomplete: drop the bench database and rerun")
        campaign = campaign_create(
            name=f"Bench {n_units * N_GRADERS:,}",
            slug=slug,
            scheme=Scheme.BROAD_FINE,
            status="open",
            guidelines="Synthetic.",
            initial_overlap=5,
            max_overlap=5,
        )
        graders = [make_user(f"bench-grader-{uuid.uuid4().hex[:6]}") for _ in range(N_GRADERS)]
        for g in graders:
            role_grant(campaign=campaign, user=g, role=Role.GRADER)
        organizer = make_user(f"bench-admin-{uuid.uuid4().hex[:6]}", is_staff=True)
        role_grant(campaign=campaign, user=organizer, role=Role.ORGANIZER)
        cur = connection.cursor().cursor
        with _constraints_once(cur, BULK_TABLES):
            _fill(cur, campaign.pk, [g.pk for g in graders], np.random.default_rng(1), n_units)
    _comments_ensure(campaign.pk)
    print(f"built {n_units * N_GRADERS:,} judgments in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return campaign.pk


def _comments_ensure(campaign_id: int) -> None:
    """One judgment in COMMENT_EVERY has a comment (campaigns built before comments were added get
    them here, so that every run of this bench reads the same data)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT 1 FROM grading_judgment WHERE campaign_id = %s AND comment <> '' LIMIT 1", [campaign_id])
        if cur.fetchone() is None:
            cur.execute(
                "UPDATE grading_judgment SET comment = 'comment on unit ' || unit_id"
                " WHERE campaign_id = %s AND id %% %s = 0",
                [campaign_id, COMMENT_EVERY],
            )
            cur.execute("ANALYZE grading_judgment")


def _fill(cur, campaign_id: int, graders: list[int], rng, n_units: int) -> None:
    now = datetime.now(UTC)
    cur.execute("SELECT COALESCE(MAX(id), 0) FROM grading_query")
    q0 = cur.fetchone()[0]
    _copy(
        cur,
        "grading_query",
        [
            "id",
            "campaign_id",
            "external_id",
            "title",
            "public_id",
            "position",
            "kind",
            "text",
            "media_file",
            "media_url",
        ],
        (
            (q0 + i + 1, campaign_id, f"bq{i}", "", f"bq{campaign_id}x{i}", i, "text", f"query {i}", "", "")
            for i in range(n_units // UNITS_PER_QUERY)
        ),
    )
    cur.execute("SELECT COALESCE(MAX(id), 0) FROM grading_candidate")
    c0 = cur.fetchone()[0]
    _copy(
        cur,
        "grading_candidate",
        ["id", "campaign_id", "external_id", "public_id", "kind", "text", "media_file", "media_url"],
        ((c0 + i + 1, campaign_id, f"bc{i}", f"bc{campaign_id}x{i}", "text", f"c{i}", "", "") for i in range(n_units)),
    )
    cur.execute("SELECT COALESCE(MAX(id), 0) FROM grading_unit")
    u0 = cur.fetchone()[0]
    per_query = UNITS_PER_QUERY
    _copy(
        cur,
        "grading_unit",
        ["id", "campaign_id", "external_id", "query_id", "candidate_id", "position"],
        (
            (u0 + i + 1, campaign_id, f"bu{i}", q0 + i // per_query + 1, c0 + i + 1, i % per_query)
            for i in range(n_units)
        ),
    )
    truth = rng.integers(0, 3, n_units)
    noise = rng.choice([-1, 0, 0, 0, 1], size=(n_units, N_GRADERS))
    level = np.clip(truth[:, None] + noise, 0, 2)
    fine = np.clip(np.round(1.5 + 3.5 * level + rng.uniform(-1.5, 1.5, level.shape), 1), 0, 10)
    for lo in range(0, n_units, BUILD_BLOCK):
        hi = min(lo + BUILD_BLOCK, n_units)
        block = _block(campaign_id, graders, u0, lo, level[lo:hi], fine[lo:hi], now)
        _copy_csv(cur, "grading_judgment", JUDGMENT_COLUMNS, block.judgments)
        _copy_csv(cur, "grading_gradingevent", EVENT_COLUMNS, block.events)
    for table in ("grading_query", "grading_candidate", "grading_unit"):
        cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
    cur.execute("ANALYZE")


JUDGMENT_COLUMNS = ["campaign_id", "grader_id", "unit_id", "broad", "fine", "comment", "skipped"]
JUDGMENT_COLUMNS += ["guidelines_version", "applied", "created_at", "updated_at"]
EVENT_COLUMNS = ["id", "campaign_id", "grader_id", "unit_id", "type", "payload", "client_ts", "server_ts"]
EVENT_COLUMNS += ["session_id", "seq", "guidelines_version"]
BULK_TABLES = ["grading_query", "grading_candidate", "grading_unit", "grading_judgment", "grading_gradingevent"]
BUILD_BLOCK = 100_000  # units per COPY block (500,000 judgments, 1,000,000 events)


@dataclass
class _Block:
    judgments: pd.DataFrame
    events: pd.DataFrame


def _block(campaign_id, graders, u0, lo, level, fine, now) -> _Block:
    """Units lo.. of the campaign as rows to COPY: a judgment per (unit, grader), and its two events
    (broad_set, then fine_set 3 s later; the grader j of unit i starts at i·5 + j s after `start`)."""
    n, k = level.shape[0], len(graders)
    unit = np.repeat(np.arange(u0 + lo + 1, u0 + lo + n + 1), k)
    grader = np.tile(np.asarray(graders), n)
    broad = np.asarray(BROADS, dtype=object)[level.ravel()]
    fine_text = pd.Series(fine.ravel()).map("{:.1f}".format).to_numpy()
    judgments = pd.DataFrame(
        {
            "campaign_id": campaign_id,
            "grader_id": grader,
            "unit_id": unit,
            "broad": broad,
            "fine": fine_text,
            "comment": "",
            "skipped": "f",
            "guidelines_version": 1,
            "applied": "{}",
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
        }
    )
    offset = (np.arange(lo, lo + n)[:, None] * 5 + np.arange(k)[None, :]).ravel()
    start = np.datetime64((now - timedelta(days=30)).replace(tzinfo=None), "us")

    def at(seconds: np.ndarray) -> np.ndarray:  # UTC timestamps as text, formatted by NumPy in C
        return np.char.add(np.datetime_as_string(start + seconds.astype("timedelta64[s]"), unit="us"), "+00:00")

    two = {
        "broad_set": ('{"value": "' + broad + '"}', at(offset), 1),
        "fine_set": ('{"value": ' + fine_text + "}", at(offset + 3), 2),
    }
    ids = np.frombuffer(binascii.hexlify(uuid.uuid4().bytes + os.urandom(16 * (2 * n * k - 1))), "S32")
    events = pd.concat(
        [
            pd.DataFrame(
                {
                    "id": ids[i::2].astype("U32"),
                    "campaign_id": campaign_id,
                    "grader_id": grader,
                    "unit_id": unit,
                    "type": kind,
                    "payload": payload,
                    "client_ts": ts,
                    "server_ts": now.isoformat(),
                    "session_id": "bench",
                    "seq": seq,
                    "guidelines_version": 1,
                }
            )
            for i, (kind, (payload, ts, seq)) in enumerate(two.items())
        ]
    )
    return _Block(judgments, events)


NEW_SHARE = 100  # the run after new work: one judgment in so many is new, by a grader who joins
NEW_GRADER = "bench-new-"  # the joining grader's username begins so: what step_remove takes away


def step_add(campaign_id: int) -> dict:
    """A new grader judges the first units, one judgment in NEW_SHARE of the campaign's, with their
    two events each: the new work that the run after it takes the other shards' parts for."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from grading.models import Campaign, Judgment, Unit
    from grading.models.choices import Role
    from grading.services.campaigns import role_grant

    n = Judgment.objects.filter(campaign_id=campaign_id).count() // NEW_SHARE
    u0 = Unit.objects.filter(campaign_id=campaign_id).order_by("pk").values_list("pk", flat=True).first() - 1
    rng = np.random.default_rng(2)
    level = rng.integers(0, 3, (n, 1))
    fine = np.clip(np.round(1.5 + 3.5 * level + rng.uniform(-1.5, 1.5, level.shape), 1), 0, 10)
    with transaction.atomic():
        grader = get_user_model().objects.create_user(username=f"{NEW_GRADER}{uuid.uuid4().hex[:6]}", password=None)
        role_grant(campaign=Campaign.objects.get(pk=campaign_id), user=grader, role=Role.GRADER)
        block = _block(campaign_id, [grader.pk], u0, 0, level, fine, datetime.now(UTC))
        cur = connection.cursor().cursor
        _copy_csv(cur, "grading_judgment", JUDGMENT_COLUMNS, block.judgments)
        _copy_csv(cur, "grading_gradingevent", EVENT_COLUMNS, block.events)
    return {"grader": grader.pk, "judgments": n}


def step_forget(campaign_id: int) -> dict:
    """Drop what the campaign's runs kept for the next run (their bootstrap's blocks), so that the
    next run computes every figure. A one-shard run keeps no part to take, so nothing else is kept."""
    from analysis.models import KeptSum

    deleted, _ = KeptSum.objects.filter(run__campaign_id=campaign_id).delete()
    return {"forgotten": deleted}


def step_keep(campaign_id: int, path: str) -> dict:
    """What the campaign's latest succeeded run keeps for the next (its shards' parts, its bootstrap's
    blocks and its slices' sums), written to ``path`` for ``step_rewind`` to give back."""
    from analysis.models import AnalysisRun, KeptSum, RunShard, RunStatus

    run = AnalysisRun.objects.filter(campaign_id=campaign_id, status=RunStatus.SUCCEEDED).latest("pk")
    stored = RunShard.objects.filter(run=run, part__isnull=False).values_list("pk", "part")
    parts = {pk: bytes(part) for pk, part in stored}
    sums = [(key, bytes(data)) for key, data in KeptSum.objects.filter(run=run).values_list("key", "sums")]
    with open(path, "wb") as f:
        pickle.dump({"run": run.pk, "parts": parts, "sums": sums}, f)
    return {"run": run.pk, "parts": len(parts), "sums": len(sums)}


def step_rewind(campaign_id: int, path: str) -> dict:
    """Delete the campaign's runs after the one ``step_keep`` wrote, and give that run back what it
    kept for the next (a run after it dropped it), so that the run after new work can be measured
    again against the same run before it (--after-new-repeats)."""
    from django.db import transaction

    from analysis.models import AnalysisRun, KeptSum, RunShard

    with open(path, "rb") as f:
        kept = pickle.load(f)  # the bench's own file, written by step_keep
    with transaction.atomic():
        AnalysisRun.objects.filter(campaign_id=campaign_id, pk__gt=kept["run"]).delete()
        for pk, part in kept["parts"].items():
            RunShard.objects.filter(pk=pk).update(part=part)
        KeptSum.objects.filter(run_id=kept["run"]).delete()
        KeptSum.objects.bulk_create(
            [KeptSum(run_id=kept["run"], key=key, sums=data) for key, data in kept["sums"]], batch_size=16
        )
    return {"run": kept["run"]}


def step_remove(campaign_id: int) -> dict:
    """Take away what ``step_add`` added, so that the campaign is the bench's again. Events are
    append-only (a trigger refuses DELETE): the bench's own connection sets triggers aside for it,
    and so the graders' ``GraderTally`` rows, which triggers keep, are deleted here too."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    graders = list(get_user_model().objects.filter(username__startswith=NEW_GRADER).values_list("pk", flat=True))
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL session_replication_role = replica")
        for table in (
            "grading_gradingevent",
            "grading_judgment",
            "grading_gradertally",
            "grading_assignment",
            "grading_campaignrole",
        ):
            cur.execute(
                f"DELETE FROM {table} WHERE campaign_id = %s AND {_user_column(table)} = ANY(%s)",
                [campaign_id, graders],
            )
    get_user_model().objects.filter(pk__in=graders).delete()
    return {"removed": graders}


def _user_column(table: str) -> str:
    return "user_id" if table == "grading_campaignrole" else "grader_id"


def _copy_csv(cur, table: str, columns: list[str], frame: pd.DataFrame) -> None:
    """The frame's rows into the table with one COPY … (FORMAT csv) (the frame written by pandas, not
    row by row). An empty field is an empty string, never NULL (no column written here is NULL)."""
    csv = f"FORMAT csv, FORCE_NOT_NULL ({', '.join(columns)})"
    with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH ({csv})") as copy:
        copy.write(frame[columns].to_csv(index=False, header=False))


@contextmanager
def _constraints_once(cur, tables: list[str]):
    """Load into ``tables`` without per-row constraint work, then check every constraint once.

    Django's foreign keys are DEFERRABLE INITIALLY DEFERRED: each COPYed row queues a check that
    runs at COMMIT, one lookup per row and key (most of the old build's time). Here the tables'
    foreign keys and plain indexes are dropped for the load and made again afterwards in the same
    transaction: ADD CONSTRAINT checks all rows in one join, CREATE INDEX sorts once. Primary keys,
    unique and CHECK constraints stay (checked as rows arrive)."""
    cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # check the campaign's few rows now: no ALTER with checks pending
    fks, indexes = [], []
    for table in tables:
        cur.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = %s::regclass AND contype = 'f'",
            [table],
        )
        fks += [(table, name, definition) for name, definition in cur.fetchall()]
        cur.execute(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index i"
            " WHERE indrelid = %s::regclass AND NOT indisprimary"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
            [table],
        )
        indexes += cur.fetchall()
    for table, name, _ in fks:
        cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cur.execute(f"DROP INDEX {name}")
    loaded = time.perf_counter()
    yield
    made = time.perf_counter()
    print(f"  rows loaded in {made - loaded:.1f} s", file=sys.stderr)
    for _, definition in indexes:
        cur.execute(definition)
    for table, name, definition in fks:
        cur.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    cur.execute("SET CONSTRAINTS ALL DEFERRED")
    print(
        f"  {len(indexes)} indexes made and {len(fks)} foreign keys checked in {time.perf_counter() - made:.1f} s",
        file=sys.stderr,
    )


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def step_analysis(campaign_id: int) -> dict:
    from analysis.models import AnalysisRun
    from analysis.services import runs
    from analysis.services.execute import run_execute

    run = AnalysisRun.objects.create(campaign_id=campaign_id, parameters=runs.parameters_clean(None), seed=1)
    rss0 = _max_rss_mb()
    t0 = time.perf_counter()
    status = run_execute(run_id=run.pk)
    seconds = time.perf_counter() - t0
    run.refresh_from_db()
    return {
        "run": run.pk,
        "status": status,
        "seconds": round(seconds, 2),
        "max_rss_mb": round(_max_rss_mb(), 1),
        "rss_before_mb": round(rss0, 1),
        "stages": run.timings,
        "error": run.error,
    }


def step_sharded(campaign_id: int) -> dict:
    """With a broker (--workers): a run handed to the Celery workers as the app hands one
    (runs.run_enqueue), waited for. Its seconds are from its creation to its end, as stored."""
    from analysis.models import AnalysisRun
    from analysis.services import runs

    run = AnalysisRun.objects.create(campaign_id=campaign_id, parameters=runs.parameters_clean(None), seed=1)
    runs.run_enqueue(run_id=run.pk)
    taken_by = time.monotonic() + WORKER_READY_SECONDS
    while not run.is_finished:
        time.sleep(0.2)
        run.refresh_from_db()
        if run.status == "queued" and time.monotonic() > taken_by:  # the workers read another queue?
            raise SystemExit(f"no worker took analysis run {run.pk} in {WORKER_READY_SECONDS} s")
    return {
        "run": run.pk,
        "status": run.status,
        "seconds": round((run.finished_at - run.created_at).total_seconds(), 2),
        "shards": run.shards_total,
        "shards_done": run.shards_done,
        "shards_reused": run.shards_reused,
        "bootstrap_blocks_reused": f"{run.bootstrap_blocks_reused} of {run.bootstrap_blocks}",
        "slices_reused": f"{run.slices_reused} of {run.slices_total}",
        "stages": run.timings,
        "error": run.error,
    }


def step_model(campaign_id: int) -> dict:
    """The run's "model" stage alone, on the loaded judgments, as report_compute does it: the
    models (Dawid–Skene, the numeric grader model), the allocation accounting and the hidden units.
    CPU seconds of this process (all threads) and wall seconds, the best of three; ``fit_cpu_seconds``
    is the models' share."""
    from analysis.services.report import campaign_data_load
    from analysis.services.sections.accounting import accounting
    from analysis.services.sections.hidden_units import hidden_units_section
    from analysis.services.sections.model import model_truth

    data = campaign_data_load(campaign_id=campaign_id)
    cpu, wall, fit = [], [], []
    for _ in range(3):
        c0, t0 = time.process_time(), time.perf_counter()
        section, _units = model_truth(data.judgments, data.spec, data.pseudonyms)
        fit.append(time.process_time() - c0)
        accounting(campaign_id=campaign_id, model=section)
        hidden_units_section(campaign_id=campaign_id, scheme=data.scheme, pseudonyms=data.pseudonyms)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    ds = section.get("dawid_skene", {})
    return {
        "cpu_seconds": round(min(cpu), 3),
        "wall_seconds": round(min(wall), 3),
        "fit_cpu_seconds": round(min(fit), 3),
        "ds_iterations": ds.get("iterations"),
        "ds_log_likelihood": ds.get("log_likelihood"),
        "max_rss_mb": round(_max_rss_mb(), 1),
    }


def step_report(campaign_id: int) -> dict:
    from django.test import Client

    from grading.models import CampaignRole

    admin = CampaignRole.objects.filter(campaign_id=campaign_id, role="organizer").first().user
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(admin)
    url = f"/reports/campaigns/{campaign_id}/"
    client.get(url)  # warm: templates, connections
    backend = _backend_pid()
    times = []
    # CPU over all the requests (the backend's is counted in clock ticks of 10 ms: per request too coarse).
    c0 = time.process_time() + _pid_cpu(backend)
    for _ in range(15):
        t0 = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - t0)
        assert response.status_code == 200, response.status_code
    cpu = (time.process_time() + _pid_cpu(backend) - c0) / len(times)
    times.sort()
    return {
        "median_ms": round(1000 * times[len(times) // 2], 1),
        "best_ms": round(1000 * times[0], 1),
        "cpu_ms": round(1000 * cpu, 1),
        "bytes": len(response.content),
    }


def _backend_pid() -> int:
    """The PostgreSQL backend serving this process's connection (its CPU is the page's too)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _pid_cpu(pid: int) -> float:
    """User + system CPU seconds of a local process (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def step_events_export(campaign_id: int) -> dict:
    from analysis import export

    t0, rows, size = time.perf_counter(), 0, 0
    for chunk in export.events_stream(campaign_id, "csv"):
        rows += chunk.count("\n")
        size += len(chunk)
    seconds = time.perf_counter() - t0
    return {
        "rows": rows - 1,
        "seconds": round(seconds, 2),
        "rows_per_s": round((rows - 1) / seconds),
        "mb": round(size / 1e6, 1),
        "max_rss_mb": round(_max_rss_mb(), 1),
    }


def step_ground_truth(campaign_id: int) -> dict:
    from analysis import export, selectors

    run = selectors.run_latest_good(campaign_id=campaign_id)
    t0 = time.perf_counter()
    body = export.ground_truth_bytes(run, export.Filters(), "csv")
    seconds = time.perf_counter() - t0
    rows = body.count(b"\n") - body.count(b"\n# ") - 2
    return {
        "rows": rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(rows / seconds),
        "max_rss_mb": round(_max_rss_mb(), 1),
    }


def step_gt_csv_stream(campaign_id: int) -> dict:
    """The organizer's CSV download as the response streams it (rows per second)."""
    return _stream_step(campaign_id, "ground_truth_csv")


def step_gt_json_stream(campaign_id: int) -> dict:
    """The organizer's JSON download as the response streams it (rows per second)."""
    return _stream_step(campaign_id, "ground_truth_json")


def _stream_step(campaign_id: int, stream: str) -> dict:
    """Rows per second and per CPU second (this process and its PostgreSQL backend) of one of
    analysis.streams' ground-truth generators, read to the end."""
    from analysis import export, selectors, streams

    run = selectors.run_latest_good(campaign_id=campaign_id)
    rows = selectors.unit_results(run_id=run.pk).stored
    backend = _backend_pid()
    t0, c0 = time.perf_counter(), time.process_time() + _pid_cpu(backend)
    size = sum(len(chunk) for chunk in getattr(streams, stream)(run, export.Filters()))
    seconds, cpu = time.perf_counter() - t0, time.process_time() + _pid_cpu(backend) - c0
    return {
        "rows": rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(rows / seconds),
        "cpu_s": round(cpu, 2),
        "rows_per_cpu_s": round(rows / cpu),
        "mb": round(size / 1e6, 1),
    }


def step_has_run(campaign_id: int) -> dict:
    from analysis import selectors

    return {"succeeded": selectors.run_latest_good(campaign_id=campaign_id) is not None}


STEPS = {
    "analysis": step_analysis,
    "report": step_report,
    "events_export": step_events_export,
    "ground_truth_export": step_ground_truth,
    "ground_truth_csv_stream": step_gt_csv_stream,
    "ground_truth_json_stream": step_gt_json_stream,
}
DEFAULT_STEPS = list(STEPS)  # without flags: today's run
STEPS["model"] = step_model  # on request (--steps model): the model computation's CPU time


def _step(
    step: str,
    campaign_id: int,
    n_units: int,
    *,
    env: dict[str, str] | None = None,
    extra: list[str] | None = None,
    workers: list[subprocess.Popen] | None = None,
) -> dict:
    """Run one step in a fresh process (``env``: its environment; ``extra``: more arguments); it
    stops, and the bench with it, if one of the ``workers`` it waits for dies meanwhile."""
    command = [sys.executable, __file__, "--step", step, "--campaign", str(campaign_id), "--units", str(n_units)]
    with subprocess.Popen(
        [*command, *(extra or [])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                dead = [w for w in workers or [] if w.poll() is not None]
                if dead:
                    proc.kill()
                    raise SystemExit(f"step {step}: a Celery worker exited with code {dead[0].returncode}") from None
    if proc.returncode:
        raise SystemExit(f"step {step} failed:\n{stderr[-3000:]}")
    if step == "build":
        sys.stderr.write(stderr)  # the build's figures
    return json.loads(stdout.strip().splitlines()[-1])


DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/15"
SHARD_SETTING = "ANALYSIS_SHARD_JUDGMENTS"  # judgments per shard; a campaign of at most so many is one shard
WORKER_READY_SECONDS = 180
WORKER_STOP_SECONDS = 30


def compare(campaign_id: int, n_units: int, args: argparse.Namespace) -> dict:
    """The one-process run (embedded, one shard) against the sharded run on ``args.workers`` Celery
    workers: seconds, shards, the peak memory of every process that computed, and whether the two
    runs' results and per-unit rows are the same (to 1e-9; the differences go to stderr)."""
    one = _succeeded(_step("analysis", campaign_id, n_units, env={**os.environ, SHARD_SETTING: str(10**12)}))
    print(f"one process: {one}", file=sys.stderr)
    _step("forget", campaign_id, n_units)  # the sharded run computes everything, as the one process did
    env = {**os.environ, "CELERY_BROKER_URL": args.broker_url}
    if args.shard_judgments is not None:
        env[SHARD_SETTING] = str(args.shard_judgments)
    with _celery_workers(args.workers, env) as workers:
        sharded = _step(
            "sharded", campaign_id, n_units, env=env, extra=["--broker-url", args.broker_url], workers=workers
        )
        differences = _differences(one["run"], _succeeded(sharded)["run"])
        print(f"sharded on {args.workers} workers: {sharded}", file=sys.stderr)
        with tempfile.TemporaryDirectory() as folder:
            kept = ["--snapshot", os.path.join(folder, "kept.pickle")]
            if args.after_new_repeats > 1:
                _step("keep", campaign_id, n_units, extra=kept)
            added = _step("add", campaign_id, n_units)
            repeats: list[dict] = []
            try:
                for repeat in range(args.after_new_repeats):
                    if repeat:
                        _step("rewind", campaign_id, n_units, extra=kept)
                    again = _succeeded(
                        _step(
                            "sharded",
                            campaign_id,
                            n_units,
                            env=env,
                            extra=["--broker-url", args.broker_url],
                            workers=workers,
                        )
                    )
                    print(f"after {added['judgments']:,} new judgments by a new grader: {again}", file=sys.stderr)
                    repeats.append(again)
            finally:
                _step("remove", campaign_id, n_units)
        again = repeats[0]
        worker_rss = [_peak_rss_mb(w.pid) for w in workers]
    print(f"the workers' peak RSS (MB): {worker_rss}", file=sys.stderr)
    return {
        "judgments": n_units * N_GRADERS,
        "workers": args.workers,
        "shards": sharded["shards"],
        "seconds_one_process": one["seconds"],
        "seconds_sharded": sharded["seconds"],
        "peak_rss_mb_per_process": max([one["max_rss_mb"], *worker_rss]),
        "peak_rss_mb_sharded": max(worker_rss),  # the workers' alone: what the sharded run needs
        "identical": not differences,
        "seconds_after_new_work": again["seconds"],  # NEW_SHARE: 1% more judgments, by a grader who joins
        "shards_reused": again["shards_reused"],
        "bootstrap_blocks_reused": again["bootstrap_blocks_reused"],
        "slices_reused": again["slices_reused"],
        **({"seconds_after_new_work_repeated": [r["seconds"] for r in repeats]} if len(repeats) > 1 else {}),
    }


def _succeeded(run: dict) -> dict:
    if run["status"] != "succeeded":
        raise SystemExit(f"analysis run {run['run']} {run['status']}: {run['error']}")
    return run


def _differences(run_a: int, run_b: int, shown: int = 200) -> list[str]:
    """Where two runs' results and per-unit rows differ (to 1e-9); the first ``shown`` go to stderr."""
    from analysis.models import AnalysisRun
    from analysis.reports.compare import results_differences, unit_results_differences

    results = dict(AnalysisRun.objects.filter(pk__in=[run_a, run_b]).values_list("pk", "result"))
    found = results_differences(results[run_a], results[run_b]) + unit_results_differences(run_a, run_b)
    for line in found[:shown]:
        print(f"differs: {line}", file=sys.stderr)
    if len(found) > shown:
        print(f"... and {len(found) - shown} more differences", file=sys.stderr)
    return found


@contextmanager
def _celery_workers(n: int, env: dict[str, str]) -> Iterator[list[subprocess.Popen]]:
    """``n`` Celery worker processes on the broker of ``env``, once they all answer a ping; stopped
    (SIGTERM, then SIGKILL after WORKER_STOP_SECONDS) on the way out, also on error. The solo pool runs
    each task in the worker process itself, so a worker's peak memory is its tasks'."""
    names = [f"bench{i}-{os.getpid()}@{socket.gethostname()}" for i in range(1, n + 1)]
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as logs:
        workers: list[subprocess.Popen] = []
        try:
            for name in names:
                with open(Path(logs) / f"{name}.log", "wb") as log:
                    workers.append(
                        subprocess.Popen(
                            [sys.executable, "-m", "celery", "-A", "evalutron", "worker", "--pool=solo"]
                            + ["--concurrency=1", "-n", name, "--loglevel=info"]
                            + ["--without-heartbeat", "--without-gossip", "--without-mingle"],
                            cwd=ROOT,
                            env=env,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                        )
                    )
            _workers_ready(names, workers, env["CELERY_BROKER_URL"])
            yield workers
        except BaseException:
            for name in names:
                tail = (Path(logs) / f"{name}.log").read_text(errors="replace")[-2000:]
                print(f"--- worker {name}, end of its log:\n{tail}", file=sys.stderr)
            raise
        finally:
            _workers_stop(workers)


def _workers_ready(names: list[str], workers: list[subprocess.Popen], broker_url: str) -> None:
    from celery import Celery

    deadline = time.monotonic() + WORKER_READY_SECONDS
    with Celery(broker=broker_url) as app:
        while True:
            dead = [w for w in workers if w.poll() is not None]
            if dead:
                raise SystemExit(f"a Celery worker exited at start with code {dead[0].returncode}")
            answered = {name for reply in app.control.ping(destination=names, timeout=1.0) for name in reply}
            if answered >= set(names):
                return
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"Celery workers not answering after {WORKER_READY_SECONDS} s: {set(names) - answered}"
                )


def _workers_stop(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    for worker in workers:
        try:
            worker.wait(timeout=WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def _peak_rss_mb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MB as _max_rss_mb counts them."""
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return round(kb / 1024, 1)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--step",
        choices=[*STEPS, "has_run", "build", "sharded", "add", "remove", "forget", "keep", "rewind"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--snapshot", help=argparse.SUPPRESS)
    parser.add_argument("--campaign", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--judgments", type=int, help="judgments to build, a multiple of 5 (default 1,000,000)")
    parser.add_argument("--units", type=int, help="units of 5 judgments each (default 200,000)")
    parser.add_argument(
        "--steps",
        help=f"comma-separated steps to run, of {', '.join(STEPS)} (default: {', '.join(DEFAULT_STEPS)})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="instead of the steps: a one-process analysis against one sharded across W Celery workers started here",
    )
    parser.add_argument("--broker-url", help=f"with --workers: the workers' broker (default {DEFAULT_BROKER_URL})")
    parser.add_argument(
        "--after-new-repeats",
        type=int,
        default=1,
        help="with --workers: measure the run after new work this many times, each against the same run "
        "before it (a noisy machine's spread; printed as seconds_after_new_work_repeated)",
    )
    parser.add_argument(
        "--shard-judgments",
        type=int,
        help=f"with --workers: judgments per shard (default: the {SHARD_SETTING} setting)",
    )
    args = parser.parse_args()
    if args.judgments is not None and args.units is not None:
        parser.error("give --judgments or --units, not both")
    if args.judgments is not None and args.judgments % N_GRADERS:
        parser.error(f"--judgments must be a multiple of {N_GRADERS} (each unit has {N_GRADERS}); got {args.judgments}")
    if args.units is None:
        args.units = 200_000 if args.judgments is None else args.judgments // N_GRADERS
    if not 1_000 <= args.units <= 5_000_000:
        parser.error(f"--units must be in 1,000..5,000,000 (--judgments 5,000..25,000,000), got {args.units}")
    if args.workers is None:
        if not args.step and (args.broker_url or args.shard_judgments is not None or args.after_new_repeats != 1):
            parser.error("--broker-url, --shard-judgments and --after-new-repeats go with --workers")
    elif args.after_new_repeats < 1:
        parser.error(f"--after-new-repeats must be 1 or more, got {args.after_new_repeats}")
    elif args.steps is not None:
        parser.error("--workers compares two analyses and runs no other step: give --workers or --steps, not both")
    elif args.workers < 1:
        parser.error(f"--workers must be at least 1; got {args.workers}")
    elif args.shard_judgments is not None and args.shard_judgments < 1:
        parser.error(f"--shard-judgments must be at least 1; got {args.shard_judgments}")
    args.broker_url = args.broker_url or DEFAULT_BROKER_URL
    given = ",".join(DEFAULT_STEPS) if args.steps is None else args.steps
    args.steps = [s for s in given.split(",") if s]
    if not args.steps or any(s not in STEPS for s in args.steps):
        parser.error(f"--steps takes some of {', '.join(STEPS)}; got {given!r}")
    return args


def main() -> None:
    args = _arguments()
    steps = args.steps
    if args.step == "sharded":
        os.environ["CELERY_BROKER_URL"] = args.broker_url  # read by the settings: runs go to the workers
    _setup()
    if args.step == "has_run":
        print(json.dumps(step_has_run(args.campaign)))
        return
    if args.step == "build":
        _ensure_database()
        print(json.dumps({"campaign": build(args.units)}))
        return
    if args.step == "sharded":
        print(json.dumps(step_sharded(args.campaign)))
        return
    if args.step in ("keep", "rewind"):
        print(json.dumps({"keep": step_keep, "rewind": step_rewind}[args.step](args.campaign, args.snapshot)))
        return
    if args.step in ("add", "remove", "forget"):
        print(json.dumps({"add": step_add, "remove": step_remove, "forget": step_forget}[args.step](args.campaign)))
        return
    if args.step:
        print(json.dumps(STEPS[args.step](args.campaign)))
        return
    # Built in a child process of its own, like every step: a child inherits its parent's peak RSS
    # (Linux keeps ru_maxrss across fork and exec), so this process must stay small.
    campaign_id = _step("build", 0, args.units)["campaign"]
    if args.workers is not None:
        print(json.dumps(compare(campaign_id, args.units, args)))
        return
    reads_a_run = {"report", "ground_truth_export", "ground_truth_csv_stream", "ground_truth_json_stream"}
    if (
        reads_a_run & set(steps)
        and "analysis" not in steps
        and not _step("has_run", campaign_id, args.units)["succeeded"]
    ):
        steps.insert(0, "analysis")  # the report and the ground truth read a finished run
    results = {}
    for step in steps:
        results[step] = _step(step, campaign_id, args.units)
        print(f"{step}: {results[step]}", file=sys.stderr)
    judgments = args.units * N_GRADERS
    if "report" in results:
        r = results["report"]
        print(
            f"report page at {judgments:,} judgments: median {r['median_ms']} ms, best {r['best_ms']} ms; "
            f"CPU (this process and its PostgreSQL backend) {r['cpu_ms']} ms a request",
            file=sys.stderr,
        )
    if "ground_truth_csv_stream" in results and "ground_truth_json_stream" in results:
        csv_rate = results["ground_truth_csv_stream"]["rows_per_s"]
        json_rate = results["ground_truth_json_stream"]["rows_per_s"]
        print(
            f"ground truth streamed at {judgments:,} judgments: CSV {csv_rate:,} rows/s, JSON {json_rate:,} rows/s "
            f"(JSON / CSV = {json_rate / csv_rate:.2f})",
            file=sys.stderr,
        )
        csv_cpu = results["ground_truth_csv_stream"]["rows_per_cpu_s"]
        json_cpu = results["ground_truth_json_stream"]["rows_per_cpu_s"]
        print(
            f"per CPU second (this process and its PostgreSQL backend): CSV {csv_cpu:,} rows, JSON {json_cpu:,} rows "
            f"(JSON / CSV = {json_cpu / csv_cpu:.2f})",
            file=sys.stderr,
        )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
