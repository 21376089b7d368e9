"""The home page for organizers (a fixed number of queries) and the live progress dashboard."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.services.execute import run_execute
from analysis.services.runs import run_create
from grading.models import Assignment
from grading.models.choices import AssignmentStatus
from grading.services.gold import gold_set
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


def home_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    return len(queries)


def test_the_home_page_costs_the_same_queries_for_one_campaign_or_five(client):
    organizer = make_user("boss")
    client.force_login(organizer)
    make_campaign(n_queries=1, n_candidates=2, graders=2, organizer=organizer)
    one = home_queries(client)
    for _ in range(4):
        judge_broad_fine(make_campaign(n_queries=2, n_candidates=3, graders=2, organizer=organizer))
    five = home_queries(client)
    assert one == five
    assert five <= 14


def test_organizers_see_status_progress_agreement_and_what_needs_attention(client):
    organizer = make_user("boss")
    campaign = make_campaign(n_queries=3, n_candidates=4, graders=3, organizer=organizer)
    judge_broad_fine(campaign)
    Assignment.objects.filter(pk=Assignment.objects.filter(campaign=campaign).first().pk).update(
        status=AssignmentStatus.OPEN
    )
    run = run_create(campaign_id=campaign.pk, parameters={"n_boot": 50})
    run_execute(run_id=run.pk)
    client.force_login(organizer)
    html = client.get("/").content.decode()
    assert "Campaigns you organize" in html and "You have no grading work yet" not in html
    assert "<strong>35</strong> of 36 judgments done" in html
    assert "Fleiss&#x27; κ" in html and "95% interval" in html and "agreement" in html
    assert "1 unit(s) waiting for judgments" in html
    assert f'href="/organize/campaigns/{campaign.pk}/progress/"' in html
    assert "Django admin" not in html


def test_staff_see_the_admin_link_and_graders_their_work(client):
    grader = make_user()
    make_campaign(n_queries=1, n_candidates=2, graders=[grader, make_user()])
    client.force_login(grader)
    html = client.get("/").content.decode()
    assert "Continue where I left off" in html or "Start" in html
    assert "Campaigns you organize" not in html
    client.force_login(make_user(is_staff=True))
    assert "Django admin" in client.get("/").content.decode()


def test_the_dashboard_names_graders_and_counts_what_is_left(client):
    organizer = make_user("boss")
    campaign = make_campaign(n_queries=2, n_candidates=3, graders=2, organizer=organizer)
    judge_broad_fine(campaign)
    first = Assignment.objects.filter(campaign=campaign).order_by("pk").first()
    Assignment.objects.filter(pk=first.pk).update(status=AssignmentStatus.OPEN)
    client.force_login(organizer)
    page = client.get(f"/organize/campaigns/{campaign.pk}/progress/")
    assert page.status_code == 200 and 'id="dashboard-data"' in page.content.decode()
    data = client.get(f"/organize/campaigns/{campaign.pk}/progress.json").json()
    assert data["totals"] == {"assigned": 12, "done": 11, "skipped": 0, "open": 1}
    assert len(data["graders"]) == 2
    assert {g["user"] for g in data["graders"]} == set(
        campaign.roles.filter(role="grader").values_list("user__username", flat=True)
    )
    assert sum(g["open"] for g in data["graders"]) == 1
    assert all(g["median_seconds"] == 12.0 for g in data["graders"])  # first to last event on each unit
    assert data["n_waiting"] == 1 and data["waiting"][0]["unit"] == first.unit.external_id
    assert sorted((q["units"], q["covered"]) for q in data["queries"]) == [(3, 2), (3, 3)]
    assert data["estimate"]["seconds"] is not None and data["estimate"]["seconds"] > 0


def test_an_organizers_gold_answer_is_no_grading_activity(client):
    organizer = make_user("boss")
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=2, organizer=organizer)
    unit = campaign.units.order_by("pk").first()
    gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value="VS")
    client.force_login(organizer)
    html = client.get("/").content.decode()
    assert "last grading activity none yet" in " ".join(html.split())
