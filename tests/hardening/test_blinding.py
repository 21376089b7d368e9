"""Candidate media reach graders under the opaque public id only: URL, file name,
Content-Disposition, page text and alt text never carry the external ids."""

import json
import re
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from grading.models import Campaign, Candidate
from tests.factories import make_user

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = pytest.mark.django_db
TELLING = ["q1-c-a-system-a", "q1-c-b-system-b", "q1-c-c-system-a"]


@pytest.fixture
def campaign(tmp_path) -> Campaign:
    """The example, with media files named the way a careless organizer names them."""
    folder = tmp_path / "examples"
    shutil.copytree(EXAMPLES, folder)
    definition = json.loads((folder / "campaign.json").read_text())
    for candidate, telling in zip(definition["candidates"], TELLING, strict=True):
        (folder / candidate["media"]).rename(folder / "media" / f"{telling}.wav")
        candidate["media"] = f"media/{telling}.wav"
    (folder / "campaign.json").write_text(json.dumps(definition))
    call_command("import_campaign", str(folder / "campaign.json"))
    return Campaign.objects.get(slug="example-audio")


def grading_page(client, campaign) -> str:
    client.force_login(get_user_model().objects.get(username="grader1"))
    home = client.get("/").content.decode()
    link = re.search(rf'href="(/campaigns/{campaign.pk}/[^"]+)"', home).group(1)
    page = client.get(link, follow=True)
    assert page.status_code == 200
    return page.content.decode()


def test_the_grading_page_names_candidate_media_by_public_id_only(client, campaign):
    html = grading_page(client, campaign)
    sources = re.findall(r'<audio[^>]+src="([^"]+)"', html)
    publics = set(Candidate.objects.filter(campaign=campaign).values_list("public_id", flat=True))
    candidate_sources = [s for s in sources if s.startswith("/media/c/")]
    assert len(candidate_sources) >= 1
    assert {s.removeprefix("/media/c/").removesuffix(".wav") for s in candidate_sources} <= publics
    for telling in ["q1-c-", "system-a", "system-b", "cand-", *TELLING]:
        assert telling not in html, telling


def test_the_stored_file_names_carry_no_external_id(campaign):
    names = [c.media_file.name for c in campaign.candidates.all()]
    assert len(names) == 3
    assert all(Path(n).stem == c.public_id for n, c in zip(names, campaign.candidates.all(), strict=True))


def test_the_media_answer_names_the_file_by_public_id(client, campaign):
    candidate = campaign.candidates.first()
    client.force_login(get_user_model().objects.get(username="grader1"))
    response = client.get(candidate.media_src)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'inline; filename="{candidate.public_id}.wav"'
    assert b"".join(response.streaming_content)[:4] == b"RIFF"


def test_the_api_gives_the_same_blinded_urls(client, campaign):
    from tests.grading.api_helpers import client_for

    grader = get_user_model().objects.get(username="grader1")
    body = client_for(grader).get(f"/api/assignments/?campaign={campaign.pk}").json()
    urls = [r["unit"]["candidate"]["media_url"] for r in body["results"]]
    assert len(urls) >= 1 and all(re.fullmatch(r"/media/c/[a-z0-9]{12}\.wav", u) for u in urls)
    assert not any(t in json.dumps(body) for t in TELLING)


def test_strangers_and_wrong_names_get_404(client, campaign):
    candidate = campaign.candidates.first()
    client.force_login(make_user())
    assert client.get(candidate.media_src).status_code == 404
    client.force_login(get_user_model().objects.get(username="grader1"))
    assert client.get(f"/media/c/{candidate.public_id}.mp3").status_code == 404
    assert client.get("/media/c/zzzzzzzzzzzz.wav").status_code == 404
    client.logout()
    assert client.get(candidate.media_src).status_code == 302  # to the login page
