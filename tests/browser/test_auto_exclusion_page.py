"""An organizer, keyboard only, sets an automatic-exclusion threshold on the campaign's settings (a
value out of range is refused at its field), an analysis runs, and the report's Excluded graders
table says the careless grader was excluded automatically, with the figure; at 1280 and 390 px."""

from __future__ import annotations

import pytest

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Campaign, CampaignRole
from grading.models.choices import Role
from tests.browser.test_crowd_study import serious_violations, tab_to
from tests.browser.test_report_page import (  # noqa: F401 — the shared Chromium fixture
    ARTIFACTS,
    _number_next,
    _page_as,
    browser,
)
from tests.grading.test_auto_exclusion import _campaign

pytestmark = pytest.mark.browser


def test_an_organizer_sets_a_gold_threshold_and_reads_who_was_excluded_automatically(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    campaign, organizer, graders = _campaign()
    page, errors = _page_as(browser, live_server, organizer)
    page.set_default_timeout(15_000)
    page.goto(f"{live_server.url}/organize/campaigns/{campaign.pk}/")
    tab_to(page, "id_exclude_gold_below")
    page.keyboard.type("1.5")
    page.keyboard.press("Enter")  # out of range: the browser refuses it at the field (the server would too)
    message = page.evaluate("document.querySelector('#id_exclude_gold_below').validationMessage")
    assert message and "1" in message
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {}
    tab_to(page, "id_exclude_gold_below")
    page.keyboard.press("Control+A")
    page.keyboard.type("0.6")
    page.keyboard.press("Enter")
    page.locator("text=Settings saved.").wait_for()
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {"exclude_gold_below": 0.6}
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert serious_violations(page, "#settings") == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#settings").screenshot(path=str(ARTIFACTS / "auto-exclusion-settings.png"))

    run = AnalysisRun.objects.create(
        campaign=campaign,
        parameters=runs.parameters_clean({"n_boot": 50}),
        seed=5,
        number=_number_next(campaign),
    )
    run_execute(run_id=run.pk)  # what the worker does
    careless = CampaignRole.objects.get(campaign=campaign, user=graders[3], role=Role.GRADER)
    assert careless.exclusion_automatic
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    table = page.locator("#table-excluded_graders")
    text = table.inner_text()
    assert careless.pseudonym in text and "automatically" in text
    assert "gold accuracy 0.40 below 0.6 after 5 gold units" in text
    assert "Graders excluded" in page.locator("#table-overview").inner_text()
    assert serious_violations(page, "#table-excluded_graders") == []
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    table.screenshot(path=str(ARTIFACTS / "auto-exclusion-report-390.png"))
    assert errors == []
