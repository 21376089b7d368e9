"""An organizer reads the campaign's Activity tab in Chromium: from the home page, keyboard only, at
1280 and 390 px, the entries in words, the older ones a page further."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.services import lifecycle
from tests.browser.test_grader_truth import no_sideways_scroll
from tests.browser.test_report_page import _page_as, browser  # noqa: F401 — the shared Chromium fixture
from tests.factories import make_campaign, make_user

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser


def activity_violations(page) -> list:
    """axe-core's serious and critical violations in the Activity section (the page's header and
    navigation are the other organizer pages' and are checked with them)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context="section.panel").response["violations"]
    return [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in found if v["impact"] in ("serious", "critical")]


@pytest.fixture
def busy(transactional_db):
    organizer = make_user("olga")
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer, status="draft")
    campaign = lifecycle.campaign_transition(campaign=campaign, to="open", actor=organizer)
    for i in range(51):  # a page of 50 and one more
        campaign = lifecycle.campaign_settings_update(
            campaign=campaign, actor=organizer, name=f"Similarity, take {i}", policy_params={"batch_size": i + 1}
        )
    return campaign, organizer


@pytest.mark.parametrize("width", [1280, 390])
def test_an_organizer_reads_the_activity_by_keyboard(browser, live_server, busy, width):  # noqa: F811
    campaign, organizer = busy
    page, errors = _page_as(browser, live_server, organizer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name=campaign.name).focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/")
    page.get_by_role("link", name="Activity").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/activity/")
    newest = page.locator(".activity-entry").first
    assert newest.get_by_text("olga changed the settings").is_visible()
    assert "Name: Similarity, take 49 → changed to Similarity, take 50" in " ".join(newest.inner_text().split())
    assert page.locator(".activity-entry").count() == 50
    no_sideways_scroll(page)
    assert activity_violations(page) == []
    page.get_by_role("link", name="Older →").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/activity/?page=2")
    assert page.get_by_text("olga changed the status from Draft to Open").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"activity-{width}.png"), full_page=True)
    no_sideways_scroll(page)
    assert errors == []
