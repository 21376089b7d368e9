"""axe-core on every organizer page, as an organizer reaches them from the home page: no serious or
critical violation (colour contrast, a scrollable table the keyboard cannot reach, names of controls),
at 1280 and at 390 px. The script comes from the installed package; nothing is downloaded."""

from __future__ import annotations

import pytest

from tests.browser.test_grader_truth import serious_violations
from tests.browser.test_report_page import _page_as, browser, campaign  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

PAGES = [
    ("home", "/"),
    ("campaign", "/organize/campaigns/{pk}/"),
    ("progress", "/organize/campaigns/{pk}/progress/"),
    ("members", "/organize/campaigns/{pk}/members/"),
    ("activity", "/organize/campaigns/{pk}/activity/"),
    ("gold answers", "/organize/campaigns/{pk}/gold/"),
    ("adjudication", "/campaigns/{pk}/adjudicate/"),
    ("report", "/reports/campaigns/{pk}/"),
    ("new campaign", "/organize/new/"),
]


@pytest.mark.parametrize("width", [1280, 390])
def test_every_organizer_page_passes_axe(browser, live_server, campaign, width):  # noqa: F811
    campaign, organizer = campaign
    organizer.is_staff = True  # the New campaign page too
    organizer.save(update_fields=["is_staff"])
    page, errors = _page_as(browser, live_server, organizer)
    page.set_viewport_size({"width": width, "height": 900})
    found = {}
    for name, path in PAGES:
        response = page.goto(live_server.url + path.format(pk=campaign.pk))
        assert response.status == 200, (name, response.status)
        found[name] = serious_violations(page)
    assert found == {name: [] for name, _ in PAGES}
    assert errors == []
