"""The organizer's pages pass axe-core at 1280 and 390 px: no serious or critical violation on the
home page, the campaign page (with a join link), progress, members, activity, gold units,
adjudication, New campaign, the Organizers page, the report and a unit's page (whose wide tables
scroll in regions the keyboard can reach). The script comes from the installed package; nothing is downloaded."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from grading.services.join_links import join_link_create
from grading.services.organizers import organizer_set
from tests.browser.test_report_page import _page_as, browser, campaign  # noqa: F401 — shared fixtures
from tests.factories import make_user

pytestmark = pytest.mark.browser


def serious(page) -> list:
    found = Axe().run(page).response["violations"]
    return [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("width", [1280, 390])
def test_every_organizer_page_has_no_serious_axe_violation(browser, live_server, campaign, width):  # noqa: F811
    campaign, organizer = campaign
    admin = make_user("boss", is_staff=True)
    organizer_set(username=organizer.username, organizer=True, actor=admin)
    join_link_create(campaign=campaign, actor=organizer, completion_code="AXE1", max_participants=3)
    pages = {
        organizer: [
            "/",
            f"/organize/campaigns/{campaign.pk}/",
            f"/organize/campaigns/{campaign.pk}/progress/",
            f"/organize/campaigns/{campaign.pk}/members/",
            f"/organize/campaigns/{campaign.pk}/activity/",
            f"/organize/campaigns/{campaign.pk}/gold/",
            f"/campaigns/{campaign.pk}/adjudicate/",
            f"/reports/campaigns/{campaign.pk}/",
            f"/reports/campaigns/{campaign.pk}/units/{campaign.units.order_by('pk').first().pk}/",
            "/organize/new/",
        ],
        admin: ["/organize/organizers/"],
    }
    found = {}
    for user, urls in pages.items():
        page, errors = _page_as(browser, live_server, user)
        page.set_viewport_size({"width": width, "height": 900})
        for url in urls:
            assert page.goto(live_server.url + url).status == 200, url
            page.wait_for_load_state("networkidle")
            found[url] = serious(page)
        assert errors == []
        page.context.close()
    assert found == {url: [] for urls in pages.values() for url in urls}
