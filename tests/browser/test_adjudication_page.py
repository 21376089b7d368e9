"""An organizer adjudicates a disputed unit in Chromium: from the home page, keyboard only, 1280 and 390 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.models import Adjudication
from tests.browser.test_report_page import _page_as, browser  # noqa: F401 — the shared Chromium fixture
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import graders_of

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser


@pytest.fixture
def disputed(transactional_db):
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=2, organizer=organizer)
    unit = campaign.units.order_by("pk").first()
    for grader, broad in zip(graders_of(campaign), ["VS", "NS"], strict=True):
        record(grader, campaign, "broad_set", {"value": broad}, unit=unit)
        record(grader, campaign, "fine_set", {"value": 5.0}, unit=unit)
    return campaign, organizer, unit


@pytest.mark.parametrize("width", [1280, 390])
def test_an_organizer_adjudicates_a_disputed_unit_by_keyboard(browser, live_server, disputed, width):  # noqa: F811
    campaign, organizer, unit = disputed
    page, errors = _page_as(browser, live_server, organizer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Adjudicate").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/adjudicate/")
    assert page.get_by_role("heading", name=f"Unit {unit.external_id}").is_visible()
    page.locator(f"#value-{unit.pk}").focus()
    page.keyboard.press("ArrowDown")  # NS → SS
    page.keyboard.press("Tab")
    page.keyboard.type("both graders half right")
    page.keyboard.press("Enter")
    page.get_by_text(f"Unit {unit.external_id} adjudicated.").wait_for()
    assert Adjudication.objects.get(unit=unit).value == "SS"
    assert page.get_by_text("Adjudicated: SS").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"adjudicate-{width}.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert errors == []
