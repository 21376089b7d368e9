"""A real Celery worker (a subprocess against Redis and the test database) runs analysis runs.

Each test starts its own worker consuming a queue named for the test, so parallel test runs on the
same Redis never take each other's messages. The suite runs these on PostgreSQL in CI and again on
the embedded SQLite file (both_backends).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection
from django.utils import timezone

from analysis import unit_blocks
from analysis.models import AnalysisRun, RunShard, RunStatus
from analysis.reports.serialize import jsonable
from analysis.services import runs
from analysis.services.report import report_compute
from grading.models import Judgment
from tests import services
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, record

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.redis, pytest.mark.both_backends]


def _test_database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """`celery worker --pool=solo` in a subprocess; its log goes to a file shown on failure.

    ``pause`` = (stage, seconds, attempts): the worker's analysis waits, heartbeating, in that stage
    during the first ``attempts`` attempts (see tests/analysis/slow_worker.py).
    """

    def __init__(self, queue: str, log: Path, *, pause: tuple[str, float, int], env: dict[str, str]) -> None:
        env = {
            **env,
            **os.environ,
            "DATABASE_URL": _test_database_url(),
            "CELERY_BROKER_URL": services.broker_url(),
            "DEBUG": "true",
            "SECRET_KEY": "worker-test-secret-key-" + "w" * 30,
            "DB_CONN_MAX_AGE": "0",
        }
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.analysis.slow_worker",
                pause[0],
                str(pause[1]),
                str(pause[2]),
                "--",
                "worker",
                "--pool=solo",
                "-c",
                "1",
                "-Q",
                queue,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-l",
                "info",
                "-n",
                f"{queue}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_for(lambda: "ready." in log.read_text(errors="replace"), 60, "the worker to start")

    def _wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if self.proc.poll() is not None:
                pytest.fail(f"the worker exited ({self.proc.returncode}):\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)
        pytest.fail(f"timed out waiting for {what}:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"analysis-test-{uuid.uuid4().hex[:10]}"
    yield name
    import redis

    redis.Redis.from_url(services.broker_url()).delete(name)


@pytest.fixture
def sender(queue: str) -> Iterator[Callable[[int], None]]:
    """Send the analysis task for a run id through the real broker, to this test's queue."""
    app = Celery("evalutron-test-sender", broker=services.broker_url())
    app.conf.broker_connection_retry_on_startup = True

    def send(run_id: int) -> None:
        app.send_task("analysis.run", args=[run_id], queue=queue)

    yield send
    app.close()


@pytest.fixture
def start_worker(queue: str, tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    workers: list[Worker] = []

    def start(pause: tuple[str, float, int] = ("", 0.0, 0), **env: str) -> Worker:
        workers.append(Worker(queue, tmp_path / f"worker-{len(workers)}.log", pause=pause, env=env))
        return workers[-1]

    yield start
    for worker in workers:
        worker.stop()


def _poll(run_id: int, until: Callable[[AnalysisRun], bool], timeout: float = 45) -> tuple[AnalysisRun, list]:
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = AnalysisRun.objects.get(pk=run_id)
        seen.append((run.status, run.stage, run.progress))
        if until(run):
            return run, seen
        time.sleep(0.1)
    pytest.fail(f"run {run_id} did not get there; last states seen: {seen[-5:]}")


@pytest.fixture
def campaign(transactional_db):
    campaign = make_campaign(n_queries=3, n_candidates=4, graders=3)
    judge_broad_fine(campaign, seed=5)
    return campaign


def test_a_real_worker_runs_an_analysis_and_stores_what_the_metrics_compute(campaign, sender, start_worker):
    start_worker(pause=("agreement", 1.0, 1))
    params = runs.parameters_clean({"n_boot": 200})
    run = AnalysisRun.objects.create(campaign=campaign, parameters=params, seed=20260101)
    sender(run.pk)

    done, seen = _poll(run.pk, lambda r: r.is_finished)

    assert done.status == RunStatus.SUCCEEDED, done.error
    assert ("running", "agreement", 20) in seen  # status and progress were visible while it worked
    assert done.progress == 100 and done.attempts == 1 and done.started_at and done.finished_at
    assert {"loading judgments", "agreement", "storing results", "total"} <= set(done.timings)
    expected, units = report_compute(campaign_id=campaign.pk, parameters=params, seed=run.seed)
    assert done.result == jsonable(expected)
    stored = unit_blocks.RunUnits(done.pk).frame().itertuples()
    stored = {r.unit: (r.n, r.mean, r.std, r.entropy, r.n_vs) for r in stored}
    assert stored == {int(u.unit): (u.n, u.mean, u.std, u.entropy, u.n_vs) for u in units.itertuples()}


def test_a_worker_killed_mid_run_leaves_the_run_retried_not_stuck(campaign, sender, start_worker, queue, monkeypatch):
    worker = start_worker(pause=("agreement", 120.0, 1))
    params = runs.parameters_clean({"n_boot": 50})
    run = AnalysisRun.objects.create(campaign=campaign, parameters=params, seed=7)
    sender(run.pk)
    _poll(run.pk, lambda r: r.stage == "agreement")

    worker.kill()  # SIGKILL while the deliberately slow stage runs: no chance to clean up
    assert AnalysisRun.objects.get(pk=run.pk).status == RunStatus.RUNNING  # ... until the sweeper looks

    # The sweeper, ANALYSIS_STALE_SECONDS later: the run goes back to the queue, sent to this test's queue.
    monkeypatch.setattr(runs, "embedded", lambda: False)
    monkeypatch.setattr(runs, "run_enqueue", lambda *, run_id, countdown=0, background=False: sender(run_id))
    later = timezone.now() + timedelta(seconds=settings.ANALYSIS_STALE_SECONDS + 1)
    outcome = runs.run_sweep_stale(now=later)
    assert outcome.requeued == [run.pk]
    requeued = AnalysisRun.objects.get(pk=run.pk)
    assert requeued.status == RunStatus.QUEUED and "stopped reporting during stage “agreement”" in requeued.error

    start_worker()
    done, _ = _poll(run.pk, lambda r: r.is_finished)
    assert done.status == RunStatus.SUCCEEDED, done.error
    assert done.attempts == 2


def test_two_real_workers_share_a_sharded_run_and_store_what_one_reading_computes(campaign, sender, start_worker):
    """The run's shards go out as a chord to the workers' queue; the combining step stores exactly
    the report one process computes from the whole campaign (docs/analysis.md, "Sharded runs")."""
    for _ in range(2):
        start_worker(ANALYSIS_SHARD_JUDGMENTS="4")
    params = runs.parameters_clean({"n_boot": 200})
    run = AnalysisRun.objects.create(campaign=campaign, parameters=params, seed=20260102)
    sender(run.pk)

    done, seen = _poll(run.pk, lambda r: r.is_finished, timeout=90)

    assert done.status == RunStatus.SUCCEEDED, done.error
    assert done.shards_total == 3 and done.shards_done == 3  # three graders, one shard each
    assert any(status == "running" for status, _, _ in seen)
    expected, units = report_compute(campaign_id=campaign.pk, parameters=params, seed=run.seed)
    assert done.result == jsonable(expected)
    stored = unit_blocks.RunUnits(done.pk).frame().itertuples()
    stored = {r.unit: (r.n, r.mean, r.std, r.entropy, r.n_vs) for r in stored}
    assert stored == {int(u.unit): (u.n, u.mean, u.std, u.entropy, u.n_vs) for u in units.itertuples()}
    assert {"planning shards", "reading shards", "loading judgments", "storing results"} <= set(done.timings)

    # One grader changes a judgment: the next run reads that grader's shard only and takes the others.
    judgment = Judgment.objects.filter(campaign=campaign).order_by("grader_id", "unit_id").first()
    record(
        judgment.grader,
        campaign,
        "broad_set",
        {"value": "NS" if judgment.broad != "NS" else "VS"},
        unit=judgment.unit,
        client_ts=timezone.now() - timedelta(minutes=1),
        seq=99,
    )
    again = AnalysisRun.objects.create(campaign=campaign, parameters=params, seed=run.seed)
    sender(again.pk)
    done, _ = _poll(again.pk, lambda r: r.is_finished, timeout=90)
    assert done.status == RunStatus.SUCCEEDED, done.error
    assert done.shards_total == 3 and done.shards_done == 3 and done.shards_reused == 2
    read = RunShard.objects.get(run=done, reused_from__isnull=True)
    assert read.graders[0] is None  # the first grader's shard
    expected, _ = report_compute(campaign_id=campaign.pk, parameters=params, seed=run.seed)
    assert done.result == jsonable(expected)
