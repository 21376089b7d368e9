"""An organizer sets a gold unit in Chromium: from the home page, keyboard only, 1280 and 390 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.models import GoldAnswer
from tests.browser.test_report_page import _page_as, browser  # noqa: F401 — the shared Chromium fixture
from tests.factories import make_campaign, make_user

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1280, 390])
def test_an_organizer_sets_a_gold_unit_by_keyboard(browser, live_server, transactional_db, width):  # noqa: F811
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=2, organizer=organizer)
    page, errors = _page_as(browser, live_server, organizer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name=campaign.name).first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/")
    page.get_by_role("link", name="Gold units").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/gold/")
    page.locator("#gold-unit").focus()
    page.keyboard.type("nope")
    page.keyboard.press("Enter")
    page.get_by_text("has no unit with id 'nope'").wait_for()
    page.locator("#gold-unit").fill("")
    page.locator("#gold-unit").focus()
    page.keyboard.type("u0-1")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # NS → SS
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.get_by_text("Unit u0-1 is a gold unit.").wait_for()
    assert GoldAnswer.objects.get().value == "SS"
    assert page.get_by_role("cell", name="u0-1").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"gold-{width}.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # The one console error is the deliberate bad unit id: the form answered 400 with the error beside it.
    assert [e for e in errors if "status of 400" not in e] == [] and len(errors) <= 1
