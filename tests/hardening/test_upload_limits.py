"""Uploads sized for real campaigns: one setting per kind of upload, read wherever that kind arrives;
a file over its limit is named beside its form, stores nothing, and a body over the page's limit is a
413 page that says both sizes."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from analysis.models import AnalysisRun
from evalutron.limits import body_limit
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.campaign_upload import staging_root
from tests.factories import make_campaign, make_user
from tests.grading.test_organizer_create import EXAMPLES, json_file, media_zip

pytestmark = pytest.mark.django_db


def test_every_upload_endpoint_takes_the_limit_of_its_kind(settings):
    settings.UPLOAD_MAX_BYTES, settings.IMPORT_MAX_BYTES, settings.MEDIA_ZIP_MAX_BYTES = 3000, 5000, 700_000
    settings.BODY_LIMIT_DEFAULT = 2048
    for path in (
        "/api/campaigns/7/system-orderings/",
        "/api/campaigns/7/system-scores/",
        "/reports/campaigns/7/system-orderings/",
        "/reports/campaigns/7/system-scores/",
        "/reports/campaigns/7/evaluate-runs/",
    ):
        assert body_limit(path) == 3000 + 2048, path  # the file and the form around it
    assert body_limit("/organize/new/") == 5000 + 700_000 + 2048  # a campaign file, its media and the fields
    assert body_limit("/organize/new/confirm/") == 2048


@pytest.fixture
def creator(client):
    user = make_user("creator", is_staff=True)
    client.force_login(user)
    return user


def _example() -> dict:
    return json.loads((EXAMPLES / "campaign.json").read_text())


def test_a_media_zip_over_its_limit_is_named_beside_the_form_and_nothing_is_staged(client, creator, settings):
    zipped = media_zip()
    settings.MEDIA_ZIP_MAX_BYTES = zipped.size - 1
    staged_before = set(staging_root().iterdir()) if staging_root().exists() else set()
    response = client.post("/organize/new/", {"source": "file", "file": json_file(_example()), "media": zipped})
    assert response.status_code == 400
    html = response.content.decode()
    assert "media.zip is " in html and "(the server&#x27;s MEDIA_ZIP_MAX_BYTES setting)" in html
    form_errors = response.context["file_form"].errors
    assert list(form_errors) == ["media"]  # the error is the media field's, shown beside it
    assert not Campaign.objects.exists()
    assert (set(staging_root().iterdir()) if staging_root().exists() else set()) == staged_before


def test_the_file_inputs_tell_the_page_their_limits(client, creator, settings):
    settings.IMPORT_MAX_BYTES, settings.MEDIA_ZIP_MAX_BYTES = 3 * 2**20, 300 * 2**20
    html = client.get("/organize/new/").content.decode()
    assert html.count(f'data-max-bytes="{3 * 2**20}"') == 2  # the campaign file and the items CSV
    assert html.count(f'data-max-bytes="{300 * 2**20}"') == 2  # both media zips
    assert 'data-max-text="300.0 MB"' in html


def test_unpacked_media_over_their_limit_are_refused_with_the_setting_named(client, creator, settings):
    settings.MEDIA_UNPACKED_MAX_BYTES = 1000
    response = client.post("/organize/new/", {"source": "file", "file": json_file(_example()), "media": media_zip()})
    assert response.status_code == 400
    assert "unpacked, the media may take at most" in response.content.decode()
    assert not Campaign.objects.exists()


def test_a_body_over_the_page_limit_is_a_413_page_that_says_both_sizes(client, creator, settings):
    settings.IMPORT_MAX_BYTES = settings.MEDIA_ZIP_MAX_BYTES = settings.BODY_LIMIT_DEFAULT = 1024
    big = SimpleUploadedFile("media.zip", b"x" * 10_000, content_type="application/zip")
    response = client.post("/organize/new/", {"source": "file", "file": json_file(_example()), "media": big})
    assert response.status_code == 413
    html = response.content.decode()
    assert response["Content-Type"].startswith("text/html")
    assert "Too large to accept" in html and "nothing was received or stored" in html
    assert "this page takes at most 3.0\xa0KB" in html


@pytest.mark.parametrize("kind", ["orderings", "scores"])
def test_systems_files_read_the_upload_setting_on_the_page_and_in_the_api(client, settings, kind):
    scheme = Scheme.ORDERING if kind == "orderings" else Scheme.BROAD_FINE
    campaign = make_campaign(scheme=scheme, graders=1)
    organizer = make_user("org", is_staff=True)
    client.force_login(organizer)
    header = b"query,system,rank,item\n" if kind == "orderings" else b"unit,system,score\n"
    body = header + b"q,s,1,c\n" * 400
    settings.UPLOAD_MAX_BYTES = len(body) - 1
    page = client.post(
        f"/reports/campaigns/{campaign.pk}/system-{kind}/", {"file": SimpleUploadedFile("systems.csv", body)}
    )
    assert page.status_code == 400
    assert "systems.csv: the file is" in page.content.decode() and "Nothing was imported." in page.content.decode()
    api = APIClient()
    api.force_authenticate(organizer)
    answer = api.post(
        f"/api/campaigns/{campaign.pk}/system-{kind}/",
        {"file": SimpleUploadedFile("systems.csv", body)},
        format="multipart",
    )
    assert answer.status_code == 400 and answer.json()["field"] == "file" and answer.json()["value"] == "systems.csv"
    assert not AnalysisRun.objects.exists()
