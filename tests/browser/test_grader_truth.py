"""A grader meets the grading page at 1280 px and at 390 px: it says only what is stored, counts
as ratings are saved, takes skips and their undoing, every score from the keyboard, gives batches
of extra work, fits a phone without sideways scrolling and passes an accessibility check (axe-core,
shipped with axe-playwright-python and injected from the local file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from grading.models import Assignment, GradingEvent, Judgment, Ordering
from grading.models.choices import Policy, Role, Scheme
from grading.services.campaigns import role_grant
from tests.browser.test_grading import (  # noqa: F401
    ARTIFACTS,
    PASSWORD,
    TIMEOUT,
    browser,
    close_quietly,
    with_audio,
)
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, my_units  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": 1280, "phone": 390}


@pytest.fixture(params=list(WIDTHS))
def width(request) -> int:
    return WIDTHS[request.param]


@pytest.fixture
def open_page(browser, live_server):  # noqa: F811
    """A fresh browser context per call, `width` px wide, logged in as `user`; JavaScript errors fail."""
    contexts, errors = [], []

    def make(user, width: int):
        context = browser.new_context(
            base_url=live_server.url,
            viewport={"width": width, "height": 860},
            has_touch=width < 500,
            is_mobile=width < 500,
        )
        context.set_default_timeout(TIMEOUT)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # Candidates' clips (/media/c/<public id>) come from the app; any other file under MEDIA_ROOT,
        # which the test server does not serve, from here.
        page.route(
            "**/media/**",
            lambda route: route.continue_()
            if "/media/c/" in route.request.url
            else route.fulfill(
                path=str(Path(settings.MEDIA_ROOT) / route.request.url.split("/media/", 1)[1]), content_type="audio/wav"
            ),
        )
        page.goto("/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("/")  # the home page (base_url); "**/" matched the login page and did not wait
        return page

    yield make
    for context in contexts:
        close_quietly(context)
    assert errors == [], f"JavaScript errors: {errors}"


def states(page) -> dict[int, str]:
    return {
        int(u): s
        for u, s in page.eval_on_selector_all(
            ".card[data-unit]", "cards => cards.map(c => [c.dataset.unit, c.querySelector('.saved').textContent])"
        )
    }


def settled(page) -> None:
    page.wait_for_function("() => JSON.parse(localStorage.getItem('evalutron.outbox.v1') || '[]').length === 0")


def no_sideways_scroll(page) -> None:
    wide = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert wide <= 0, f"{page.url} scrolls sideways by {wide} px"


def serious_violations(page) -> list:
    """axe-core's serious and critical violations on the page (the script comes from the installed
    package, nothing is downloaded)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def test_a_fresh_grader_sees_only_what_is_stored_skips_undoes_and_the_counter_moves(open_page, width):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=2, n_candidates=3)
    units = my_units(grader, campaign)
    page = open_page(grader, width)
    page.click(f".campaign-row[data-campaign='{campaign.pk}'] a.continue")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/1/")
    here = [u for u in units if u.query_id == units[0].query_id]
    assert len(here) == 3

    # Looking (which records unit_viewed events) shows no "Saved" anywhere.
    page.keyboard.press("j")
    settled(page)
    assert GradingEvent.objects.filter(grader=grader, type="unit_viewed").count() >= 2
    assert set(states(page).values()) == {"Not rated yet"}
    assert "Saved" not in page.inner_text("main")
    assert page.inner_text("#count-here") == "0 of 3 here" and page.inner_text("#count-all") == "0 of 6 in all"

    # BROAD alone is "partly rated"; with FINE the unit, and only it, is saved and counted.
    first = page.locator(f".card[data-unit='{here[0].pk}']")
    first.locator(".choice[data-value='SS']").click()
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{here[0].pk}'] .saved\").dataset.state === 'partial'"
    )
    assert first.locator(".saved").inner_text() == "Partly rated: FINE missing"
    first.locator(".fine-number").fill("6.5")
    first.locator(".fine-number").press("Enter")
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{here[0].pk}'] .saved\").textContent === 'Saved'"
    )
    assert states(page) == {here[0].pk: "Saved", here[1].pk: "Not rated yet", here[2].pk: "Not rated yet"}
    assert page.inner_text("#count-here") == "1 of 3 here" and page.inner_text("#count-all") == "1 of 6 in all"
    assert page.get_attribute(f".card[data-unit='{here[1].pk}'] .fine-range", "data-unset") == "1"

    # Skip with a reason, then undo it.
    second = page.locator(f".card[data-unit='{here[1].pk}']")
    second.locator("summary").click()
    second.locator(".skip-reason").fill("the clip does not load")
    second.locator(".skip").click()
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{here[1].pk}'] .saved\").textContent === 'Skipped'"
    )
    assert page.inner_text("#count-skipped") == " · 1 skipped"
    assert GradingEvent.objects.get(grader=grader, unit=here[1], type="skip").payload == {
        "reason": "the clip does not load"
    }
    second.locator(".undo-skip").click()
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{here[1].pk}'] .saved\").textContent === 'Not rated yet'"
    )
    assert not Judgment.objects.get(grader=grader, unit=here[1]).skipped
    assert page.is_hidden("#count-skipped") and second.locator(".undo-skip").is_hidden()

    # A comment stays on the card and can be edited.
    second.locator(".comment").fill("quiet recording")
    second.locator(".send-comment").click()
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{here[1].pk}'] .comment-state\").dataset.state === 'saved'"
    )
    page.reload()
    assert page.locator(f".card[data-unit='{here[1].pk}'] .comment").input_value() == "quiet recording"
    assert states(page)[here[0].pk] == "Saved" and states(page)[here[1].pk] == "Not rated yet"
    second = page.locator(f".card[data-unit='{here[1].pk}']")
    assert second.locator(".undo-skip").is_hidden() and second.locator(".skip").is_visible()

    # An unset slider takes a value where it is touched (the middle of the track: about 5).
    third = page.locator(f".card[data-unit='{here[2].pk}']")
    third.locator(".fine-range").click()
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{here[2].pk}'] .saved\").dataset.state === 'partial'"
    )
    assert 4 <= float(Judgment.objects.get(grader=grader, unit=here[2]).fine) <= 6
    assert third.locator(".fine-range").get_attribute("data-unset") is None
    page.screenshot(path=str(ARTIFACTS / f"truth-{width}.png"), full_page=True)
    if width < 500:
        no_sideways_scroll(page)
    assert serious_violations(page) == []  # with a comment and the skip box open
    page.click("#help-button")
    assert page.is_visible("#help") and "1 then 0" not in page.inner_text("#help")  # numeric keys are elsewhere
    assert page.evaluate(
        "(() => { const d = document.getElementById('help'); return d.scrollWidth <= d.clientWidth"
        " && d.getBoundingClientRect().right <= window.innerWidth; })()"
    )


def test_every_score_is_typed_from_the_keyboard_and_next_unrated_crosses_pages(open_page, width):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(scheme=Scheme.NUMERIC, graders=[grader], n_queries=0, n_candidates=12)
    page = open_page(grader, width)
    page.goto(f"/campaigns/{campaign.pk}/grade/1/")
    cards = page.locator(".card[data-unit]")
    assert cards.count() == 10
    first_unit = int(cards.nth(0).get_attribute("data-unit"))
    assert cards.nth(0).locator(".score-number").input_value() == ""
    page.keyboard.press("1")
    page.keyboard.press("0")  # 1 then 0 is 10, not 1 then 0
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{first_unit}'] .saved\").textContent === 'Saved'"
    )
    assert Judgment.objects.get(grader=grader, unit_id=first_unit).score == 10
    assert GradingEvent.objects.filter(grader=grader, type="score_set").count() == 1
    page.keyboard.press("j")
    page.keyboard.press("7")
    page.wait_for_function("() => document.querySelectorAll('.saved[data-state=saved]').length === 2")
    # Rate the rest of the page by keyboard: "u" jumps to the next unit without a value.
    for _ in range(8):
        page.keyboard.press("u")
        page.keyboard.press("5")
    page.wait_for_function("() => document.querySelectorAll('.saved[data-state=saved]').length === 10")
    assert page.is_visible("#page-complete") and page.inner_text("#count-all") == "10 of 12 in all"
    page.keyboard.press("u")  # none left here: on to the page that has some
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/2/")
    assert sorted(Judgment.objects.filter(grader=grader).values_list("score", flat=True)) == [5.0] * 8 + [7.0, 10.0]

    # The campaign closes while the page is open: the next rating says it was not saved, and why.
    campaign.status = "closed"
    campaign.save()
    page.keyboard.press("3")
    page.wait_for_function("() => document.querySelector('.card.active .saved').dataset.state === 'error'")
    assert page.inner_text(".card.active .saved").startswith("Not saved: ")
    assert "closed" in page.inner_text(".card.active .saved")
    assert Judgment.objects.filter(grader=grader).count() == 10


def test_asking_for_more_lands_on_a_batch_with_a_message(open_page, width):
    campaign = make_campaign(n_queries=0, n_candidates=4, graders=2, overlap=2)
    campaign.policy = Policy.CONSENSUS
    campaign.policy_params = {"batch_size": 3}
    campaign.save()
    for unit in campaign.units.all():
        for grader, broad in zip([a.grader for a in Assignment.objects.filter(unit=unit)], ["VS", "NS"], strict=True):
            record(grader, campaign, "broad_set", {"value": broad}, unit=unit)
            record(grader, campaign, "fine_set", {"value": 5.0}, unit=unit)
    newcomer = make_user(password=PASSWORD)
    role_grant(campaign=campaign, user=newcomer, role=Role.GRADER)
    page = open_page(newcomer, width)
    page.goto(f"/campaigns/{campaign.pk}/continue/")
    page.click("#more-work")
    page.wait_for_url(re.compile(rf".*/campaigns/{campaign.pk}/grade/1/$"))
    assert "3 more units added for you" in page.inner_text(".messages")
    assert page.locator(".card[data-unit]").count() == 3
    assert page.inner_text("#count-all") == "0 of 3 in all"
    if width < 500:
        no_sideways_scroll(page)


def test_the_first_unit_still_open_is_in_view_and_has_the_keyboard(open_page, width):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=0, n_candidates=10, graders=[grader])
    units = my_units(grader, campaign)
    for unit in units[:8]:  # a page left with its last two units open, far below the fold
        record(grader, campaign, "score_set", {"value": 4}, unit=unit)
    page = open_page(grader, width)
    page.goto(f"/campaigns/{campaign.pk}/continue/")
    first_open = f'.card[data-unit="{units[8].pk}"]'
    page.wait_for_function(f"() => document.activeElement === document.querySelector('{first_open}')")
    page.wait_for_function(  # scrolled (smoothly) until the whole card shows
        f"""() => {{ const r = document.querySelector('{first_open}').getBoundingClientRect();
                    return r.top >= 0 && r.bottom <= window.innerHeight; }}"""
    )
    page.keyboard.press("7")  # the keys act on the unit one sees
    page.wait_for_function(f"() => document.querySelector('{first_open} .saved').dataset.state === 'saved'")
    assert Judgment.objects.get(grader=grader, unit=units[8]).score == 7.0


SCHEMES = [
    (Scheme.BROAD_FINE, {}, 1),
    (Scheme.NUMERIC, {"min": 1, "max": 5, "step": 1}, 0),
    (Scheme.CATEGORICAL, None, 0),
    (Scheme.PAIRWISE, {"attribute": "danceable"}, 0),
    (Scheme.ORDERING, {"first": "best"}, 1),
]


def test_every_grading_page_and_the_guidelines_fit_a_phone_with_big_targets_and_pass_axe(open_page):
    grader = make_user(password=PASSWORD)
    page = None
    n_players = 0
    for scheme, params, n_queries in SCHEMES:
        campaign = make_campaign(
            scheme=scheme, scheme_params=params, graders=[grader], n_queries=n_queries, n_candidates=3
        )
        page = page or open_page(grader, 390)
        if scheme == Scheme.BROAD_FINE:
            with_audio(campaign)
        for url in (f"/campaigns/{campaign.pk}/grade/1/", f"/campaigns/{campaign.pk}/guidelines/"):
            page.goto(url)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"phone-{scheme}-{url.split('/')[-2]}.png"), full_page=True)
            no_sideways_scroll(page)
            players = page.eval_on_selector_all("audio.player", "els => els.map(e => e.getBoundingClientRect())")
            n_players += len(players)
            assert all(p["width"] >= 300 and p["height"] >= 44 and p["right"] <= 390 for p in players), players
            small = page.eval_on_selector_all(
                "main button:not([hidden] *), main .btn, main summary, main input:not([type=hidden])",
                "els => els.filter(e => e.offsetParent).map(e => e.getBoundingClientRect())"
                ".filter(r => r.height < 44 || r.width < 44).map(r => [r.width, r.height])",
            )
            assert small == [], f"{scheme} {url}: targets under 44 px: {small}"
            # Chosen answers too: every choice of the scheme is chosen on some card.
            for i in range(page.locator(".card[data-unit]").count()):
                choices = page.locator(".card[data-unit]").nth(i).locator(".choice")
                if choices.count():
                    choices.nth(i % choices.count()).click()
            assert serious_violations(page) == [], f"{scheme} {url}"
    assert n_players == 3  # the three candidates' clips: audio is checked, not skipped


def test_an_ordering_is_dragged_by_touch_on_a_phone(open_page):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(
        scheme=Scheme.ORDERING, scheme_params={"first": "best"}, graders=[grader], n_queries=1, n_candidates=3
    )
    page = open_page(grader, 390)
    page.goto(f"/campaigns/{campaign.pk}/grade/1/")
    before = page.eval_on_selector_all(".order-item", "items => items.map(i => i.dataset.id)")
    grip = page.locator(".order-item").first.locator(".grip").bounding_box()
    last = page.locator(".order-item").last.bounding_box()
    assert grip["width"] >= 44 and grip["height"] >= 44
    session = page.context.new_cdp_session(page)
    start = {"x": grip["x"] + grip["width"] / 2, "y": grip["y"] + grip["height"] / 2}
    session.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [start]})
    for step in range(1, 6):
        y = start["y"] + (last["y"] + last["height"] - 5 - start["y"]) * step / 5
        session.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": start["x"], "y": y}]})
    session.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    after = page.eval_on_selector_all(".order-item", "items => items.map(i => i.dataset.id)")
    assert after == before[1:] + before[:1]
    page.click("#submit-ordering")
    page.wait_for_function("() => document.querySelector('#ordering-state').textContent === 'Submitted'")
    assert Ordering.objects.get(grader=grader).items == after
    assert page.is_visible("#page-complete")
