"""The grading pages in Chromium, driven by Playwright: mouse, keyboard, audio, reloads, a cut network,
and orderings. One browser for the module; each test gets a fresh context (cookies, localStorage)."""

from __future__ import annotations

import json
import os
import shutil
import wave
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.base import ContentFile

from grading.models import Assignment, Candidate, GradingEvent, Judgment, Ordering
from grading.models.choices import Scheme
from tests import services
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import fast_passwords, my_units  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
PASSWORD = "pw-for-tests-123"
TIMEOUT = 15_000


@pytest.fixture(scope="module")
def browser():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        services.unavailable("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make
    # between browser steps are ordinary blocking calls, which Django must be told are fine.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=path,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--autoplay-policy=no-user-gesture-required",
            ],
        )
        yield browser
        browser.close()
    if previous is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def close_quietly(context) -> None:
    """Close a browser context without late requests: a grading page that closes reports that it left
    view (page_focus). Requests already on their way are the live server's business: it lets none in
    after the test and waits for those inside before the database is reset (tests/browser/conftest.py)."""
    context.route("**/api/**", lambda route: route.abort())
    context.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1200, "height": 900})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Media files: the test server does not serve MEDIA_ROOT, so the browser gets them from here.
    # Candidates' blinded media (/media/c/<public id>) are served by the app itself.
    page.route(
        "**/media/**",
        lambda route: route.continue_()
        if "/media/c/" in route.request.url
        else route.fulfill(
            path=str(Path(settings.MEDIA_ROOT) / route.request.url.split("/media/", 1)[1]), content_type="audio/wav"
        ),
    )
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{page.url.rstrip('/').split('/')[-1] or 'page'}-last.png"))
    close_quietly(context)
    assert errors == [], f"JavaScript errors: {errors}"


def tiny_wav(seconds: float = 1.5, rate: int = 8000) -> bytes:
    """A quiet tone, made here so that nothing is downloaded."""
    import io
    import math

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        frames = bytearray()
        for i in range(int(seconds * rate)):
            frames += int(3000 * math.sin(2 * math.pi * 440 * i / rate)).to_bytes(2, "little", signed=True)
        w.writeframes(bytes(frames))
    return buffer.getvalue()


def with_audio(campaign) -> None:
    data = tiny_wav()
    for cand in Candidate.objects.filter(campaign=campaign):
        cand.kind = "audio"
        cand.media_file.save(f"{cand.public_id}.wav", ContentFile(data), save=True)


def log_in(page, user) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("/")  # the home page; "**/" matched the login page's own address and did not wait


def all_saved(page) -> None:
    page.wait_for_function(
        "() => document.querySelector('#save-status').dataset.state === 'saved'"
        " && JSON.parse(localStorage.getItem('evalutron.outbox.v1') || '[]').length === 0"
    )


def sends_value(request, event_type: str, value) -> bool:
    """Whether a request posts an event of this type carrying this value."""
    if not request.url.endswith("/api/events/") or request.method != "POST":
        return False
    return any(e["type"] == event_type and e["payload"].get("value") == value for e in json.loads(request.post_data))


def card(page, unit):
    return page.locator(f".card[data-unit='{unit.pk}']")


def test_a_grader_grades_by_mouse_and_by_keyboard_plays_a_clip_and_finds_it_all_after_a_reload(page):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=2, n_candidates=3)
    with_audio(campaign)
    units = my_units(grader, campaign)
    log_in(page, grader)
    page.click(f".campaign-row[data-campaign='{campaign.pk}'] a.continue")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/1/")

    # The mouse: BROAD by click, FINE typed into the number box.
    first = card(page, units[0])
    first.locator(".choice[data-value='VS']").click()
    first.locator(".fine-number").fill("8.5")
    first.locator(".fine-number").press("Tab")
    # The keyboard only: j moves on, 2 is SS, arrows move FINE from the middle by 0.1.
    page.locator("body").press("Escape")
    first.focus()
    page.keyboard.press("j")
    page.keyboard.press("2")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("j")
    page.keyboard.press("3")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowLeft")  # VS with FINE 2.0: the gentle hint
    third = card(page, units[2])
    third.locator(".hint").wait_for(state="visible")
    page.keyboard.press(" ")  # play the active candidate's clip
    page.wait_for_function(f"() => !document.querySelector(\".card[data-unit='{units[2].pk}'] audio\").paused")
    page.wait_for_function(f"() => document.querySelector(\".card[data-unit='{units[2].pk}'] audio\").currentTime > 0")
    page.keyboard.press(" ")
    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("g")
    assert page.locator("#guidelines").is_visible()
    page.keyboard.press("Escape")
    all_saved(page)

    judged = {j.unit_id: (j.broad, float(j.fine)) for j in Judgment.objects.filter(grader=grader)}
    assert judged == {units[0].pk: ("VS", 8.5), units[1].pk: ("SS", 5.3), units[2].pk: ("VS", 2.0)}
    kinds = list(GradingEvent.objects.filter(grader=grader).values_list("type", flat=True))
    auditions = GradingEvent.objects.filter(type="audition", unit=units[2]).values_list("payload", flat=True)
    assert {a["action"] for a in auditions} >= {"play", "pause"}
    assert kinds.count("hint_shown") == 1 and kinds.count("guidelines_viewed") == 1 and kinds.count("unit_viewed") == 3

    page.reload()
    assert first.locator(".choice[data-value='VS']").get_attribute("aria-checked") == "true"
    assert first.locator(".fine-number").input_value() == "8.5"
    assert card(page, units[1]).locator(".fine-number").input_value() == "5.3"
    assert third.locator(".hint").is_visible()
    page.evaluate("window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "grading.png"))
    if os.environ.get("UPDATE_SCREENSHOTS"):  # the README's picture, refreshed on purpose only
        page.screenshot(path=str(ROOT / "docs" / "screenshots" / "grading.png"))


def test_with_the_network_cut_three_more_units_are_kept_and_arrive_exactly_once(page):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=2, n_candidates=2)
    units = my_units(grader, campaign)
    log_in(page, grader)
    sent: list[str] = []
    page.on(
        "request",
        lambda r: sent.extend(e["id"] for e in json.loads(r.post_data or "[]"))
        if r.url.endswith("/api/events/") and r.method == "POST"
        else None,
    )
    page.goto(f"/campaigns/{campaign.pk}/grade/1/")
    card(page, units[0]).locator(".choice[data-value='NS']").click()
    all_saved(page)

    # First the answer is lost after the server stored the events (the client must retry and the
    # server must answer "replayed"), then the network is gone altogether.
    mode = {"lose_answer": True}

    def cut(route):
        if mode["lose_answer"]:
            mode["lose_answer"] = False
            route.fetch()
        route.abort()

    page.route("**/api/events/**", cut)
    for unit, broad in [(units[0], None), (units[1], "SS")]:
        if broad:
            card(page, unit).locator(f".choice[data-value='{broad}']").click()
    card(page, units[0]).locator(".fine-number").fill("1.5")
    card(page, units[0]).locator(".fine-number").press("Enter")
    card(page, units[1]).locator(".fine-number").fill("5.0")
    card(page, units[1]).locator(".fine-number").press("Enter")
    page.wait_for_function("() => document.querySelector('#save-status').dataset.state === 'offline'")
    page.click("#next-page")  # the unsent events travel with the page, in localStorage
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/2/")
    for unit, broad, fine in [(units[2], "VS", "9.9"), (units[3], "SS", "4.0")]:
        card(page, unit).locator(f".choice[data-value='{broad}']").click()
        card(page, unit).locator(".fine-number").fill(fine)
        card(page, unit).locator(".fine-number").press("Enter")
    page.wait_for_function("() => document.querySelector('#save-status').dataset.state === 'offline'")
    waiting = page.evaluate("JSON.parse(localStorage.getItem('evalutron.outbox.v1')).length")
    assert waiting >= 6
    assert Judgment.objects.filter(grader=grader, unit=units[2]).count() == 0

    page.unroute("**/api/events/**")
    page.evaluate("window.dispatchEvent(new Event('online'))")
    all_saved(page)
    distinct = set(sent)
    assert len(sent) > len(distinct)  # retries really happened
    assert GradingEvent.objects.filter(grader=grader).count() == len(distinct)
    assert set(map(str, GradingEvent.objects.values_list("id", flat=True))) == distinct
    judged = {j.unit_id: (j.broad, float(j.fine)) for j in Judgment.objects.filter(grader=grader)}
    assert judged == {
        units[0].pk: ("NS", 1.5),
        units[1].pk: ("SS", 5.0),
        units[2].pk: ("VS", 9.9),
        units[3].pk: ("SS", 4.0),
    }
    assert Assignment.objects.filter(grader=grader, status="done").count() == 4


def test_an_ordering_is_changed_by_drag_and_drop_and_by_keyboard_and_submitted(page):
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(scheme=Scheme.ORDERING, graders=[grader], n_queries=1, n_candidates=4)
    log_in(page, grader)
    page.goto(f"/campaigns/{campaign.pk}/continue/")
    items = page.locator(".order-item")
    items.first.wait_for()
    start = [items.nth(i).get_attribute("data-id") for i in range(4)]

    # Drag the first candidate below the third.
    box_first, box_third = items.nth(0).bounding_box(), items.nth(2).bounding_box()
    page.mouse.move(box_first["x"] + 12, box_first["y"] + box_first["height"] / 2)
    page.mouse.down()
    for step in range(1, 9):
        page.mouse.move(
            box_first["x"] + 12,
            box_first["y"] + (box_third["y"] + box_third["height"] * 0.8 - box_first["y"]) * step / 8,
        )
    page.mouse.up()
    after_drag = [items.nth(i).get_attribute("data-id") for i in range(4)]
    assert after_drag == [start[1], start[2], start[0], start[3]], (start, after_drag)

    # The keyboard: go to the last item and move it to the top.
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowUp")
    expected = [start[3], start[1], start[2], start[0]]
    assert [items.nth(i).get_attribute("data-id") for i in range(4)] == expected
    page.keyboard.press("Enter")
    page.locator("#ordering-state", has_text="Submitted").wait_for()
    all_saved(page)
    assert Ordering.objects.get(grader=grader).items == expected
    assert GradingEvent.objects.filter(type="ordering_changed").count() == 4
    assert Assignment.objects.get(grader=grader).status == "done"
    page.reload()
    assert [items.nth(i).get_attribute("data-id") for i in range(4)] == expected


def test_numeric_categorical_and_pairwise_pages_take_keys(page):
    grader = make_user(password=PASSWORD)
    numeric = make_campaign(
        scheme=Scheme.NUMERIC,
        graders=[grader],
        n_queries=0,
        n_candidates=2,
        scheme_params={"min": 1, "max": 5, "step": 1},
    )
    categorical = make_campaign(scheme=Scheme.CATEGORICAL, graders=[grader], n_queries=0, n_candidates=2)
    pairwise = make_campaign(scheme=Scheme.PAIRWISE, graders=[grader], n_queries=0, n_candidates=2)
    for unit in pairwise.units.all():
        unit.candidate_b = pairwise.candidates.exclude(pk=unit.candidate_id).first()
        unit.save()
    log_in(page, grader)
    for campaign, keys, event_type, field, expected in [
        (numeric, ["4", "ArrowRight"], "score_set", "score", 5.0),
        (categorical, ["3"], "label_set", "label", "good"),
        (pairwise, ["b"], "pairwise_set", "verdict", "B"),
    ]:
        page.goto(f"/campaigns/{campaign.pk}/continue/")
        page.locator(".card.active").wait_for()
        # The arrow keys' value is recorded when they rest: wait for the event that carries it.
        with page.expect_request(lambda r, t=event_type, v=expected: sends_value(r, t, v)):
            for key in keys:
                page.keyboard.press(key)
        all_saved(page)
        unit = my_units(grader, campaign)[0]
        assert getattr(Judgment.objects.get(grader=grader, unit=unit), field) == expected
