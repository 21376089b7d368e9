"""An organizer creates an audio campaign whose media zip is 300 MB from the New campaign page, by
keyboard (the upload streams to a temporary file on the server and is unpacked from there); and a zip
over the limit is named beside its field before anything is sent, at 390 px."""

from __future__ import annotations

import os
import zipfile
from urllib.parse import urljoin

import pytest

from grading.models import Campaign, Candidate
from tests.browser.test_grading import ARTIFACTS, PASSWORD, browser, log_in, page  # noqa: F401 - fixtures
from tests.browser.test_organizer import campaign_files, no_sideways_scroll
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MB = 2**20


def zip_with_a_large_file(zip_path, *, megabytes: int) -> None:
    """The campaign's four small recordings plus one incompressible file of `megabytes` MB (stored, not
    deflated, so that the zip itself has that size), written in 1 MB pieces."""
    with zipfile.ZipFile(zip_path, "a") as z, z.open("media/session-recording.bin", "w", force_zip64=True) as out:
        for _ in range(megabytes):
            out.write(os.urandom(MB))


def test_a_300_mb_media_zip_goes_through_the_browser_form(page, tmp_path):  # noqa: F811 - fixtures
    page.set_default_timeout(180_000)
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, make_user("olga", password=PASSWORD, is_staff=True))
    page.click("#new-campaign")
    json_path, zip_path = campaign_files(tmp_path)
    zip_with_a_large_file(zip_path, megabytes=300)
    assert os.path.getsize(zip_path) > 300 * MB
    page.set_input_files("section:has(#by-file) input[name=file]", json_path)
    page.set_input_files("section:has(#by-file) input[name=media]", zip_path)
    assert page.locator("section:has(#by-file) .field-error").count() == 0  # under the limit: nothing said
    page.focus("#check-file")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.inner_text("#preview-title") == "Check before creating: Chord similarity"
    facts = page.inner_text("#preview .facts")
    assert "Media files in the zip\n5" in facts or "Media files in the zip\t5" in facts
    page.locator("#confirm-create:focus").wait_for()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    campaign = Campaign.objects.get(slug="chord-similarity")
    assert Candidate.objects.filter(campaign=campaign).count() == 3
    assert page.url.endswith(f"/organize/campaigns/{campaign.pk}/")


def test_a_zip_over_the_limit_is_named_beside_its_field_before_it_is_sent(page, tmp_path, settings):  # noqa: F811
    settings.MEDIA_ZIP_MAX_BYTES = 1 * MB
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, make_user("olga", password=PASSWORD, is_staff=True))
    page.click("#new-campaign")
    json_path, zip_path = campaign_files(tmp_path)
    zip_with_a_large_file(zip_path, megabytes=2)
    page.set_input_files("section:has(#by-file) input[name=file]", json_path)
    page.set_input_files("section:has(#by-file) input[name=media]", zip_path)
    error = page.locator("section:has(#by-file) input[name=media] + .field-error")
    assert error.inner_text().startswith("media.zip is 2.0 MB; this file may be at most 1.0 MB.")
    assert page.get_attribute("section:has(#by-file) input[name=media]", "aria-invalid") == "true"
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / "organizer-zip-too-large-390.png"), full_page=True)
    page.focus("#check-file")
    page.keyboard.press("Enter")  # the browser refuses to send the form; the page stays as it is
    assert page.url.endswith("/organize/new/") and not page.locator("#preview").count()
    assert not Campaign.objects.exists()


def test_a_zip_chosen_before_the_page_script_ran_is_named_too(page, tmp_path, settings):  # noqa: F811
    """On a slow connection a file can be chosen before the page's script has run: the script checks the
    files already chosen when it starts, not only later choices. The script is held back here until the
    files are chosen, so that order is certain."""
    settings.MEDIA_ZIP_MAX_BYTES = 1 * MB
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, make_user("olga", password=PASSWORD, is_staff=True))
    held = []
    page.route("**/js/organizer*.js", lambda route: held.append(route))
    page.goto(urljoin(page.url, page.get_attribute("#new-campaign", "href")), wait_until="commit")
    page.wait_for_selector("section:has(#by-file) input[name=media]", state="attached")
    json_path, zip_path = campaign_files(tmp_path)
    zip_with_a_large_file(zip_path, megabytes=2)
    page.set_input_files("section:has(#by-file) input[name=file]", json_path)
    page.set_input_files("section:has(#by-file) input[name=media]", zip_path)
    while not held:
        page.wait_for_timeout(20)
    assert not page.locator("section:has(#by-file) .field-error").count()  # the script has not run yet
    held[0].continue_()
    error = page.locator("section:has(#by-file) input[name=media] + .field-error")
    assert error.inner_text().startswith("media.zip is 2.0 MB; this file may be at most 1.0 MB.")
    assert page.get_attribute("section:has(#by-file) input[name=media]", "aria-invalid") == "true"
