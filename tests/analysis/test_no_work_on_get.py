"""Reading a report or polling a run never runs analyses or sweeps runs: the worker, beat or the
embedded runner do. A GET issues no INSERT, UPDATE or DELETE."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs

pytestmark = pytest.mark.django_db
WRITES = ("INSERT", "UPDATE", "DELETE")


@pytest.fixture
def pending(judged_campaign, settings) -> tuple[AnalysisRun, AnalysisRun]:
    """A queued run that is due, and a running run whose worker went silent long ago."""
    due = AnalysisRun.objects.create(
        campaign=judged_campaign,
        parameters=runs.parameters_clean({"n_boot": 50}),
        not_before=timezone.now() - timedelta(minutes=5),
    )
    beat = timezone.now() - timedelta(seconds=settings.ANALYSIS_STALE_SECONDS + 60)
    silent = AnalysisRun.objects.create(
        campaign=judged_campaign,
        status=RunStatus.RUNNING,
        attempts=1,
        parameters=runs.parameters_clean({"n_boot": 60}),
        stage="agreement",
        started_at=beat,
        heartbeat_at=beat,
    )
    return due, silent


def _writes(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)]


@pytest.mark.parametrize(
    "path",
    [
        "/reports/campaigns/{campaign}/",
        "/api/analyses/{due}/",
        "/api/analyses/{silent}/",
        "/api/campaigns/{campaign}/analyses/",
    ],
)
def test_a_get_issues_no_writes_and_leaves_runs_as_they_were(client, organizer, judged_campaign, pending, path):
    due, silent = pending
    client.force_login(organizer)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path.format(campaign=judged_campaign.pk, due=due.pk, silent=silent.pk))
    assert response.status_code == 200
    assert len(queries.captured_queries) > 0  # the capture saw the request's reads
    assert _writes(queries) == []
    assert AnalysisRun.objects.get(pk=due.pk).status == RunStatus.QUEUED
    assert AnalysisRun.objects.get(pk=silent.pk).status == RunStatus.RUNNING


def test_the_embedded_runner_command_sweeps_and_executes_what_a_get_left_alone(judged_campaign, pending):
    due, silent = pending
    call_command("run_due_analyses", stdout=io.StringIO())
    assert AnalysisRun.objects.get(pk=due.pk).status == RunStatus.SUCCEEDED
    # The silent run was re-queued by the sweep and then executed as a due run.
    assert AnalysisRun.objects.get(pk=silent.pk).status == RunStatus.SUCCEEDED
    assert AnalysisRun.objects.get(pk=silent.pk).attempts == 2
