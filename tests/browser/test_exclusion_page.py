"""An organizer at 1280 px, keyboard only, excludes a crowd participant from the analysis on the
campaign's Members page (a missing reason is said beside the form), then includes them again."""

from __future__ import annotations

import pytest

from grading.models import AuditEntry, CampaignRole
from grading.models.choices import Role
from grading.services.join_links import Identity, join_link_create, participant_join
from tests.browser.test_crowd_study import serious_violations, tab_to
from tests.browser.test_report_page import _page_as, browser  # noqa: F401 — the shared Chromium fixture
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.browser


def test_an_organizer_excludes_a_participant_by_keyboard_and_includes_them_again(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1, organizer=organizer)
    link = join_link_create(campaign=campaign, actor=organizer, completion_code="DONE1", max_participants=3)
    joined = participant_join(link=link, identity=Identity(platform="prolific", external_id="P123")).participant
    role = CampaignRole.objects.get(campaign=campaign, user=joined.user, role=Role.GRADER)
    page, errors = _page_as(browser, live_server, organizer)
    page.set_default_timeout(15_000)
    page.goto(f"{live_server.url}/organize/campaigns/{campaign.pk}/")
    page.get_by_role("link", name="Members").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/members/")
    uid = joined.user_id
    tab_to(page, f"reason-{uid}")
    page.keyboard.press("Enter")  # no reason: refused beside the form
    page.locator(f"#reason-error-{uid}").wait_for()
    assert "reason is required" in page.locator(f"#reason-error-{uid}").inner_text()
    role.refresh_from_db()
    assert role.excluded_at is None
    tab_to(page, f"reason-{uid}")
    page.keyboard.type("answered every unit in under a second")
    page.keyboard.press("Enter")
    page.locator(f"#include-{uid}").wait_for()
    role.refresh_from_db()
    assert role.exclusion_reason == "answered every unit in under a second"
    assert "answered every unit in under a second" in page.content()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert serious_violations(page, "main") == []
    tab_to(page, f"include-{uid}")
    page.keyboard.press("Enter")
    page.locator(f"#exclude-{uid}").wait_for()
    role.refresh_from_db()
    assert role.excluded_at is None
    assert [e.action for e in AuditEntry.objects.filter(action__startswith="grader.").order_by("pk")] == [
        "grader.excluded",
        "grader.included",
    ]
    # The refused form answers 400 (the browser logs that load); nothing else went wrong.
    assert [e for e in errors if "400 (Bad Request)" not in e] == []
