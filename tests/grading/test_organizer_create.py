"""New campaign from the browser: a campaign file (+ zip of media) or a form (+ items CSV), a preview
before anything is stored, all-or-nothing confirmation, and the CLI's messages for bad files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Campaign, CampaignRole, Candidate, Unit
from grading.models.choices import Role
from tests.factories import make_user
from tests.grading.test_import_campaign import break_it, counts

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = pytest.mark.django_db


def media_zip(*, extra: dict[str, bytes] | None = None) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in (EXAMPLES / "media").iterdir():
            z.write(path, f"media/{path.name}")
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return SimpleUploadedFile("media.zip", buffer.getvalue(), content_type="application/zip")


def json_file(definition: dict) -> SimpleUploadedFile:
    return SimpleUploadedFile("campaign.json", json.dumps(definition).encode(), content_type="application/json")


@pytest.fixture
def creator(client):
    user = make_user("creator", is_staff=True)
    client.force_login(user)
    return user


@pytest.fixture
def example() -> dict:
    return json.loads((EXAMPLES / "campaign.json").read_text())


def test_a_campaign_file_with_media_is_previewed_then_created_by_confirming(client, creator, example):
    response = client.post("/organize/new/", {"source": "file", "file": json_file(example), "media": media_zip()})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Check before creating: Example audio similarity" in html
    # The example is open and names its graders: the preview says so, not "a draft".
    assert "It starts <strong>open</strong>" in html and "starts as a <strong>draft</strong>" not in html
    assert counts() == (0,) * 7  # the preview stores nothing
    token = response.context["preview"].token
    assert response.context["preview"].counts["units"] == 3
    response = client.post("/organize/new/confirm/", {"token": token, "action": "confirm"})
    campaign = Campaign.objects.get(slug="example-audio")
    assert response.status_code == 302 and response["Location"] == f"/organize/campaigns/{campaign.pk}/"
    assert (campaign.units.count(), campaign.candidates.count()) == (3, 3)
    assert all(c.media_file.name.endswith(".wav") for c in Candidate.objects.filter(campaign=campaign))
    assert CampaignRole.objects.filter(campaign=campaign, user=creator, role=Role.ORGANIZER).exists()
    again = client.post("/organize/new/confirm/", {"token": token, "action": "confirm"})
    assert again.status_code == 400 and Campaign.objects.count() == 1  # a preview imports once


@pytest.mark.parametrize(
    "case",
    ["missing field", "duplicate id", "bad scheme parameter", "unknown media file", "wrong type", "unknown system"],
)
def test_a_bad_file_gets_the_same_row_field_value_message_as_the_cli(client, creator, example, case, tmp_path):
    broken = break_it(example, case)
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps(broken))
    for name in (EXAMPLES / "media").iterdir():
        (tmp_path / "media").mkdir(exist_ok=True)
        (tmp_path / "media" / name.name).write_bytes(name.read_bytes())
    with pytest.raises(CommandError) as cli:
        call_command("import_campaign", str(path))
    cli_message = str(cli.value).split(": ", 1)[1].removesuffix(". Nothing was imported.")
    response = client.post("/organize/new/", {"source": "file", "file": json_file(broken), "media": media_zip()})
    assert response.status_code == 400
    assert response.context["errors"][0] == cli_message.replace(str(tmp_path.resolve()), "the media zip")
    assert "Nothing was stored." in response.content.decode()
    assert counts() == (0,) * 7


def test_a_csv_row_error_names_its_line_next_to_the_form(client, creator):
    bad = (EXAMPLES / "items.csv").read_text() + "q1,,audio,media/query-1.wav,c-d,audio,media/cand-d.wav,system-a,x\n"
    response = client.post(
        "/organize/new/",
        {
            "source": "form",
            "name": "CSV",
            "slug": "csv",
            "scheme": "broad_fine",
            "initial_overlap": 2,
            "max_overlap": 3,
            "policy": "fixed",
            "items": SimpleUploadedFile("items.csv", bad.encode()),
            "media": media_zip(),
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "line 6, field &#x27;rank&#x27;, value &#x27;x&#x27;" in html
    assert html.index('id="form-errors"') > html.index('id="by-form"')  # shown inside the form's panel
    assert Campaign.objects.count() == 0


def test_a_zip_that_escapes_its_folder_is_refused(client, creator, example):
    response = client.post(
        "/organize/new/",
        {"source": "file", "file": json_file(example), "media": media_zip(extra={"../evil.txt": b"x"})},
    )
    assert response.status_code == 400
    assert "media zip, field &#x27;name&#x27;, value &#x27;../evil.txt&#x27;" in response.content.decode()


def test_the_form_alone_makes_a_draft_without_items(client, creator):
    response = client.post(
        "/organize/new/",
        {
            "source": "form",
            "name": "Likert study",
            "scheme": "numeric",
            "scheme_params": '{"min": 1, "max": 5, "step": 1}',
            "guidelines": "Rate it.",
            "initial_overlap": 2,
            "max_overlap": 4,
            "policy": "consensus",
        },
    )
    assert response.status_code == 200, response.context.get("errors")
    client.post("/organize/new/confirm/", {"token": response.context["preview"].token, "action": "confirm"})
    campaign = Campaign.objects.get(slug="likert-study")
    assert (campaign.status, campaign.scheme_params["max"], campaign.policy, campaign.guidelines_version) == (
        "draft",
        5,
        "consensus",
        1,
    )
    assert Unit.objects.filter(campaign=campaign).count() == 0


def test_people_without_the_permission_cannot_create(client):
    client.force_login(make_user())
    assert client.get("/organize/new/").status_code == 403
    assert client.post("/organize/new/confirm/", {"token": "abc"}).status_code == 400


def test_the_preview_says_what_confirming_will_do_with_the_files_status_and_graders(client, creator, example):
    assert example["campaign"]["status"] == "open" and example["graders"]
    response = client.post("/organize/new/", {"source": "file", "file": json_file(example), "media": media_zip()})
    text = " ".join(response.content.decode().split())
    assert "It starts <strong>open</strong>: its graders can start grading at once." in text
    assert f"Every unit is assigned to 2 of the {len(example['graders'])} graders the file names." in text
    client.post("/organize/new/confirm/", {"token": response.context["preview"].token, "action": "confirm"})
    campaign = Campaign.objects.get(slug="example-audio")
    assert campaign.status == "open" and campaign.assignments.exists()  # as the preview said

    drafted = {**example, "campaign": {**example["campaign"], "status": "draft", "slug": "drafted"}, "assign": False}
    response = client.post("/organize/new/", {"source": "file", "file": json_file(drafted), "media": media_zip()})
    text = " ".join(response.content.decode().split())
    assert "It starts as a <strong>draft</strong>: graders see it only when you open it." in text
    assert "No work is assigned yet: assign it from the Members page." in text
