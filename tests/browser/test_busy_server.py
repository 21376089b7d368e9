"""A busy server: past a grader's rate the events endpoint answers 429 with Retry-After, and the
grading page's outbox waits exactly as told (sending nothing meanwhile, whatever the grader does),
says so, and then saves everything. Keyboard only, 1280 and 390 px. The rate's clock is the test's,
so that the wait is known to the second."""

from __future__ import annotations

import time

import pytest

from evalutron import limits
from grading.models import Judgment
from tests.browser.test_grading import PASSWORD, TIMEOUT, all_saved, browser, card, close_quietly, log_in  # noqa: F401
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for, fast_passwords, my_units  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MINUTE = 1_800_000_000.0  # the start of a minute


def events_posted(traffic: list, kind: str) -> list:
    return [(at, what) for at, what, url in traffic if url.endswith("/api/events/") and kind in ("any", what[0])]


@pytest.mark.parametrize("width", [1280, 390])
def test_the_outbox_waits_as_retry_after_says_and_then_saves_everything(
    browser,  # noqa: F811 - the module's browser fixture
    live_server,
    settings,
    monkeypatch,
    width,
):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=2, n_candidates=2)
    units = my_units(grader, campaign)
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, grader)
    page.goto(f"/campaigns/{campaign.pk}/grade/1/")
    card(page, units[0]).focus()
    all_saved(page)  # what the page sends as it opens

    # From here: one request a minute, the minute 3 s from its end, its one request already spent.
    clock = [MINUTE + 57]
    monkeypatch.setattr(limits, "_now", lambda: clock[0])
    settings.THROTTLE_USER_BURST = "1/min"
    assert client_for(grader).get("/api/campaigns/").status_code == 200
    traffic: list = []  # (when, ("request" | status), url)
    page.on("request", lambda r: traffic.append((time.monotonic(), ("request",), r.url)))
    page.on("response", lambda r: traffic.append((time.monotonic(), (r.status,), r.url)))

    page.keyboard.press("1")  # NS on the first unit: refused for now
    page.wait_for_function("() => document.querySelector('#save-status').dataset.state === 'waiting'")
    status = page.text_content("#save-status")
    assert "kept on this device, sending in 3 s" in status, status
    refused_at = next(at for at, what in events_posted(traffic, "any") if what == (429,))
    page.keyboard.press("j")
    page.keyboard.press("2")  # SS on the second, while waiting: kept, not sent
    assert card(page, units[1]).locator(".saved").text_content() == "Kept on this device, will send"
    clock[0] = MINUTE + 60  # the next minute
    all_saved(page)

    posted = events_posted(traffic, "request")
    answers = [what[0] for _, what in events_posted(traffic, "any") if what != ("request",)]
    assert answers == [429, 200], answers  # one refusal, then one batch with both changes
    assert len(posted) == 2 and posted[1][0] - refused_at >= 2.9  # nothing sent before the 3 s were up
    judged = {j.unit_id: j.broad for j in Judgment.objects.filter(grader=grader)}
    assert judged == {units[0].pk: "NS", units[1].pk: "SS"}
    close_quietly(context)
    assert errors == [], f"JavaScript errors: {errors}"
