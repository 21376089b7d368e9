"""An organizer runs a whole campaign in Chromium: creates it from a file with media, invites a
grader who has no account, opens it, watches the dashboard move while the grader works, runs an
analysis and downloads the ground truth. Then every organizer page at 390 px."""

from __future__ import annotations

import json
import re
import zipfile

import pandas as pd
import pytest

from analysis.models import AnalysisRun
from grading.models import Campaign, Judgment
from tests.browser.test_grading import (  # noqa: F401 - fixtures
    ARTIFACTS,
    PASSWORD,
    all_saved,
    browser,
    card,
    close_quietly,
    log_in,
    page,
    tiny_wav,
)
from tests.factories import make_user
from tests.grading.api_helpers import fast_passwords, my_units  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def campaign_files(tmp_path) -> tuple[str, str]:
    definition = {
        "format": "evalutron.campaign/1",
        "campaign": {
            "name": "Chord similarity",
            "slug": "chord-similarity",
            "scheme": "broad_fine",
            "guidelines": "Listen to the query, then to each candidate.",
            "initial_overlap": 2,
            "max_overlap": 2,
        },
        "systems": [{"name": "sys-a"}],
        "queries": [{"id": "q1", "title": "A major", "kind": "audio", "media": "media/q1.wav"}],
        "candidates": [
            {
                "id": f"c{i}",
                "kind": "audio",
                "media": f"media/c{i}.wav",
                "provenance": [{"system": "sys-a", "query": "q1", "rank": i}],
            }
            for i in (1, 2, 3)
        ],
    }
    json_path = tmp_path / "campaign.json"
    json_path.write_text(json.dumps(definition))
    zip_path = tmp_path / "media.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        for name in ("q1", "c1", "c2", "c3"):
            z.writestr(f"media/{name}.wav", tiny_wav(0.5))
    return str(json_path), str(zip_path)


def grader_page(chromium, organizer_page):
    context = chromium.new_context(
        base_url=organizer_page.url.split("/organize")[0], viewport={"width": 390, "height": 800}
    )
    context.set_default_timeout(15_000)
    new = context.new_page()
    new.route("**/media/**", lambda route: route.fulfill(body=tiny_wav(0.5), content_type="audio/wav"))
    return new


def grade_all(grader_page, grader, campaign) -> None:
    grader_page.click("a.continue")
    grader_page.wait_for_url("**/grade/1/")
    units = my_units(grader, campaign)
    assert len(units) == campaign.units.count()
    for unit in units:
        card(grader_page, unit).locator(".choice[data-value='VS']").click()
        card(grader_page, unit).locator(".fine-number").fill("8.0")
        card(grader_page, unit).locator(".fine-number").press("Tab")
    all_saved(grader_page)
    close_quietly(grader_page.context)


def no_sideways_scroll(tab) -> None:
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), tab.url


def test_an_organizer_runs_a_campaign_from_the_browser(page, browser, tmp_path):  # noqa: F811 - fixtures
    organizer = make_user("olga", password=PASSWORD, is_staff=True)
    make_user("gus", password=PASSWORD)  # has an account already
    log_in(page, organizer)
    page.click("#new-campaign")
    json_path, zip_path = campaign_files(tmp_path)
    page.set_input_files("#by-file ~ form input[name=file], section:has(#by-file) input[name=file]", json_path)
    page.set_input_files("section:has(#by-file) input[name=media]", zip_path)
    page.click("#check-file")
    page.locator("#confirm-create:focus").wait_for()
    assert "Units" in page.inner_text("#preview") and not Campaign.objects.exists()
    page.screenshot(path=str(ARTIFACTS / "organizer-preview.png"), full_page=True)
    page.keyboard.press("Enter")  # the confirm button has the focus
    page.wait_for_url("**/organize/campaigns/*/")
    campaign = Campaign.objects.get(slug="chord-similarity")
    assert campaign.units.count() == 3

    # Members: one new person by e-mail and one existing account, pasted together.
    page.click("nav.subnav >> text=Members")
    page.fill("#id_people", "nina@example.org\ngus")
    page.click("#add-members")
    link = page.locator("input.invite-link").input_value()
    assert "/accounts/set-password/" in link
    page.click("#assign-initial")
    page.locator("text=Created 6 assignment(s)").wait_for()

    # Open it, confirming with the keyboard.
    page.click("nav.subnav >> text=Overview")
    page.click("text=Open the campaign…")
    page.wait_for_url("**/status/open/")
    page.locator("#confirm-status:focus").wait_for()
    page.keyboard.press("Enter")
    page.locator(".messages >> text=is now open").wait_for()

    # The dashboard, left open while the grader works.
    page.click("nav.subnav >> text=Progress")
    page.wait_for_url(f"**/organize/campaigns/{campaign.pk}/progress/")  # the mark goes on the new page
    page.evaluate("window.notReloaded = true")
    assert page.inner_text('#totals [data-k="done"]') == "0"

    # Nina sets her password from the link (on a phone-sized screen) and grades; Gus logs in and grades.
    nina_page = grader_page(browser, page)
    nina_page.goto(link)
    nina_page.fill("#id_new_password1", "chords-and-triads-77")
    nina_page.fill("#id_new_password2", "chords-and-triads-77")
    nina_page.click("#set-password")
    nina_page.wait_for_url("**/")
    nina = campaign.roles.get(user__email="nina@example.org").user
    grade_all(nina_page, nina, campaign)
    gus_page = grader_page(browser, page)
    log_in(gus_page, campaign.roles.get(user__username="gus").user)
    grade_all(gus_page, campaign.roles.get(user__username="gus").user, campaign)
    n_units = campaign.units.count()
    assert Judgment.objects.filter(campaign=campaign).count() == 2 * n_units

    page.wait_for_function(f"() => document.querySelector('#totals [data-k=\"done\"]').textContent === '{2 * n_units}'")
    assert page.evaluate("window.notReloaded") is True
    page.screenshot(path=str(ARTIFACTS / "organizer-progress.png"), full_page=True)

    # An analysis, then the ground truth, read back by pandas.
    page.click("nav.subnav >> text=Report")
    page.click("#run-analysis")
    page.locator("text=/Result of analysis #\\d+/").wait_for(timeout=60_000)
    # #1, #2, ... of this campaign in the order runs started; a queued automatic run has no number yet.
    numbers = sorted(n for n in AnalysisRun.objects.filter(campaign=campaign).values_list("number", flat=True) if n)
    assert numbers == list(range(1, len(numbers) + 1))
    shown = re.search(r"Result of analysis #(\d+),", page.inner_text("#run-status"))
    assert shown and int(shown.group(1)) in numbers
    with page.expect_download() as download:
        page.click("#run-status >> text=CSV >> nth=0")
    frame = pd.read_csv(download.value.path(), comment="#")
    assert len(frame) == n_units == 3

    # Every organizer page at 390 px: nothing scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    for path in (
        "/",
        "/organize/new/",
        f"/organize/campaigns/{campaign.pk}/",
        f"/organize/campaigns/{campaign.pk}/members/",
        f"/organize/campaigns/{campaign.pk}/progress/",
        f"/organize/campaigns/{campaign.pk}/status/closed/",
    ):
        page.goto(path)
        no_sideways_scroll(page)
        page.screenshot(
            path=str(ARTIFACTS / f"organizer-390-{path.strip('/').replace('/', '-') or 'home'}.png"), full_page=True
        )
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/")
    page.screenshot(path=str(ARTIFACTS / "organizer-home-1280.png"), full_page=True)
