"""Automatic runs after new judgments: debounced, never more than one queued per campaign."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import runs
from grading.models import Assignment
from tests.factories import make_campaign, record

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


def test_an_embedded_automatic_run_executes_on_the_next_report_view_once_due(django_capture_on_commit_callbacks,
                                                                               settings):
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
        django_capture_on_commit_callbacks, settings, monkeypatch):
    settings.ANALYSIS_DEBOUNCE_SECONDS = 30
    sent = []
    monkeypatch.setattr(runs, "embedded", lambda: False)
    monkeypatch.setattr("analysis.tasks.analysis_run.apply_async",
                        lambda args, task_id, countdown: sent.append((args, countdown)))
    campaign = make_campaign(graders=2)
    with django_capture_on_commit_callbacks(execute=True):
        _judge(campaign, 3)
    run = AnalysisRun.objects.get(campaign=campaign)
    assert sent == [((run.pk,), 30)]


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
