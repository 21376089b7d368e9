"""The demo audio campaign's report in Chromium: the summary answers "Can I trust these judgments?"
and the Systems section shows scores, the Friedman test and both verdicts, at desktop and phone width."""

from __future__ import annotations

import pytest

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Campaign
from grading.services.demo import seed_demo
from tests.browser.test_report_page import ARTIFACTS, _page_as, browser  # noqa: F401 (the fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def demo(transactional_db):
    seed_demo()
    campaign = Campaign.objects.get(slug="demo-audio-similarity")
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 200}), seed=1)
    run_execute(run_id=run.pk)
    from django.contrib.auth import get_user_model

    return campaign, get_user_model().objects.get(username="organizer")


def test_the_organizer_reads_the_summary_and_the_systems_of_the_demo(browser, live_server, demo):  # noqa: F811
    campaign, organizer = demo
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/")
    page.locator("ul.campaigns > li", has_text=campaign.name).get_by_role("link", name="Report").click()
    page.wait_for_url(f"**/reports/campaigns/{campaign.pk}/")  # the click does not wait for the page it opens
    summary = page.locator("#section-summary")
    assert summary.get_by_role("heading", name="Can I trust these judgments?").is_visible()
    text = summary.inner_text()
    assert "κ = " in text and "95% interval" in text
    assert "The judgments can tell the systems apart: Friedman χ² = " in text
    assert "Systems system-a and system-b cannot be told apart at this precision" in text
    assert "units need more graders" in text

    systems = page.locator("#section-systems")
    assert systems.locator("svg.plot").count() == 1
    rows = systems.locator("#table-systems_scores tbody tr")
    assert rows.count() == 3
    assert rows.first.locator("td").first.inner_text() == "system-a"
    pairs = systems.locator("#table-systems_pairs").inner_text()
    assert "distinguishable" in pairs and "not distinguishable at this precision" in pairs
    assert systems.locator("#table-systems_friedman").is_visible()
    assert systems.locator("#table-systems_uploaded tbody tr").count() == 3
    assert "caCorr" in systems.locator("#table-systems_uploaded").inner_text()

    # Keyboard: a column heading's explanation shows on focus.
    term = systems.locator("#table-systems_uploaded .term-name", has_text="caCorr")
    term.focus()
    tip = systems.locator("#table-systems_uploaded .tip", has_text="confusable units count less")
    assert tip.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # the tip does not widen the page
    # Keyboard: another ground truth, evaluated by the form's POST and shown by the page it leads to.
    page.locator("#id_aggregate").focus()
    page.keyboard.press("ArrowDown")  # mean → median
    page.locator("#evaluate").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/?aggregate=median&measure=std&threshold=#systems-uploaded")
    assert "against the median of the judgments" in systems.locator("#table-systems_uploaded").inner_text()
    assert page.locator("#id_aggregate").input_value() == "median"
    assert page.locator("#evaluation-missing").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-systems-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert summary.is_visible() and systems.is_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the page scrolls sideways at 390 px ({width} px wide)"
    page.screenshot(path=str(ARTIFACTS / "report-systems-390.png"), full_page=True)
    assert errors == []


def test_the_organizer_follows_the_most_confusable_unit_to_its_page_by_keyboard(browser, live_server, demo):  # noqa: F811
    """The tables of the most and least confusable units come from the run's result (the units it
    chose, docs/design.md §5.3), named by their ids and linked to their pages."""
    campaign, organizer = demo
    run = AnalysisRun.objects.filter(campaign=campaign, status="succeeded").order_by("-finished_at", "-id").first()
    most = run.result["confusability"]["extremes"]["most"]
    page, errors = _page_as(browser, live_server, organizer)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(f"{live_server.url}/")
        page.locator("ul.campaigns > li", has_text=campaign.name).get_by_role("link", name="Report").click()
        page.wait_for_url(f"**/reports/campaigns/{campaign.pk}/")
        table = page.locator("#table-most_confusable")
        rows = table.locator("tbody tr")
        assert rows.count() == len(most) == 10
        first = campaign.units.get(pk=most[0]["unit"])
        link = rows.first.get_by_role("link", name=first.external_id)
        assert rows.first.locator("td").nth(4).inner_text() == f"{most[0]['std']:.4g}"  # Unit, n, Mean, Range, Std
        link.focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/units/{first.pk}/")
        assert page.get_by_role("heading", level=1).inner_text() == f"Unit {first.external_id}"
        assert f"{most[0]['std']:.3f}" in page.locator("table").first.inner_text()
        width_now = page.evaluate("document.documentElement.scrollWidth")
        assert width_now <= width + 10, f"the unit page scrolls sideways at {width} px ({width_now} px wide)"
    assert errors == []
