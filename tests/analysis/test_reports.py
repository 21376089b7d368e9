"""The report page, its CSV downloads and the analyses API: who sees what."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import CampaignRole
from grading.models.choices import Role
from tests.factories import make_user

pytestmark = pytest.mark.django_db
SECTIONS = ["overview", "agreement", "stability", "confusability", "fine-within-broad", "graders", "queries"]


@pytest.fixture
def analysed(judged_campaign):
    run = AnalysisRun.objects.create(
        campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 100}), seed=3
    )
    run_execute(run_id=run.pk)
    return judged_campaign


def _grader(campaign):
    return CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).select_related("user").first().user


def test_an_organizer_sees_every_section_with_plots(client, analysed, organizer):
    client.force_login(organizer)
    page = client.get(f"/reports/campaigns/{analysed.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    for section in SECTIONS:
        assert f'id="section-{section}"' in html
    assert html.count('<svg class="plot"') >= 8 and html.count("<desc id=") == html.count('<svg class="plot"')
    assert "Landis &amp; Koch" in html and "Krippendorff" in html and "χ²" in html


def test_organizers_see_pseudonyms_and_admins_see_names(client, analysed, organizer):
    grader = _grader(analysed)
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert "G01" in html and grader.username not in html
    client.force_login(make_user("admin", is_staff=True))
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert f"G01 ({CampaignRole.objects.get(campaign=analysed, pseudonym='G01').user.username})" in html


def test_graders_get_403_on_the_report_its_csvs_the_api_and_the_exports(client, analysed):
    client.force_login(_grader(analysed))
    run = AnalysisRun.objects.get(campaign=analysed)
    for url in (
        f"/reports/campaigns/{analysed.pk}/",
        f"/reports/campaigns/{analysed.pk}/tables/graders.csv",
        f"/api/campaigns/{analysed.pk}/analyses/",
        f"/api/analyses/{run.pk}/",
        f"/api/campaigns/{analysed.pk}/ground-truth/?format=csv",
        f"/api/campaigns/{analysed.pk}/events/",
    ):
        assert client.get(url).status_code == 403, url
    assert client.post(f"/reports/campaigns/{analysed.pk}/run/").status_code == 403
    assert (
        client.post(f"/api/campaigns/{analysed.pk}/analyses/", {}, content_type="application/json").status_code == 403
    )


def test_organizers_cannot_export(client, analysed, organizer):
    client.force_login(organizer)
    assert client.get(f"/api/campaigns/{analysed.pk}/ground-truth/").status_code == 403
    assert client.get(f"/api/campaigns/{analysed.pk}/events/").status_code == 403


def test_anonymous_visitors_are_sent_to_log_in(client, analysed):
    assert client.get(f"/reports/campaigns/{analysed.pk}/").status_code == 302


def test_every_table_downloads_as_csv(client, analysed, organizer):
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    links = sorted(set(part.split('"')[0] for part in html.split('href="')[1:] if ".csv" in part.split('"')[0]))
    assert len(links) >= 12
    for link in links:
        response = client.get(link)
        assert response.status_code == 200, link
        body = b"".join(response.streaming_content) if response.streaming else response.content  # downloads stream
        rows = list(csv.reader(io.StringIO(body.decode())))
        assert len(rows) >= 2, link


def test_the_report_page_starts_a_run(client, analysed, organizer, django_capture_on_commit_callbacks):
    client.force_login(organizer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/reports/campaigns/{analysed.pk}/run/")
    assert response.status_code == 302
    run = AnalysisRun.objects.filter(campaign=analysed, trigger=RunTrigger.MANUAL).latest("id")
    assert run.status == RunStatus.SUCCEEDED and run.created_by == organizer


def test_the_api_starts_a_run_and_reports_its_progress(client, judged_campaign, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/api/campaigns/{judged_campaign.pk}/analyses/",
        {"parameters": {"n_boot": 50}, "seed": 9},
        content_type="application/json",
    )
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["trigger"] == "api" and body["seed"] == 9
    run_execute(run_id=body["id"])
    polled = client.get(f"/api/analyses/{body['id']}/?result=1").json()
    assert polled["status"] == "succeeded" and polled["progress"] == 100
    assert polled["result"]["agreement"]["levels"][0]["name"] == "3 levels"


def test_the_api_says_how_many_shards_of_a_run_are_done(client, judged_campaign, organizer):
    planned = AnalysisRun.objects.create(campaign=judged_campaign)
    sharded = AnalysisRun.objects.create(
        campaign=judged_campaign, status=RunStatus.RUNNING, stage="agreement", shards_total=8, shards_done=3
    )
    client.force_login(organizer)
    body = client.get(f"/api/analyses/{sharded.pk}/").json()
    assert (body["shards_done"], body["shards_total"]) == (3, 8)
    listed = {run["id"]: run for run in client.get(f"/api/campaigns/{judged_campaign.pk}/analyses/").json()}
    assert (listed[sharded.pk]["shards_done"], listed[sharded.pk]["shards_total"]) == (3, 8)
    assert (listed[planned.pk]["shards_done"], listed[planned.pk]["shards_total"]) == (0, 0)  # not planned yet


def test_the_api_names_a_bad_parameter(client, judged_campaign, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/api/campaigns/{judged_campaign.pk}/analyses/", {"parameters": {"n_boot": 1}}, content_type="application/json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and body["field"] == "parameters"
    assert "'n_boot' must lie in [10, 100000]; got 1" in body["detail"]


def test_a_failed_run_shows_its_reason_next_to_the_last_good_result(client, analysed, organizer):
    AnalysisRun.objects.create(campaign=analysed, status=RunStatus.FAILED, error="ValueError during “agreement”: boom")
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert "failed: ValueError during “agreement”: boom" in html and 'id="section-agreement"' in html


def _shards_said(html: str) -> str:
    """The words of the report's shard count (#run-shards), markup left out; "" when it is hidden."""
    start = html.index('<span id="run-shards"')
    if html[start : html.index(">", start)].endswith("hidden"):
        return ""
    said = html[start : html.index("</span></span></p>", start)]
    hidden = r'<span id="run-shards-reused" hidden>(?:[^<]|<span[^>]*>[^<]*</span>)*</span>'  # no reused shard
    return " ".join(re.sub(r"<[^>]*>", "", re.sub(hidden, "", said)).split())


def test_the_page_shows_the_shards_done_of_a_running_sharded_run(client, analysed, organizer, monkeypatch):
    run = AnalysisRun.objects.create(
        campaign=analysed, number=2, status=RunStatus.RUNNING, stage="agreement", shards_total=8, shards_done=3
    )
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert f'data-poll-url="/api/analyses/{run.pk}/"' in html and "Running · agreement</span>" in html
    assert _shards_said(html) == (
        "· shards 3 of 8 done (the run is split into 8 parts computed one after another: "
        "this server has no Celery workers)"
    )
    monkeypatch.setattr(runs, "embedded", lambda: False)  # a broker and its workers
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    said = _shards_said(html)
    assert said == "· shards 3 of 8 done (the run is split into 8 parts computed by the workers in parallel)"
    AnalysisRun.objects.filter(pk=run.pk).update(shards_reused=2)  # taken from the run before, unread
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert _shards_said(html) == (
        "· shards 3 of 8 done (the run is split into 8 parts computed by the workers in parallel; 2 of them taken"
        " from the analysis before instead of being read again, since their graders' judgments and events"
        " have not changed)"
    )


@pytest.mark.parametrize(
    "state",
    [
        {"status": RunStatus.RUNNING, "shards_total": 1, "shards_done": 0},  # one piece
        {"status": RunStatus.RUNNING, "shards_total": 0},  # not planned yet
        {"status": RunStatus.QUEUED, "shards_total": 8, "shards_done": 3},  # put back in the queue
    ],
)
def test_the_page_says_nothing_of_shards_unless_a_run_split_in_several_is_running(client, analysed, organizer, state):
    AnalysisRun.objects.create(campaign=analysed, number=2, stage="agreement", **state)
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert 'id="run-progress"' in html and _shards_said(html) == ""
    assert "in 8 shards" not in html and "tip-run-shards" not in html


def test_a_result_computed_in_shards_says_how_many(client, analysed, organizer, settings):
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert AnalysisRun.objects.get(campaign=analysed).shards_total == 1
    assert "shards" not in html and "split into" not in html  # a run done in one piece says nothing of it
    settings.ANALYSIS_SHARD_JUDGMENTS = 10  # a few graders a shard
    run = AnalysisRun.objects.create(campaign=analysed, parameters=runs.parameters_clean({"n_boot": 50}), seed=4)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    assert run.shards_total > 1
    html = client.get(f"/reports/campaigns/{analysed.pk}/").content.decode()
    assert f">in {run.shards_total} shards</span>" in html
    assert (
        f"The run was split into {run.shards_total} parts computed one after another: "
        "this server has no Celery workers.</span>"
    ) in html
    polled = client.get(f"/api/analyses/{run.pk}/").json()
    assert polled["shards_done"] == polled["shards_total"] == run.shards_total


def test_an_ordering_campaign_report_has_consensus_and_ed(client, ordering_campaign, organizer):
    run = AnalysisRun.objects.create(campaign=ordering_campaign, parameters=runs.parameters_clean({"n_boot": 50}))
    run_execute(run_id=run.pk)
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{ordering_campaign.pk}/").content.decode()
    assert 'id="section-orderings"' in html and "Kendall&#x27;s W" in html and "FreSPA" in html


def test_the_list_of_runs_reads_no_result_in_statements_it_does_not_grow(client, analysed, organizer):
    """A run's result is megabytes of JSON at 10^7 judgments, and the list shows none of it: listing
    the runs reads no result, in the same statements for one run as for three."""
    client.force_login(organizer)
    url = f"/api/campaigns/{analysed.pk}/analyses/"
    client.get(url)  # the session and the user, read once
    with CaptureQueriesContext(connection) as one:
        assert len(client.get(url).json()) == 1
    AnalysisRun.objects.bulk_create(
        AnalysisRun(campaign=analysed, number=n, result={"schema": 1, "big": "x" * 1000}) for n in (90, 91)
    )
    with CaptureQueriesContext(connection) as three:
        listed = client.get(url).json()
    assert len(listed) == 3 and all("result" not in run for run in listed)
    assert len(three) == len(one)
    runs_read = [q["sql"] for q in three if 'FROM "analysis_analysisrun"' in q["sql"]]
    assert runs_read and all('"result"' not in sql for sql in runs_read)
