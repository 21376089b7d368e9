"""Automatic runs after new judgments: debounced, never more than one queued per campaign."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import dispatch, runs
from grading.models import Assignment
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db


def _judge(campaign, n: int) -> None:
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit")[:n]:
        record(a.grader, campaign, "broad_set", {"value": "VS"}, unit=a.unit)


def test_new_judgments_queue_one_automatic_run(django_capture_on_commit_callbacks, settings):
    settings.ANALYSIS_DEBOUNCE_SECONDS = 60
    campaign = make_campaign(graders=2)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 5)
    auto = AnalysisRun.objects.filter(campaign=campaign, trigger=RunTrigger.AUTO)
    assert auto.count() == 1
    run = auto.get()
    assert run.status == RunStatus.QUEUED
    assert timedelta(seconds=55) < run.not_before - timezone.now() <= timedelta(seconds=60)


def test_an_embedded_automatic_run_executes_once_due_when_due_runs_are_executed(
    django_capture_on_commit_callbacks, settings
):
    settings.ANALYSIS_DEBOUNCE_SECONDS = 60
    campaign = make_campaign(graders=2)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 4)
    assert runs.runs_execute_due(campaign_id=campaign.pk) == 0  # still inside the debounce window
    AnalysisRun.objects.filter(campaign=campaign).update(not_before=timezone.now() - timedelta(seconds=1))
    assert runs.runs_execute_due(campaign_id=campaign.pk) == 1
    assert AnalysisRun.objects.get(campaign=campaign).status == RunStatus.SUCCEEDED


def test_judgments_arriving_while_a_run_works_queue_the_next_one(django_capture_on_commit_callbacks):
    campaign = make_campaign(graders=2)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 1)
    AnalysisRun.objects.filter(campaign=campaign).update(status=RunStatus.RUNNING)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 2)
    statuses = sorted(AnalysisRun.objects.filter(campaign=campaign).values_list("status", flat=True))
    assert statuses == [RunStatus.QUEUED, RunStatus.RUNNING]


def test_with_a_broker_the_automatic_run_is_sent_with_the_debounce_countdown(
    django_capture_on_commit_callbacks, settings, monkeypatch
):
    settings.ANALYSIS_DEBOUNCE_SECONDS = 30
    sent = []
    monkeypatch.setattr(dispatch, "embedded", lambda: False)
    monkeypatch.setattr(
        dispatch.app, "send_task", lambda name, args, task_id, countdown: sent.append((name, args, countdown))
    )
    campaign = make_campaign(graders=2)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 3)
    run = AnalysisRun.objects.get(campaign=campaign)
    assert sent == [("analysis.run", [run.pk], 30)]


def test_only_one_automatic_run_can_wait_even_when_two_requests_race():
    campaign = make_campaign(graders=2)
    first = runs.run_schedule_auto(campaign_id=campaign.pk)
    AnalysisRun.objects.create(campaign=campaign, trigger=RunTrigger.MANUAL)  # manual runs do not count
    # The second request missed the first's row in its existence check: the constraint stops it.
    monkey_exists = AnalysisRun.objects.filter(pk=-1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs.AnalysisRun.objects, "filter", lambda *a, **k: monkey_exists)
        assert runs.run_schedule_auto(campaign_id=campaign.pk) is None
    assert first is not None
    assert AnalysisRun.objects.filter(campaign=campaign, trigger=RunTrigger.AUTO).count() == 1


def test_embedded_the_runner_thread_started_by_a_request_executes_the_automatic_run(transactional_db, settings, client):
    from analysis import embedded

    settings.ANALYSIS_EMBEDDED_THREAD = True
    settings.ANALYSIS_DEBOUNCE_SECONDS = 0
    campaign = make_campaign(graders=2)
    _judge(campaign, 4)  # autocommit: the on-commit hook fires as each event is stored
    run = AnalysisRun.objects.get(campaign=campaign, trigger=RunTrigger.AUTO)
    assert run.status == RunStatus.QUEUED  # the graders' requests did not run it
    try:
        client.get("/")  # any request starts the runner; the request itself does no analysis
        deadline = time.monotonic() + 30
        while run.status != RunStatus.SUCCEEDED and time.monotonic() < deadline:
            time.sleep(0.2)
            run.refresh_from_db()
    finally:
        embedded.runner_stop()
    assert run.status == RunStatus.SUCCEEDED, (run.status, run.error)


def test_dispatch_sends_the_task_under_the_name_the_worker_registered():
    from analysis.tasks import analysis_run

    assert analysis_run.name == dispatch.RUN_TASK


def test_embedded_a_run_queued_for_the_runner_starts_within_a_second(transactional_db, settings, monkeypatch):
    """The runner, idle in its wait between sweeps, is woken by the queueing itself (no pass by hand)."""
    from analysis import embedded

    settings.ANALYSIS_EMBEDDED_THREAD = True
    settings.ANALYSIS_DEBOUNCE_SECONDS = 0
    campaign = make_campaign(graders=2)
    idle, started = threading.Event(), threading.Event()
    next_due_in, execute = runs.run_next_due_in, dispatch.run_execute
    monkeypatch.setattr(runs, "run_next_due_in", lambda: (idle.set(), next_due_in())[1])
    monkeypatch.setattr(dispatch, "run_execute", lambda **kw: (started.set(), execute(**kw))[1])
    try:
        assert embedded.runner_ensure_started()
        assert idle.wait(10)  # the first pass found nothing; the runner now waits (up to POLL_SECONDS)
        queued_at = time.monotonic()
        run = runs.run_schedule_auto(campaign_id=campaign.pk)  # autocommit: dispatched as it commits
        assert run is not None
        assert started.wait(1.0), "the queued run did not start within a second"
        assert time.monotonic() - queued_at < 1.0
    finally:
        embedded.runner_stop()
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, (run.status, run.error)


def test_an_automatic_run_is_numbered_when_it_starts_so_numbers_follow_the_starting_order(
    django_capture_on_commit_callbacks, settings, client
):
    settings.ANALYSIS_DEBOUNCE_SECONDS = 60
    organizer = make_user()
    campaign = make_campaign(graders=2, organizer=organizer)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 4)  # queues the automatic run, due in a minute
    auto = AnalysisRun.objects.get(campaign=campaign, trigger=RunTrigger.AUTO)
    assert auto.number is None
    client.force_login(organizer)
    page = client.get(f"/reports/campaigns/{campaign.pk}/").content.decode()
    assert "numbered when it starts, so that numbers follow the order in which analyses start" in page
    assert f"Analysis #{auto.pk}" not in page
    with django_capture_on_commit_callbacks(execute=True):
        manual = runs.run_create(campaign_id=campaign.pk)  # embedded: executes as it commits
    manual.refresh_from_db()
    assert (manual.status, manual.number) == (RunStatus.SUCCEEDED, 1)
    AnalysisRun.objects.filter(pk=auto.pk).update(not_before=timezone.now() - timedelta(seconds=1))
    assert runs.runs_execute_due(campaign_id=campaign.pk) == 1
    auto.refresh_from_db()
    assert (auto.status, auto.number) == (RunStatus.SUCCEEDED, 2)
    assert auto.started_at > manual.started_at


def test_an_overdue_queued_run_costs_each_commit_one_statement_and_is_not_queued_again(
    django_capture_on_commit_callbacks, settings
):
    """A queued automatic run that no worker has taken yet, past its start time: events keep
    committing meanwhile, and each asks once whether it still waits (it cannot be remembered: it may
    start at any moment, and the judgments committed after it has started need the next run)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from analysis import scheduling

    settings.ANALYSIS_DEBOUNCE_SECONDS = 60
    campaign = make_campaign(graders=2)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 1)
    queued = AnalysisRun.objects.get(campaign=campaign, trigger=RunTrigger.AUTO)
    with CaptureQueriesContext(connection) as queries:
        scheduling.schedule_auto_run(campaign_id=campaign.pk)
    assert len(queries) == 0  # due in a minute: remembered
    AnalysisRun.objects.filter(pk=queued.pk).update(not_before=timezone.now() - timedelta(seconds=5))
    scheduling._QUEUED_UNTIL.clear()
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            scheduling.schedule_auto_run(campaign_id=campaign.pk)
        assert len(queries) == 1, [q["sql"] for q in queries]
    assert list(AnalysisRun.objects.filter(campaign=campaign).values_list("pk", flat=True)) == [queued.pk]
    AnalysisRun.objects.filter(pk=queued.pk).update(status=RunStatus.RUNNING)
    scheduling.schedule_auto_run(campaign_id=campaign.pk)  # it started: the next one is queued
    assert AnalysisRun.objects.filter(campaign=campaign, status=RunStatus.QUEUED).count() == 1
