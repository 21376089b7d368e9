"""Benchmark: a full analysis of 1,000,000 judgments in PostgreSQL, the report page, the exports.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalutron_bench .venv/bin/python bench/analysis.py
    ... bench/analysis.py --units 2000000                      # 10,000,000 judgments
    ... bench/analysis.py --steps report,ground_truth_csv_stream,ground_truth_json_stream

Builds (once per size; reused on later runs) a synthetic BROAD+FINE campaign of 200,000 units × 5
graders with two events per judgment, loaded with COPY, a few hundred judgments with comments.
Then measures, each in a fresh process so peak memory (max RSS) belongs to that step alone: the
analysis run from database to stored result, the report page render (its time at the campaign's
size is printed on a line of its own, with its CPU per request), the streamed event-log CSV export,
the ground-truth CSV export in memory, and the streamed ground truth as CSV and as JSON (rows per
second of each, and their ratio; and per CPU second of this process and its PostgreSQL backend,
which a busy machine disturbs much less than wall time). A step that needs a finished analysis
runs one first when the campaign has none.
Aims: analysis < 60 s and < 2 GB; report ≤ 30 ms at 10^6 judgments and ≤ 60 ms at 10^7; export
≥ 100,000 rows/s; streamed JSON at least as many rows/s as streamed CSV.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
    import numpy as np
    from django.db import connection, transaction

    from grading.models import Campaign, Judgment
    from grading.models.choices import Role, Scheme
    from grading.services.campaigns import campaign_create, role_grant
    from tests.factories import make_user

    slug = slug_of(n_units)
    existing = Campaign.objects.filter(slug=slug).first()
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
        _fill(connection.cursor().cursor, campaign.pk, [g.pk for g in graders], np.random.default_rng(1), n_units)
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
    import numpy as np

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
    start = now - timedelta(days=30)

    def judgments():
        for i in range(n_units):
            for j, g in enumerate(graders):
                yield (
                    campaign_id,
                    g,
                    u0 + i + 1,
                    BROADS[level[i, j]],
                    f"{fine[i, j]:.1f}",
                    "",
                    False,
                    1,
                    "{}",
                    now,
                    now,
                )

    def events():
        for i in range(n_units):
            for j, g in enumerate(graders):
                t = start + timedelta(seconds=i * 5 + j)
                for k, (kind, value) in enumerate(
                    (("broad_set", f'"{BROADS[level[i, j]]}"'), ("fine_set", f"{fine[i, j]:.1f}"))
                ):
                    yield (
                        uuid.uuid4(),
                        campaign_id,
                        g,
                        u0 + i + 1,
                        None,
                        kind,
                        f'{{"value": {value}}}',
                        t + timedelta(seconds=k * 3),
                        now,
                        "bench",
                        k + 1,
                        1,
                    )

    _copy(
        cur,
        "grading_judgment",
        [
            "campaign_id",
            "grader_id",
            "unit_id",
            "broad",
            "fine",
            "comment",
            "skipped",
            "guidelines_version",
            "applied",
            "created_at",
            "updated_at",
        ],
        judgments(),
    )
    _copy(
        cur,
        "grading_gradingevent",
        [
            "id",
            "campaign_id",
            "grader_id",
            "unit_id",
            "query_id",
            "type",
            "payload",
            "client_ts",
            "server_ts",
            "session_id",
            "seq",
            "guidelines_version",
        ],
        events(),
    )
    for table in ("grading_query", "grading_candidate", "grading_unit"):
        cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
    cur.execute("ANALYZE")


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
        "status": status,
        "seconds": round(seconds, 2),
        "max_rss_mb": round(_max_rss_mb(), 1),
        "rss_before_mb": round(rss0, 1),
        "stages": run.timings,
        "error": run.error,
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
    from analysis import export, selectors, streams

    run = selectors.run_latest_good(campaign_id=campaign_id)
    rows = selectors.unit_results(run_id=run.pk).count()
    backend = _backend_pid()
    t0, c0 = time.perf_counter(), time.process_time() + _pid_cpu(backend)
    size = sum(len(chunk) for chunk in streams.ground_truth_csv(run, export.Filters()))
    seconds, cpu = time.perf_counter() - t0, time.process_time() + _pid_cpu(backend) - c0
    return {
        "rows": rows,
        "seconds": round(seconds, 2),
        "rows_per_s": round(rows / seconds),
        "cpu_s": round(cpu, 2),
        "rows_per_cpu_s": round(rows / cpu),
        "mb": round(size / 1e6, 1),
    }


def step_gt_json_stream(campaign_id: int) -> dict:
    """The organizer's JSON download as the response streams it (rows per second)."""
    from analysis import export, selectors, streams

    run = selectors.run_latest_good(campaign_id=campaign_id)
    rows = selectors.unit_results(run_id=run.pk).count()
    backend = _backend_pid()
    t0, c0 = time.perf_counter(), time.process_time() + _pid_cpu(backend)
    size = sum(len(chunk) for chunk in streams.ground_truth_json(run, export.Filters()))
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


def _step(step: str, campaign_id: int, n_units: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--step", step, "--campaign", str(campaign_id), "--units", str(n_units)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"step {step} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", choices=[*STEPS, "has_run"], help=argparse.SUPPRESS)
    parser.add_argument("--campaign", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--units", type=int, default=200_000, help="units of 5 judgments each (default 200,000)")
    parser.add_argument(
        "--steps", default=",".join(STEPS), help=f"comma-separated steps to run (default all: {', '.join(STEPS)})"
    )
    args = parser.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in steps if s not in STEPS]
    if unknown or not steps:
        parser.error(f"--steps takes some of {', '.join(STEPS)}; got {args.steps!r}")
    if not 1_000 <= args.units <= 5_000_000:
        parser.error(f"--units must be in 1,000..5,000,000, got {args.units}")
    _setup()
    if args.step == "has_run":
        print(json.dumps(step_has_run(args.campaign)))
        return
    if args.step:
        print(json.dumps(STEPS[args.step](args.campaign)))
        return
    _ensure_database()
    campaign_id = build(args.units)
    if "analysis" not in steps and not _step("has_run", campaign_id, args.units)["succeeded"]:
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
