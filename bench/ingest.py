"""Event ingestion benchmark: the app under gunicorn against PostgreSQL, driven over loopback.

    .venv/bin/python bench/ingest.py                      # 10 s per phase, 16 clients
    .venv/bin/python bench/ingest.py --seconds 20 --clients 32 --workers 3

It creates a scratch database (dropped afterwards), migrates it, seeds a broad_fine campaign with one
grader per client, starts gunicorn on 127.0.0.1, and runs two phases for a fixed time each: clients
posting single events, then batches of 20. It prints requests/s, events/s, p50/p99 latency and
events lost: ids the server acknowledged (stored or replayed) that are not in the database, plus
requests that failed. Lost must be 0. Aims on a 2-core machine: >= 500 single-event requests/s,
>= 5,000 events/s in batches, p99 < 100 ms.

Needs PostgreSQL (--database-url, default postgres://postgres@127.0.0.1:5432/postgres: the server
on which the scratch database is made). Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
PHASES = (("single", 1), ("batch", 20))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=10.0, help="duration of each phase (default 10)")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    p.add_argument("--processes", type=int, default=2, help="client processes the clients are spread over (default 2)")
    p.add_argument("--workers", type=int, default=3, help="gunicorn worker processes (default 3)")
    p.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (default 4)")
    p.add_argument("--units", type=int, default=200, help="units per grader (default 200)")
    p.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    args = p.parse_args()
    if args.seconds <= 0 or args.seconds > 600:
        p.error(f"--seconds must be in (0, 600], got {args.seconds}")
    if not 1 <= args.clients <= 256:
        p.error(f"--clients must be in 1..256, got {args.clients}")
    return args


# --- the scratch database and the app --------------------------------------------------------------
def scratch_url(server_url: str, name: str) -> str:
    parts = urlparse(server_url)
    return urlunparse(parts._replace(path=f"/{name}"))


def admin_sql(server_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(server_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def app_env(database_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DEBUG": "false",
        "SECRET_KEY": "bench-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "DB_CONN_MAX_AGE": "600",
        "DATA_DIR": str(ROOT / "var" / "bench"),
        "PYTHONPATH": str(ROOT),
    }


def seed(database_url: str, n_graders: int, n_units: int) -> dict:
    """Migrate and seed in a child process (Django settings are read once per process)."""
    env = app_env(database_url)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True)
    code = f"""
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from grading.models import Assignment, Candidate, Unit
from grading.services.campaigns import campaign_create, role_grant
c = campaign_create(name="bench", slug="bench", scheme="broad_fine", status="open", initial_overlap=1,
                    guidelines="bench")
out = {{"campaign": c.pk, "graders": []}}
for g in range({n_graders}):
    user = get_user_model().objects.create_user(username=f"bench{{g}}", password=None)
    role_grant(campaign=c, user=user, role="grader")
    cands = Candidate.objects.bulk_create(
        [Candidate(campaign=c, external_id=f"c{{g}}-{{i}}", text="x") for i in range({n_units})])
    units = Unit.objects.bulk_create(
        [Unit(campaign=c, external_id=f"u{{g}}-{{i}}", candidate=k) for i, k in enumerate(cands)])
    Assignment.objects.bulk_create(
        [Assignment(campaign=c, grader=user, unit=u, position=i) for i, u in enumerate(units)])
    out["graders"].append({{"token": Token.objects.create(user=user).key, "units": [u.pk for u in units]}})
print(json.dumps(out))
"""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(database_url: str, port: int, workers: int, threads: int) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "evalutron.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--keep-alive",
        "30",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=app_env(database_url))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("gunicorn did not start within 30 s")


# --- clients -----------------------------------------------------------------------------------------
def client_loop(port: int, campaign: int, grader: dict, batch: int, stop_at: float, out: list) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {grader['token']}", "Content-Type": "application/json"}
    session, seq, latencies, acked, failed, sent = uuid.uuid4().hex, 0, [], [], 0, 0
    units = grader["units"]
    while time.monotonic() < stop_at:
        events = []
        for _ in range(batch):
            seq += 1
            kind, payload = (
                ("broad_set", {"value": "VS"}) if seq % 2 else ("fine_set", {"value": round(seq % 100 / 10, 1)})
            )
            events.append(
                {
                    "id": str(uuid.uuid4()),
                    "campaign": campaign,
                    "unit": units[seq % len(units)],
                    "type": kind,
                    "payload": payload,
                    "client_ts": datetime.now(UTC).isoformat(),
                    "seq": seq,
                    "session_id": session,
                }
            )
        body = json.dumps(events if batch > 1 else events[0])
        started = time.perf_counter()
        try:
            conn.request("POST", "/api/events/", body, headers)
            response = conn.getresponse()
            data = json.loads(response.read())
        except (OSError, http.client.HTTPException, ValueError):
            failed += len(events)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        latencies.append(time.perf_counter() - started)
        sent += len(events)
        results = data.get("results", [data]) if isinstance(data, dict) else []
        ok = [r["id"] for r in results if r.get("status") in ("stored", "replayed")]
        acked.extend(ok)
        failed += len(events) - len(ok)
    out.append({"latencies": latencies, "acked": acked, "failed": failed, "sent": sent})


def client_process(port: int, campaign: int, graders: list, batch: int, start_at: float, stop_at: float, queue) -> None:
    while time.time() < start_at:
        time.sleep(0.005)
    mono_stop = time.monotonic() + (stop_at - time.time())
    out: list = []
    threads = [threading.Thread(target=client_loop, args=(port, campaign, g, batch, mono_stop, out)) for g in graders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(out)


def run_phase(port: int, seeded: dict, args: argparse.Namespace, batch: int) -> dict:
    graders = seeded["graders"][: args.clients]
    queue: mp.Queue = mp.Queue()
    start_at = time.time() + 1.0
    stop_at = start_at + args.seconds
    chunks = [graders[i :: args.processes] for i in range(args.processes)]
    procs = [
        mp.Process(target=client_process, args=(port, seeded["campaign"], c, batch, start_at, stop_at, queue))
        for c in chunks
        if c
    ]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in queue.get(timeout=args.seconds + 120)]
    for p in procs:
        p.join()
    latencies = sorted(x for r in results for x in r["latencies"])
    acked = [i for r in results for i in r["acked"]]

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else float("nan")

    return {
        "requests": len(latencies),
        "events": sum(r["sent"] for r in results),
        "acked": acked,
        "failed": sum(r["failed"] for r in results),
        "rps": len(latencies) / args.seconds,
        "eps": len(acked) / args.seconds,
        "p50": pct(0.50),
        "p99": pct(0.99),
    }


def stored_ids(database_url: str) -> set[str]:
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1)) as conn:
        return {str(row[0]) for row in conn.execute("SELECT id FROM grading_gradingevent")}


def main() -> None:
    args = parse_args()
    name = f"evalutron_bench_{os.getpid()}"
    database_url = scratch_url(args.database_url, name)
    admin_sql(args.database_url, f'CREATE DATABASE "{name}"')
    gunicorn = None
    try:
        seeded = seed(database_url, args.clients, args.units)
        port = free_port()
        gunicorn = start_gunicorn(database_url, port, args.workers, args.threads)
        print(
            f"gunicorn: {args.workers} workers x {args.threads} threads on 127.0.0.1:{port}; "
            f"{args.clients} clients in {args.processes} processes; {args.seconds:g} s per phase; {os.cpu_count()} CPUs"
        )
        all_acked: list[str] = []
        failed = 0
        for label, batch in PHASES:
            r = run_phase(port, seeded, args, batch)
            all_acked += r["acked"]
            failed += r["failed"]
            print(
                f"{label:>6} (batch {batch:>2}): {r['rps']:8.0f} requests/s {r['eps']:8.0f} events/s "
                f"p50 {r['p50']:6.1f} ms  p99 {r['p99']:6.1f} ms  ({r['requests']} requests, {r['failed']} events "
                "failed)"
            )
        in_db = stored_ids(database_url)
        lost = len(set(all_acked) - in_db)
        print(
            f"events acknowledged: {len(set(all_acked))}, stored: {len(in_db)}, lost: {lost}, failed requests' "
            f"events: {failed}"
        )
        if lost or failed:
            sys.exit(1)
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=30)
        admin_sql(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
