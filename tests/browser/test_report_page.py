"""The campaign report in Chromium: every section and plot, live progress, no console errors."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.conf import settings as django_settings
from django.db import transaction
from django.test import Client
from django.utils import timezone

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from analysis.services.execute import run_execute
from tests.analysis.conftest import judge_broad_fine
from tests.browser.test_organizer import no_sideways_scroll
from tests.factories import make_campaign, make_user

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SECTIONS = ["overview", "agreement", "stability", "confusability", "fine-within-broad", "graders", "queries"]
SECTIONS += ["model", "accounting"]  # model-based truth and grader reliability; adaptive allocation
pytestmark = pytest.mark.browser


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still
    # synchronous, so let Django allow them.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


def _number_next(campaign) -> int:
    with transaction.atomic():  # the number is taken under the campaign's row lock
        return runs.run_number_next(campaign_id=campaign.pk)


def _page_as(browser, live_server, user):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies(
        [
            {
                "name": django_settings.SESSION_COOKIE_NAME,
                "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


@pytest.fixture
def campaign(transactional_db):
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=3, n_candidates=5, graders=3, organizer=organizer)
    judge_broad_fine(campaign, seed=2)
    runs.runs_execute_due(campaign_id=campaign.pk)  # the automatic run the judgments queued (embedded runner)
    run = AnalysisRun.objects.create(
        campaign=campaign,
        parameters=runs.parameters_clean({"n_boot": 100}),
        seed=1,
        number=_number_next(campaign),
    )
    run_execute(run_id=run.pk)
    return campaign, organizer


def test_the_report_renders_every_section_and_plot_without_console_errors(browser, live_server, campaign):
    campaign, organizer = campaign
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    for section in SECTIONS:
        assert page.locator(f"#section-{section}").is_visible(), section
    plots = page.locator("svg.plot")
    assert plots.count() >= 9
    for i in range(plots.count()):
        svg = plots.nth(i)
        assert svg.bounding_box()["width"] > 200
        assert svg.locator("desc").text_content().strip()  # alt text
    assert page.locator("#section-confusability svg.plot circle.dot").count() == 15  # the crescent
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})
    page.locator("#section-model").screenshot(path=str(ARTIFACTS / "report-model-390.png"))
    assert errors == []


def test_the_progress_bar_follows_a_run_and_the_page_shows_its_result(browser, live_server, campaign):
    campaign, organizer = campaign
    queued = AnalysisRun.objects.create(
        campaign=campaign,
        parameters=runs.parameters_clean({"n_boot": 50}),
        seed=2,
        number=_number_next(campaign),
    )
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    assert page.locator("#run-progress").is_visible()
    assert "Showing the last good result meanwhile" in page.content()
    assert AnalysisRun.objects.get(pk=queued.pk).status == RunStatus.QUEUED  # the page only reads
    run_execute(run_id=queued.pk)  # what a worker (or the embedded runner) does; the page's poll sees it
    page.wait_for_function(
        f"() => document.body.innerText.includes('Result of analysis #{queued.number}')", timeout=20000
    )
    assert AnalysisRun.objects.get(pk=queued.pk).status == RunStatus.SUCCEEDED
    assert page.locator("#run-progress").count() == 0
    assert errors == []


def _axe_serious(page) -> list:
    found = Axe().run(page).response["violations"]
    return [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in found if v["impact"] in ("serious", "critical")]


def test_a_run_split_across_workers_shows_its_shards_done_as_they_finish(browser, live_server, campaign, monkeypatch):
    campaign, organizer = campaign
    monkeypatch.setattr(runs, "embedded", lambda: False)  # the page speaks of a broker's workers
    good = AnalysisRun.objects.filter(campaign=campaign, status=RunStatus.SUCCEEDED).latest("finished_at")
    sharded = AnalysisRun.objects.create(
        campaign=campaign, parameters=good.parameters, seed=good.seed, number=_number_next(campaign)
    )
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    assert page.locator("#run-shards").is_hidden()  # queued: nothing planned, nothing to say
    # What the sharded runner writes as it plans the run and as its shards finish; the page's poll sees it.
    AnalysisRun.objects.filter(pk=sharded.pk).update(
        status=RunStatus.RUNNING, stage="agreement", progress=40, shards_total=8, shards_done=3
    )
    page.wait_for_function("() => document.getElementById('run-stage').innerText === 'Running · agreement'")
    assert page.locator("#run-shards").inner_text() == (
        "· shards 3 of 8 done (the run is split into 8 parts computed by the workers in parallel)"
    )
    AnalysisRun.objects.filter(pk=sharded.pk).update(shards_done=5, shards_reused=4, progress=60)
    page.wait_for_function("() => document.getElementById('run-shards').innerText.includes('shards 5 of 8 done')")
    assert page.locator("#run-shards").inner_text() == (
        "· shards 5 of 8 done (the run is split into 8 parts computed by the workers in parallel; 4 of them taken"
        " from the analysis before instead of being read again, since their graders' judgments and events"
        " have not changed)"
    )
    assert _axe_serious(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#run-status").screenshot(path=str(ARTIFACTS / "report-shards.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    no_sideways_scroll(page)
    assert _axe_serious(page) == []
    page.locator("#run-status").screenshot(path=str(ARTIFACTS / "report-shards-390.png"))
    AnalysisRun.objects.filter(pk=sharded.pk).update(
        status=RunStatus.SUCCEEDED,
        progress=100,
        shards_done=8,
        result=good.result,
        timings=good.timings,
        finished_at=timezone.now(),
    )
    page.wait_for_function(
        f"() => document.body.innerText.includes('Result of analysis #{sharded.number}')", timeout=20000
    )
    assert page.locator("#run-progress").count() == 0
    shards = page.locator(".run-status .term-name")
    assert shards.inner_text() == "in 8 shards"
    shards.focus()  # its explanation shows on keyboard focus, as on hover
    assert page.locator("#tip-run-shards").is_visible()
    assert page.locator("#tip-run-shards").inner_text() == (
        "The run was split into 8 parts computed by the workers in parallel. 4 of them were taken from the analysis"
        " before instead of being read again, since their graders' judgments and events had not changed; every figure"
        " is still computed from all the parts."
    )
    no_sideways_scroll(page)
    assert _axe_serious(page) == []
    page.screenshot(path=str(ARTIFACTS / "report-shards-done-390.png"))
    assert errors == []


def test_a_grader_gets_403(browser, live_server, campaign):
    campaign, _ = campaign
    grader = campaign.roles.filter(role="grader").first().user
    page, _ = _page_as(browser, live_server, grader)
    response = page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    assert response.status == 403


def test_an_organizer_uploads_system_orderings_and_sees_them_scored(browser, live_server, transactional_db, tmp_path):
    from tests.analysis.conftest import judge_orderings
    from tests.analysis.test_system_orderings import systems_csv

    organizer = make_user("ordering-organizer")
    campaign = make_campaign(scheme="ordering", n_queries=2, n_candidates=4, graders=3, organizer=organizer)
    judge_orderings(campaign)
    path = tmp_path / "systems.csv"
    path.write_text(systems_csv(campaign))
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    page.set_input_files("#system-upload input[type=file]", str(path))
    page.click("#upload-system-orderings")
    page.wait_for_selector("#table-systems")
    assert page.locator("#table-systems th.favoured").count() == 1
    assert page.locator("#table-system_scores tbody tr").count() == 4
    assert "candidate 0-" in page.locator("#table-ordering_queries").inner_text()
    assert page.locator("#section-agreement").count() == 0  # no per-unit judgments in an ordering campaign
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-orderings.png"), full_page=True)
    assert errors == []


def test_a_waiting_automatic_run_says_when_it_is_due_and_takes_its_number_when_it_starts(
    browser, live_server, campaign
):
    campaign, organizer = campaign
    due = timezone.now() + timedelta(seconds=60)
    auto = runs.run_schedule_auto(campaign_id=campaign.pk)
    AnalysisRun.objects.filter(pk=auto.pk).update(not_before=due)
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    said = page.locator("#run-unnumbered").inner_text()
    assert said.startswith(f"Automatic analysis of the new judgments, due at {due:%H:%M:%S} UTC")
    assert "numbered when it starts, so that numbers follow the order in which analyses start" in said
    page.set_viewport_size({"width": 390, "height": 844})
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / "report-automatic-queued-390.png"), full_page=True)
    AnalysisRun.objects.filter(pk=auto.pk).update(not_before=timezone.now())
    assert run_execute(run_id=auto.pk) == RunStatus.SUCCEEDED
    number = AnalysisRun.objects.get(pk=auto.pk).number
    assert number == AnalysisRun.objects.filter(campaign=campaign).exclude(pk=auto.pk).count() + 1
    page.wait_for_function(f"() => document.body.innerText.includes('Result of analysis #{number}')", timeout=20000)
    assert errors == []
