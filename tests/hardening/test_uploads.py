"""System-ordering uploads: invalid Unicode in JSON rows and non-UTF-8 files are a 400 naming where."""

import io
import json

import pytest

from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user
from tests.grading.api_helpers import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def organizer_and_campaign():
    organizer = make_user()
    return organizer, make_campaign(scheme=Scheme.ORDERING, organizer=organizer, n_queries=1, n_candidates=2)


@pytest.mark.parametrize("field", ["query", "system", "item"])
def test_a_lone_surrogate_in_an_uploaded_row_is_a_400_naming_it(organizer_and_campaign, field):
    organizer, campaign = organizer_and_campaign
    row = {"query": "q0", "system": "s", "rank": 1, "item": "c0-0", field: "BAD"}
    text = json.dumps({"rows": [row]}).replace("BAD", "\\ud800")
    response = client_for(organizer).post(
        f"/api/campaigns/{campaign.pk}/system-orderings/", text, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["field"] == f"rows[0].{field}"
    assert not campaign.systems.filter(name__startswith="s").exclude(name="system-a").exists()


def test_an_uploaded_file_that_is_not_utf8_is_a_400(organizer_and_campaign):
    organizer, campaign = organizer_and_campaign
    upload = io.BytesIO(b"query,system,rank,item\nq0,s\xff,1,c0-0\n")
    response = client_for(organizer).post(
        f"/api/campaigns/{campaign.pk}/system-orderings/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400 and response.json()["field"] == "(encoding)"
