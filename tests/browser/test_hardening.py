"""Under the Content-Security-Policy the grading and report pages work with no violation in
Chromium's console; and the outbox drops an event the server refuses outright, showing the grader
what was not saved, instead of retrying it forever."""

from __future__ import annotations

import pytest

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import GradingEvent
from tests.browser.test_grading import (  # noqa: F401
    PASSWORD,
    TIMEOUT,
    all_saved,
    browser,
    card,
    close_quietly,
    log_in,
    with_audio,
)
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import fast_passwords, my_units  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def watched(browser, live_server):  # noqa: F811 - the module's browser fixture
    """A page whose console messages and JavaScript errors are collected."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    console: list[str] = []
    errors: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page, console, errors
    close_quietly(context)


def csp_violations(console: list[str]) -> list[str]:
    return [m for m in console if "Content Security Policy" in m or "Refused to" in m]


def test_grading_and_report_pages_work_under_the_policy(watched):
    page, console, errors = watched
    grader, organizer = make_user(password=PASSWORD), make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=1, n_candidates=3, organizer=organizer)
    with_audio(campaign)
    unit = my_units(grader, campaign)[0]
    log_in(page, grader)
    response = page.goto(f"/campaigns/{campaign.pk}/grade/1/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    card(page, unit).locator(".choice[data-value='VS']").click()
    card(page, unit).locator(".fine-number").fill("8.5")
    card(page, unit).locator(".fine-number").press("Tab")
    all_saved(page)
    assert GradingEvent.objects.filter(unit=unit, type__in=["broad_set", "fine_set"]).count() == 2
    page.evaluate("document.querySelector('audio').play().catch(() => {})")
    page.wait_for_function("() => document.querySelector('audio').currentTime > 0")  # the clip plays under the policy

    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=1)
    run_execute(run_id=run.pk)
    page.context.clear_cookies()
    log_in(page, organizer)
    page.goto(f"/reports/campaigns/{campaign.pk}/")
    page.locator("#section-overview").wait_for()
    assert csp_violations(console) == [] and errors == []


def test_the_api_docs_work_under_the_policy_from_our_own_files(watched):
    page, console, errors = watched
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto("/api/docs/")
    page.get_by_text("Authorize").first.wait_for()  # Swagger UI rendered the schema
    page.goto("/api/redoc/")
    page.get_by_text("Download").first.wait_for()  # ReDoc rendered it too
    page.wait_for_load_state("networkidle")  # whatever the two pages load after rendering has been asked for
    assert csp_violations(console) == [] and errors == []
    scripts_and_styles = [u for u in requested if u.endswith((".js", ".css"))]
    assert scripts_and_styles and all(u.startswith(page.url.split("/api/")[0]) for u in scripts_and_styles)


def test_an_event_the_server_refuses_outright_is_dropped_and_shown_as_not_saved(watched, settings):
    page, console, errors = watched
    settings.BODY_LIMIT_EVENTS = 2500  # so that one long comment is a 413 for the whole request
    grader = make_user(password=PASSWORD)
    campaign = make_campaign(graders=[grader], n_queries=1, n_candidates=3)
    first, second = my_units(grader, campaign)[:2]
    log_in(page, grader)
    page.goto(f"/campaigns/{campaign.pk}/grade/1/")
    page.evaluate(f"window.evalutronPage.record('comment', {{unit: {first.pk}}}, {{text: 'x'.repeat(3000)}})")
    indicator = card(page, first).locator(".comment-state")  # a comment's state shows beside the comment
    page.wait_for_function(
        f"() => document.querySelector(\".card[data-unit='{first.pk}'] .comment-state\").dataset.state === 'error'"
    )
    assert "Not saved" in indicator.text_content() and "at most 2500" in indicator.text_content()
    card(page, second).locator(".choice[data-value='SS']").click()
    all_saved(page)
    assert GradingEvent.objects.filter(type="broad_set", unit=second).count() == 1
    assert not GradingEvent.objects.filter(type="comment").exists()
    assert errors == []


def test_password_guessing_on_the_login_page_meets_a_plain_message(browser, live_server, settings):  # noqa: F811
    settings.LOGIN_FAILURE_LIMIT = 2
    user = make_user(password=PASSWORD)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 800})
    page = context.new_page()
    for _ in range(3):  # by keyboard only: type, Tab, type, Enter
        page.goto("/accounts/login/")
        # the username field has the focus as the page loads (autofocus)
        page.wait_for_function("() => document.activeElement && document.activeElement.name === 'username'")
        page.keyboard.type(user.username)
        page.keyboard.press("Tab")
        page.keyboard.type("a wrong guess")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    alert = page.get_by_role("alert").first
    assert "Too many failed attempts. Please try again in 15 minutes." in alert.inner_text()
    page.screenshot(path="test-artifacts/login-locked-390.png")
    close_quietly(context)
