"""An organizer pools a campaign from several TREC run files on the New campaign page, keyboard only:
a bad line is listed next to the runs form (file, line, field, value) and stores nothing; the good
files give a preview and a draft campaign; at 1280 and 390 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.models import Campaign
from tests.browser.test_grading import ARTIFACTS, PASSWORD, browser, log_in, page  # noqa: F401 - fixtures
from tests.browser.test_organizer import no_sideways_scroll
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trec"


def test_several_run_files_are_pooled_from_the_page_and_a_bad_line_is_named_beside_the_form(page, tmp_path):  # noqa: F811
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, make_user("olga", password=PASSWORD, is_staff=True))
    page.click("#new-campaign")
    bad = tmp_path / "mine.txt"
    bad.write_text("t1 Q0 d01 1 9 mine\nt1 Q0 d02 2 high mine\n")
    runs = [str(EXAMPLES / "run_a.txt"), str(EXAMPLES / "run_b.txt"), str(bad)]
    form = "section:has(#by-runs)"
    page.fill(f"{form} input[name=runs-name]", "Pooled runs")
    page.fill(f"{form} input[name=runs-depth]", "3")
    page.set_input_files(f"{form} input[name=runs-runs]", runs)
    page.set_input_files(f"{form} input[name=runs-topics]", str(EXAMPLES / "topics.tsv"))
    page.set_input_files(f"{form} input[name=runs-docs]", str(EXAMPLES / "docs.jsonl"))
    page.focus("#check-runs")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.locator("#form-errors:focus").wait_for()
    assert page.locator(f"{form} #form-errors").count() == 1  # next to the form it is about
    items = page.locator("#form-errors li").all_inner_texts()
    assert items == ["mine.txt line 2, field 'score', value 'high': the score must be a number"]
    page.screenshot(path=str(ARTIFACTS / "organizer-runs-errors-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / "organizer-runs-errors-390.png"), full_page=True)
    assert not Campaign.objects.exists()

    # The files are chosen again (a browser never keeps them), without the bad one.
    page.set_input_files(f"{form} input[name=runs-runs]", runs[:2])
    page.set_input_files(f"{form} input[name=runs-topics]", str(EXAMPLES / "topics.tsv"))
    page.set_input_files(f"{form} input[name=runs-docs]", str(EXAMPLES / "docs.jsonl"))
    page.focus("#check-runs")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Check before creating: Pooled runs" in page.inner_text("#preview")
    page.locator("#confirm-create:focus").wait_for()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    campaign = Campaign.objects.get(slug="pooled-runs")
    assert campaign.status == "draft" and campaign.systems.count() == 2
    assert sorted(campaign.queries.values_list("external_id", flat=True)) == ["t1", "t2", "t3"]
