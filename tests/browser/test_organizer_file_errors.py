"""An organizer uploads a campaign file with several bad entries from the New campaign page: every
problem is listed next to the form, the list takes the focus, and nothing is stored; at 1280 and 390 px."""

from __future__ import annotations

import json

import pytest

from grading.models import Campaign
from tests.browser.test_grading import ARTIFACTS, PASSWORD, browser, log_in, page  # noqa: F401 - fixtures
from tests.browser.test_organizer import campaign_files, no_sideways_scroll
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_every_problem_of_a_bad_file_is_listed_next_to_the_form(page, tmp_path):  # noqa: F811 - fixtures
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, make_user("olga", password=PASSWORD, is_staff=True))
    page.click("#new-campaign")
    json_path, zip_path = campaign_files(tmp_path)
    definition = json.loads(open(json_path).read())
    definition["candidates"][0]["provenance"][0]["system"] = "sys-z"
    definition["candidates"][1]["media"] = "media/missing.wav"
    definition["candidates"].append({**definition["candidates"][2]})
    with open(json_path, "w") as out:
        json.dump(definition, out)
    page.set_input_files("section:has(#by-file) input[name=file]", json_path)
    page.set_input_files("section:has(#by-file) input[name=media]", zip_path)
    page.focus("#check-file")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.locator("#form-errors:focus").wait_for()  # the list takes the focus, so it is read out first
    assert page.inner_text("#form-errors h3") == "3 problems. Nothing was stored."
    items = page.locator("#form-errors li").all_inner_texts()
    assert len(items) == 3
    assert [item.split(": ")[0] for item in items] == [
        "candidates[0].provenance[0], field 'system', value 'sys-z'",
        "candidates[1], field 'media', value 'media/missing.wav'",
        "candidates[3], field 'id', value 'c3'",
    ]
    assert page.locator("section:has(#by-file) #form-errors").count() == 1  # next to the form it is about
    assert page.get_attribute("#form-errors", "aria-labelledby") == "form-errors-title"
    page.screenshot(path=str(ARTIFACTS / "organizer-file-errors-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / "organizer-file-errors-390.png"), full_page=True)
    page.keyboard.press("Tab")  # from the list, the keyboard goes on to the form to fix it
    assert page.evaluate("document.activeElement.closest('form') !== null")
    assert not Campaign.objects.exists()
