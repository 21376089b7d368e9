"""Event ingestion benchmark: the app under gunicorn against PostgreSQL, driven over loopback.

    .venv/bin/python bench/ingest.py                      # 10 s per phase, 16 clients
    .venv/bin/python bench/ingest.py --seconds 20 --clients 32 --workers 3
    .venv/bin/python bench/ingest.py --app ../other-checkout --port 8300   # serve another checkout

It creates a scratch database (dropped afterwards), migrates it, seeds a broad_fine campaign with one
grader per client, starts gunicorn on 127.0.0.1, and runs two phases for a fixed time each: clients
posting single events, then batches of 20. It prints requests/s, events/s, p50/p99 latency and
events lost: ids the server acknowledged (stored or replayed) that are not in the database, plus
requests that failed. Lost must be 0. Aims on a 2-core machine: >= 500 single-event requests/s,
>= 5,000 events/s in batches, p99 < 100 ms.

Wall-clock figures depend on whatever else the machine is doing; the CPU the server spends does
much less. Per phase it prints the CPU seconds (user + system, from /proc) of gunicorn's master and
workers and of the scratch database's PostgreSQL backends, per request and per event:

    [cpu] batch 20: gunicorn 9.12 s = 22.80 ms/request; postgres backends 3.10 s = 7.75 ms/request; ...
    ... events 8000 -> gunicorn 1140 us/event     (one line)

and the SQL statements one request of each phase sends once the process is warm (BEGIN and COMMIT
counted, as libpq sends them), measured before the phases through Django's WSGI handler as the
spare grader. The client processes run on the same machine and are not counted.

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
from collections.abc import Callable
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
        "--warmup", type=float, default=3.0, help="seconds of single events before the phases, not measured (default 3)"
    )
    p.add_argument("--port", type=int, default=0, help="port gunicorn listens on (default: any free port)")
    p.add_argument(
        "--app", type=Path, default=ROOT, help="the checkout to serve (default: this one), e.g. an older commit's"
    )
    p.add_argument("--db-name", help="name of the scratch database (default evalutron_bench_<pid>)")
    p.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    args = p.parse_args()
    if args.seconds <= 0 or args.seconds > 600:
        p.error(f"--seconds must be in (0, 600], got {args.seconds}")
    if not 1 <= args.clients <= 256:
        p.error(f"--clients must be in 1..256, got {args.clients}")
    if not 0 <= args.port <= 65535:
        p.error(f"--port must be in 0..65535, got {args.port}")
    if not (args.app / "manage.py").is_file():
        p.error(f"--app must be a checkout of the project (with manage.py), got {args.app}")
    args.app = args.app.resolve()
    if args.db_name is not None and not args.db_name.replace("_", "").isalnum():
        p.error(f"--db-name may hold letters, digits and underscores only, got {args.db_name!r}")
    return args


# --- the scratch database and the app --------------------------------------------------------------
def scratch_url(server_url: str, name: str) -> str:
    parts = urlparse(server_url)
    return urlunparse(parts._replace(path=f"/{name}"))


def admin_sql(server_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(server_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def app_env(database_url: str, app: Path) -> dict[str, str]:
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
        "DATA_DIR": str(app / "var" / "bench"),
        "PYTHONPATH": str(app),
        "EVALUTRON_ENV_FILE": "",
        # The benchmark measures ingestion, not the per-user limit: its clients post as fast as they can.
        "THROTTLE_USER_BURST": "100000000/min",
        "THROTTLE_USER_SUSTAINED": "100000000/hour",
    }


def seed(database_url: str, app: Path, n_graders: int, n_units: int) -> dict:
    """Migrate and seed in a child process (Django settings are read once per process)."""
    env = app_env(database_url, app)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=app, env=env, check=True)
    code = f"""
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from grading.models import Assignment, Candidate, Unit
from grading.services.campaigns import campaign_create, role_grant
c = campaign_create(name="bench", slug="bench", scheme="broad_fine", status="open", initial_overlap=1,
                    guidelines="bench")
out = {{"campaign": c.pk, "graders": []}}
for g in range({n_graders} + 1):  # the last grader's requests count the SQL statements
    user = get_user_model().objects.create_user(username=f"bench{{g}}", password=None)
    role_grant(campaign=c, user=user, role="grader")
    cands = Candidate.objects.bulk_create(
        [Candidate(campaign=c, external_id=f"c{{g}}-{{i}}", text="x") for i in range({n_units})])
    units = Unit.objects.bulk_create(
        [Unit(campaign=c, external_id=f"u{{g}}-{{i}}", candidate=k) for i, k in enumerate(cands)])
    Assignment.objects.bulk_create(
        [Assignment(campaign=c, grader=user, unit=u, position=i) for i, u in enumerate(units)])
    out["graders"].append({{"token": Token.objects.create(user=user).key, "units": [u.pk for u in units]}})
try:  # the units' allocation state, as a campaign's first assignments build it
    from grading.services.allocation_state import assignments_added
    assignments_added(campaign=c)
except ImportError:  # a checkout from before allocation state
    pass
print(json.dumps(out))
"""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=app,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# Run in the app's own process: each body is posted twice as the spare grader (once to warm the
# process: the token remembered, an automatic analysis queued; once counted) through Django's WSGI
# handler, as gunicorn calls it, so that request_started / request_finished run as in the server
# (with CONN_HEALTH_CHECKS, a reused connection is checked once per request: by
# evalutron/postgres/base.py without a statement while it is idle and its socket quiet). libpq traces every
# message the connection sends: each simple Query and each extended-protocol Sync is a statement,
# BEGIN and COMMIT included, and callbacks run on commit are counted too.
COUNT_STATEMENTS = """
import json, sys, tempfile
import psycopg
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.test import RequestFactory
todo = json.loads(sys.stdin.read())
handler, factory, out = WSGIHandler(), RequestFactory(), {}

def post(body):
    request = factory.post("/api/events/", body, content_type="application/json",
                           HTTP_AUTHORIZATION="Token " + todo["token"])
    status = []
    response = handler(request.environ, lambda code, headers, *exc: status.append(code))
    content = b"".join(response)
    response.close()  # request_finished
    assert status[0][:3] in ("200", "201"), (status, content[:300])

for batch, bodies in todo["bodies"].items():
    for body in bodies:
        connection.ensure_connection()
        pgconn = connection.connection.pgconn
        with tempfile.TemporaryFile("w+") as trace:
            pgconn.trace(trace.fileno())
            pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            post(body)
            pgconn.untrace()
            trace.seek(0)
            sent = [line.split("\t") for line in trace.read().splitlines()]
        out[batch] = sum(1 for f in sent if len(f) > 2 and f[0] == "F" and f[2] in ("Query", "Sync"))
print(json.dumps(out))
"""


COUNTING_SESSION = "bench-statement-count"


def statements_per_request(database_url: str, app: Path, campaign: int, grader: dict) -> dict[int, int]:
    """The SQL statements one warm request of each phase sends (see COUNT_STATEMENTS)."""
    bodies = {}
    for _, batch in PHASES:
        units = list(enumerate(grader["units"][:batch]))
        session = COUNTING_SESSION
        first = [event(campaign, u, "broad_set", {"value": "VS"}, seq=i, session=session) for i, u in units]
        again = [event(campaign, u, "fine_set", {"value": 5.0}, seq=batch + i, session=session) for i, u in units]
        bodies[batch] = [json.dumps(b if batch > 1 else b[0]) for b in (first, again)]
    env = {**app_env(database_url, app), "ALLOWED_HOSTS": "127.0.0.1,testserver", "ANALYSIS_EMBEDDED_THREAD": "false"}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", COUNT_STATEMENTS],
        cwd=app,
        env=env,
        input=json.dumps({"token": grader["token"], "bodies": bodies}),
        check=True,
        capture_output=True,
        text=True,
    )
    return {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def event(campaign: int, unit: int, kind: str, payload: dict, *, seq: int, session: str) -> dict:
    return {
        "id": str(uuid.uuid4()),
        "campaign": campaign,
        "unit": unit,
        "type": kind,
        "payload": payload,
        "client_ts": datetime.now(UTC).isoformat(),
        "seq": seq,
        "session_id": session,
    }


# --- CPU seconds of the server, from /proc --------------------------------------------------------
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process (all its threads) so far; zeros when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0, 0.0
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS  # utime, stime (fields 14 and 15 of stat)


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def gunicorn_pids(master: int) -> list[int]:
    return [master, *children(master)]


def backend_pids(server_url: str, name: str) -> list[int]:
    """The scratch database's client backends (the app's connections), not this query's own."""
    import psycopg

    with psycopg.connect(server_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'"
            " AND pid <> pg_backend_pid()",
            [name],
        ).fetchall()
    return [r[0] for r in rows]


class CpuMeter:
    """CPU seconds spent between start() and stop() by a changing set of processes: those present at
    the start count from their reading then, those that appear later from zero (a new connection's
    backend, a restarted worker). A process that exits meanwhile is missed (none does here)."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.start_at: dict[int, tuple[float, float]] = {}
        self.user = self.system = 0.0

    def start(self) -> None:
        self.start_at = {pid: cpu_seconds(pid) for pid in self.pids()}

    def stop(self) -> float:
        """User + system seconds since start(); each part is kept in .user and .system."""
        self.user = self.system = 0.0
        for pid in self.pids():
            (user, system), (user0, system0) = cpu_seconds(pid), self.start_at.get(pid, (0.0, 0.0))
            self.user += max(0.0, user - user0)
            self.system += max(0.0, system - system0)
        return self.user + self.system


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(database_url: str, app: Path, port: int, workers: int, threads: int) -> subprocess.Popen:
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
    proc = subprocess.Popen(cmd, cwd=app, env=app_env(database_url, app))
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
            events.append(event(campaign, units[seq % len(units)], kind, payload, seq=seq, session=session))
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


def run_phase(port: int, seeded: dict, args: argparse.Namespace, batch: int, seconds: float) -> dict:
    graders = seeded["graders"][: args.clients]
    queue: mp.Queue = mp.Queue()
    start_at = time.time() + 1.0
    stop_at = start_at + seconds
    chunks = [graders[i :: args.processes] for i in range(args.processes)]
    procs = [
        mp.Process(target=client_process, args=(port, seeded["campaign"], c, batch, start_at, stop_at, queue))
        for c in chunks
        if c
    ]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in queue.get(timeout=seconds + 120)]
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
        "rps": len(latencies) / seconds,
        "eps": len(acked) / seconds,
        "p50": pct(0.50),
        "p99": pct(0.99),
    }


def stored_ids(database_url: str) -> set[str]:
    """Ids of the events the clients' requests stored (not those of the requests that counted statements)."""
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1)) as conn:
        rows = conn.execute("SELECT id FROM grading_gradingevent WHERE session_id <> %s", [COUNTING_SESSION])
        return {str(row[0]) for row in rows}


def main() -> None:
    args = parse_args()
    name = args.db_name or f"evalutron_bench_{os.getpid()}"
    database_url = scratch_url(args.database_url, name)
    admin_sql(args.database_url, f'CREATE DATABASE "{name}"')
    gunicorn = None
    try:
        seeded = seed(database_url, args.app, args.clients, args.units)
        counted = statements_per_request(database_url, args.app, seeded["campaign"], seeded["graders"][-1])
        port = args.port or free_port()
        gunicorn = start_gunicorn(database_url, args.app, port, args.workers, args.threads)
        print(
            f"app: {args.app}; gunicorn: {args.workers} workers x {args.threads} threads on 127.0.0.1:{port}; "
            f"{args.clients} clients in {args.processes} processes; {args.seconds:g} s per phase; "
            f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} "
            "(other work on the machine slows the wall-clock figures)"
        )
        # Every worker thread imports what a request needs and opens its connection before measuring.
        warm = run_phase(port, seeded, args, 1, args.warmup) if args.warmup > 0 else {"acked": [], "failed": 0}
        all_acked: list[str] = warm["acked"]
        failed = warm["failed"]
        server = CpuMeter(lambda: gunicorn_pids(gunicorn.pid))
        database = CpuMeter(lambda: backend_pids(args.database_url, name))
        for label, batch in PHASES:
            server.start()
            database.start()
            r = run_phase(port, seeded, args, batch, args.seconds)
            server_s, database_s = server.stop(), database.stop()
            all_acked += r["acked"]
            failed += r["failed"]
            print(
                f"{label:>6} (batch {batch:>2}): {r['rps']:8.0f} requests/s {r['eps']:8.0f} events/s "
                f"p50 {r['p50']:6.1f} ms  p99 {r['p99']:6.1f} ms  ({r['requests']} requests, {r['failed']} events "
                "failed)"
            )
            n_requests, n_events = max(r["requests"], 1), max(len(r["acked"]), 1)
            print(
                f"[cpu] batch {batch}: gunicorn {server_s:.2f} s = {server_s / n_requests * 1000:.2f} ms/request; "
                f"postgres backends {database_s:.2f} s = {database_s / n_requests * 1000:.2f} ms/request; "
                f"events {len(r['acked'])} -> gunicorn {server_s / n_events * 1e6:.0f} us/event"
            )
            print(
                f"[cpu] batch {batch}: of which system (kernel) time: gunicorn {server.system:.2f} s, "
                f"postgres backends {database.system:.2f} s"
            )
            print(f"[sql] batch {batch}: {counted[batch]} statements per request (BEGIN and COMMIT counted)")
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
