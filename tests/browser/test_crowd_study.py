"""A crowd study as its participants meet it, in Chromium: from a join link with Prolific's
parameters at 390 px, keyboard only, through the consent text and the guidelines to grading every
unit of a small BROAD/FINE campaign and reading the completion code; the same id in a fresh browser
context comes back to the same grader; a full link makes nobody. A link with a qualification: a
participant who fails it by keyboard reads the screen-out code, one who passes goes on to their
share and its completion code. And an organizer at 1280 px makes a link on the campaign page by
keyboard."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth import get_user_model

from grading.models import Assignment, GradingEvent, JoinLink, Judgment, Participant
from grading.models.choices import EventType
from grading.services.gold import gold_set
from grading.services.join_links import join_link_create
from tests.browser.test_report_page import _page_as, browser  # noqa: F401 — the shared Chromium fixture
from tests.factories import make_campaign, make_user

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser
PROLIFIC = "PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e&STUDY_ID=study42&SESSION_ID=sess7"
TIMEOUT = 15_000


def participant_page(browser, width: int):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def tab_to(page, element_id: str, limit: int = 250) -> None:
    """Press Tab until the element has the focus (keyboard only, as a participant would)."""
    for _ in range(limit):
        if page.evaluate("document.activeElement && document.activeElement.id") == element_id:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached #{element_id}")


def all_saved(page) -> None:
    page.wait_for_function(
        "() => document.querySelector('#save-status').dataset.state === 'saved'"
        " && JSON.parse(localStorage.getItem('evalutron.outbox.v1') || '[]').length === 0"
    )


def serious_violations(page, context: str | None = None) -> list:
    """axe-core's serious and critical violations (the script comes from the installed package)."""
    found = (
        Axe().run(page, context=context).response["violations"] if context else Axe().run(page).response["violations"]
    )
    return [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in found if v["impact"] in ("serious", "critical")]


def close_quietly(context) -> None:
    context.route("**/api/**", lambda route: route.abort())
    context.close()


def test_a_prolific_participant_consents_reads_grades_everything_by_keyboard_and_gets_the_code(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1, organizer=organizer)
    link = join_link_create(
        campaign=campaign,
        actor=organizer,
        completion_code="C7X9PAID",
        max_participants=1,
        consent_text="Your ratings are used for research and kept under a pseudonym.",
        return_url="https://app.prolific.com/submissions/complete?cc={code}",
    )
    users_before = get_user_model().objects.count()
    url = f"{live_server.url}/join/{link.key}/?{PROLIFIC}"
    context, page, errors = participant_page(browser, 390)
    page.goto(url)
    page.get_by_text("kept under a pseudonym").wait_for()
    assert "C7X9PAID" not in page.content()
    assert serious_violations(page) == []
    assert page.evaluate("document.activeElement.id") == "join-start"  # "I agree: start" has the focus
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/guidelines/")
    participant = Participant.objects.get()
    assert GradingEvent.objects.filter(grader=participant.user, type=EventType.CONSENT_GIVEN).count() == 1
    tab_to(page, "guidelines-read")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/1/")
    assert "C7X9PAID" not in page.content()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    # Every unit by keyboard: 3 is VS, arrows move FINE from the middle, j goes to the next unit.
    n = Assignment.objects.filter(grader=participant.user).count()
    assert n == 3
    page.locator(".card").first.wait_for()
    for i in range(n):
        page.keyboard.press("3")
        for _ in range(2):
            page.keyboard.press("ArrowRight")
        if i < n - 1:
            page.keyboard.press("j")
    page.wait_for_function("() => document.querySelectorAll('.card[data-status=done]').length === 3")
    all_saved(page)
    assert Judgment.objects.filter(grader=participant.user, broad="VS", fine__isnull=False).count() == 3
    page.locator("#completion-link").wait_for(state="visible")
    assert "C7X9PAID" not in page.content()  # the page was rendered before the work was done
    tab_to(page, "completion-link")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/completion/")
    assert page.locator("#completion-code").inner_text() == "C7X9PAID"
    assert (
        page.locator("#return-link").get_attribute("href")
        == "https://app.prolific.com/submissions/complete?cc=C7X9PAID"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert serious_violations(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "crowd-completion-390.png"), full_page=True)
    close_quietly(context)
    assert errors == []

    # The same Prolific id in a fresh browser (no cookies): the same grader, their code again.
    context, page, errors = participant_page(browser, 390)
    page.goto(url)
    page.locator("#welcome-back").wait_for()
    assert page.evaluate("document.activeElement.id") == "join-start"
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/**")
    assert page.locator("#completion-code").inner_text() == "C7X9PAID"
    assert Participant.objects.count() == 1 and get_user_model().objects.count() == users_before + 1
    close_quietly(context)
    assert errors == []

    # Another Prolific id: the link's one place is taken, so it says so and makes nobody.
    context, page, errors = participant_page(browser, 390)
    page.goto(f"{live_server.url}/join/{link.key}/?PROLIFIC_PID=someoneelse01&STUDY_ID=study42&SESSION_ID=s2")
    assert "study is full" in page.locator("#join-closed").inner_text()
    assert get_user_model().objects.count() == users_before + 1 and Participant.objects.count() == 1
    close_quietly(context)


def test_an_organizer_makes_a_join_link_on_the_campaign_page_by_keyboard(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1, organizer=organizer)
    page, errors = _page_as(browser, live_server, organizer)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name=campaign.name).first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/")
    page.locator("#id_label").focus()
    page.keyboard.type("Prolific pilot")
    page.keyboard.press("Tab")
    page.keyboard.type("PILOT2026")
    page.keyboard.press("Tab")
    page.keyboard.type("20")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/#link-*")  # the page before has "Join links" too
    link = JoinLink.objects.get()
    assert (link.label, link.completion_code, link.max_participants) == ("Prolific pilot", "PILOT2026", 20)
    page.locator(f"#link-{link.pk}").wait_for()
    assert page.locator(f"#link-{link.pk} .join-url").input_value() == f"{live_server.url}/join/{link.key}/"
    tab_to(page, f"pause-link-{link.pk}")
    page.keyboard.press("Enter")
    page.locator(f"#reopen-link-{link.pk}").wait_for()
    link.refresh_from_db()
    assert link.paused
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert serious_violations(page, "#join-links") == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "crowd-join-links-1280.png"), full_page=True)
    page.locator("#join-links").screenshot(path=str(ARTIFACTS / "crowd-join-links-section.png"))
    assert errors == []


def _qualifying_participant(browser, live_server, *, rule):  # noqa: F811
    """A Prolific participant at 390 px, by keyboard through the consent text and the guidelines to
    the first qualification page of a BROAD/FINE campaign whose first query's three units are gold (VS)."""
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=2, n_candidates=3, graders=1, organizer=organizer)
    for unit in campaign.units.order_by("query_id", "position", "pk")[:3]:
        gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value="VS")
    link = join_link_create(
        campaign=campaign,
        actor=organizer,
        completion_code="C7X9PAID",
        max_participants=5,
        consent_text="Your ratings are used for research and kept under a pseudonym.",
        return_url="https://app.prolific.com/submissions/complete?cc={code}",
        qualification=rule,
    )
    context, page, errors = participant_page(browser, 390)
    page.goto(f"{live_server.url}/join/{link.key}/?{PROLIFIC}")
    page.get_by_text("kept under a pseudonym").wait_for()
    assert page.evaluate("document.activeElement.id") == "join-start"
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/guidelines/")
    tab_to(page, "guidelines-read")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/1/")
    page.locator("#qualifying").wait_for()
    page.locator(".card").first.wait_for()
    assert page.locator(".card").count() == 3  # the qualification units only
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert serious_violations(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "crowd-qualifying-390.png"), full_page=True)
    for secret in ("C7X9PAID", "OUT5CODE"):
        assert secret not in page.content()
    return campaign, context, page, errors


def _rate_by_keyboard(page, key: str, n: int) -> None:
    for i in range(n):
        page.keyboard.press(key)
        for _ in range(2):
            page.keyboard.press("ArrowRight")
        if i < n - 1:
            page.keyboard.press("j")
    page.wait_for_function(f"() => document.querySelectorAll('.card[data-status=done]').length === {n}")
    all_saved(page)


def test_a_prolific_participant_fails_the_qualification_by_keyboard_and_reads_the_screen_out_code(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    rule = {"units": 3, "pass_mark": 2, "screen_out_code": "OUT5CODE"}
    campaign, context, page, errors = _qualifying_participant(browser, live_server, rule=rule)
    _rate_by_keyboard(page, "1", 3)  # Not Similar, where the known answer is Very Similar: 0 of 3 right
    participant = Participant.objects.get()
    assert participant.screened_out_at is not None
    assert not Assignment.objects.filter(grader=participant.user, status="open").exists()
    page.locator("#qualification-result").wait_for(state="visible")
    assert "OUT5CODE" not in page.content()  # the page was rendered before the decision
    tab_to(page, "qualification-result")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/completion/")
    assert page.locator("#screen-out-code").inner_text() == "OUT5CODE"
    assert "below the pass mark" in page.locator("#screened-out-words").inner_text()
    assert (
        page.locator("#screen-out-return").get_attribute("href")
        == "https://app.prolific.com/submissions/complete?cc=OUT5CODE"
    )
    assert "C7X9PAID" not in page.content()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert serious_violations(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "crowd-screened-out-390.png"), full_page=True)
    # Back on the grading page: the same words, and nothing more to do.
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/grade/1/")
    assert page.locator("#screen-out-code").inner_text() == "OUT5CODE"
    assert page.locator("#grading.readonly").count() == 1
    close_quietly(context)
    assert errors == []


def test_a_prolific_participant_passes_the_qualification_by_keyboard_and_goes_on_to_the_share(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    rule = {"units": 3, "pass_mark": 2, "screen_out_code": "OUT5CODE"}
    campaign, context, page, errors = _qualifying_participant(browser, live_server, rule=rule)
    _rate_by_keyboard(page, "3", 3)  # Very Similar: 3 of 3 right
    participant = Participant.objects.get()
    assert participant.qualified_at is not None
    tab_to(page, "qualification-result")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/completion/")
    assert "You passed the qualification" in page.locator("#qualified").inner_text()
    assert "OUT5CODE" not in page.content() and "C7X9PAID" not in page.content()
    tab_to(page, "continue")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/grade/2/")
    page.locator(".card").first.wait_for()
    assert page.locator("#qualifying").count() == 0 and page.locator(".card").count() == 3
    _rate_by_keyboard(page, "2", 3)
    tab_to(page, "completion-link")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/completion/")
    assert page.locator("#completion-code").inner_text() == "C7X9PAID"
    assert "OUT5CODE" not in page.content()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    close_quietly(context)
    assert errors == []


def test_an_organizer_sets_a_qualification_by_keyboard_and_reads_its_error_next_to_the_field(
    browser,  # noqa: F811
    live_server,
    transactional_db,
):
    organizer = make_user("organizer")
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1, organizer=organizer)
    unit = campaign.units.order_by("pk").first()
    gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value="VS")
    page, errors = _page_as(browser, live_server, organizer)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/organize/campaigns/{campaign.pk}/")
        page.locator("#id_completion_code").focus()
        page.keyboard.type("PAID1")
        page.keyboard.press("Tab")
        page.keyboard.type("10")
        tab_to(page, "id_qualification_units")
        page.keyboard.type("2")  # the campaign has one gold unit
        page.keyboard.press("Tab")
        page.keyboard.type("1")
        page.keyboard.press("Tab")
        page.keyboard.type("OUT1")
        page.keyboard.press("Enter")
        error = page.locator(".field-invalid .field-error").first
        error.wait_for()
        assert "asks for 2 gold units but campaign" in error.inner_text()
        assert page.locator(".field-invalid #id_qualification_units").count() == 1  # next to its field
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert JoinLink.objects.count() == 0
    page.locator("#id_qualification_units").fill("")
    page.locator("#id_qualification_units").focus()
    page.keyboard.type("1")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/#link-*")
    link = JoinLink.objects.get()
    assert link.qualification == {"units": 1, "pass_mark": 1, "screen_out_code": "OUT1"}
    rule = page.locator(f"#rule-{link.pk}").inner_text()
    assert "1 gold unit first; at least 1 of 1 right goes on to the share" in rule and "OUT1" in rule
    assert "So far 0 passed and 0 were screened out, of 0 who joined." in rule
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert serious_violations(page, "#join-links") == []
    assert [e for e in errors if "status of 400" not in e] == []  # the refused form is answered 400, by design
