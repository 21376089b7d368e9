"""The report's Systems section scores uploaded TREC runs, keyboard only: the example's runs pooled and
judged, uploaded at once with a confusability measure chosen; the tables (and the means by confusability,
explained in words) take the focus; a bad line is named beside the form; axe-core at 1280 and 390 px."""

from __future__ import annotations

import pytest

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models.choices import Role
from grading.services.campaigns import role_grant
from tests.analysis.test_evaluate_runs import RUNS, confused_pool, judged_pool  # noqa: F401 (the fixtures)
from tests.browser.test_organizer import no_sideways_scroll
from tests.browser.test_organizer_axe import serious
from tests.browser.test_report_page import ARTIFACTS, _page_as, browser  # noqa: F401 (the fixture)
from tests.factories import make_user

pytestmark = pytest.mark.browser


@pytest.fixture
def analysed_pool(transactional_db, confused_pool):  # noqa: F811
    run = AnalysisRun.objects.create(campaign=confused_pool, parameters=runs.parameters_clean({"n_boot": 100}), seed=1)
    run_execute(run_id=run.pk)
    organizer = make_user("orla")
    role_grant(campaign=confused_pool, user=organizer, role=Role.ORGANIZER)
    return confused_pool, organizer


def test_uploaded_runs_are_scored_in_the_systems_section_by_keyboard(browser, live_server, analysed_pool, tmp_path):  # noqa: F811
    campaign, organizer = analysed_pool
    page, errors = _page_as(browser, live_server, organizer)
    page.goto(f"{live_server.url}/reports/campaigns/{campaign.pk}/")
    bad = tmp_path / "bad.txt"
    bad.write_text("t1 Q0 d01 1 9 x\nt1\tQ0\td02\t2\tnine\tx\n")
    page.set_input_files("#section-systems input[name=runs]", [RUNS[0], str(bad)])
    page.locator("#evaluate-runs").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.locator("#runs-errors:focus").wait_for()
    assert page.locator("#runs-errors li").all_inner_texts() == [
        "bad.txt line 2, field 'score', value 'nine': the score must be a number"
    ]
    page.set_input_files("#section-systems input[name=runs]", RUNS)
    page.locator("#id_measures").fill("nDCG@10 AP")
    page.locator("#id_confusability").focus()
    page.keyboard.press("End")  # the last choice: entropy
    page.locator("#evaluate-runs").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.locator("#runs-result:focus").wait_for()
    result = page.locator("#runs-result")
    assert result.locator("figure").count() == 4  # per measure: the means, then the means by confusability
    first = result.locator("figure").first
    assert first.locator("figcaption").inner_text().startswith("nDCG@10: mean over topics")
    assert first.locator("tbody tr").count() == 3
    assert "Friedman χ² = " in first.inner_text()
    assert "Judged share of each run's first documents: bm25 @10" in result.inner_text()
    confusable = result.locator("#runs-1-confusability")
    assert confusable.locator("figcaption").inner_text().startswith("nDCG@10 and the graders' disagreement")
    assert confusable.locator("tbody tr").count() == 3
    words = confusable.inner_text()
    assert "A topic's confusability is the mean entropy (in bits) of the graders' FINE scores" in words
    assert "in the run's first 10 documents" in words and "Weighted mean counts each topic by 1 minus" in words
    page.screenshot(path=str(ARTIFACTS / "report-runs-1280.png"), full_page=True)
    confusable.screenshot(path=str(ARTIFACTS / "report-runs-confusability-1280.png"))
    assert serious(page) == []  # axe-core: the scored runs' tables, the confusability ones too
    page.set_viewport_size({"width": 390, "height": 844})
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / "report-runs-390.png"), full_page=True)
    confusable.screenshot(path=str(ARTIFACTS / "report-runs-confusability-390.png"))
    assert serious(page) == []
    assert [e for e in errors if "400 (Bad Request)" not in e] == []  # the refused upload's own page is a 400
