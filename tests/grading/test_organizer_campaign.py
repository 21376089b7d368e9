"""Settings, lifecycle and locks (pages and admin alike), members and one-time links, permissions."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from grading.errors import CampaignLocked, InvalidValue
from grading.models import Assignment, Campaign, CampaignRole, Judgment
from grading.models.choices import AssignmentStatus, CampaignStatus, Role
from grading.services.lifecycle import campaign_admin_update, guidelines_changes
from tests.factories import make_campaign, make_user, record, settings_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def organizer(client):
    user = make_user("org")
    client.force_login(user)
    return user


@pytest.fixture
def campaign(organizer) -> Campaign:
    return make_campaign(n_queries=2, n_candidates=3, graders=2, organizer=organizer, status=CampaignStatus.DRAFT)


def grade_once(campaign: Campaign) -> Assignment:
    Campaign.objects.filter(pk=campaign.pk).update(status=CampaignStatus.OPEN)
    a = Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").first()
    record(a.grader, campaign, "broad_set", {"value": "VS"}, unit=a.unit)
    return a


def test_lifecycle_goes_draft_open_closed_and_reopens_with_a_confirmation(client, campaign):
    url = f"/organize/campaigns/{campaign.pk}/status/"
    page = client.get(url + "open/")
    assert page.status_code == 200 and "Open the campaign" in page.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "draft"  # asking changes nothing
    for to in ("open", "closed", "open"):
        assert client.post(url + f"{to}/").status_code == 302
        assert Campaign.objects.get(pk=campaign.pk).status == to
    refused = client.post(url + "draft/")
    assert refused.status_code == 400 and "cannot become draft" in refused.content.decode()


def test_scheme_parameters_lock_once_grading_has_started(client, campaign):
    url = f"/organize/campaigns/{campaign.pk}/"
    bands = '{"fine_bands": {"NS": [0, 5], "SS": [3, 8], "VS": [6, 10]}}'
    assert client.post(url, settings_form_data(campaign, scheme_params=bands)).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).scheme_params["fine_bands"]["NS"] == [0, 5]
    client.post(url + "status/open/")
    grade_once(campaign)
    other = '{"fine_bands": {"NS": [0, 3], "SS": [3, 8], "VS": [6, 10]}}'
    refused = client.post(url, settings_form_data(campaign, scheme_params=other))
    assert refused.status_code == 400
    assert "scheme_params cannot change: grading has started" in refused.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).scheme_params["fine_bands"]["NS"] == [0, 5]
    assert 'id="lock-notice"' in client.get(url).content.decode()


def test_the_admin_is_no_back_door(client, campaign):
    admin = make_user("boss", is_staff=True, is_superuser=True)
    client.force_login(admin)
    campaign.status = CampaignStatus.OPEN
    campaign.save()
    grade_once(campaign)
    form = client.get(f"/admin/grading/campaign/{campaign.pk}/change/").content.decode()
    assert 'name="scheme_params"' not in form and 'name="scheme"' not in form  # read-only now
    unit = campaign.units.first()
    assert client.post(f"/admin/grading/unit/{unit.pk}/delete/", {"post": "yes"}).status_code == 403
    assert campaign.units.filter(pk=unit.pk).exists()
    response = client.post(
        f"/admin/grading/campaign/{campaign.pk}/change/",
        {
            "name": campaign.name,
            "slug": campaign.slug,
            "description": "",
            "status": "draft",
            "initial_overlap": 2,
            "max_overlap": 5,
            "budget": "",
            "policy": "fixed",
            "policy_params": "{}",
            "created_by": "",
            "new_guidelines": "",
            "guidelines-TOTAL_FORMS": 0,
            "guidelines-INITIAL_FORMS": 1,
            "roles-TOTAL_FORMS": 0,
            "roles-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 200 and "cannot become draft" in response.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "open"


def admin_post(campaign: Campaign, **changes) -> dict:
    data = {
        "name": campaign.name,
        "slug": campaign.slug,
        "description": "",
        "scheme": campaign.scheme,
        "scheme_params": "{}",
        "status": campaign.status,
        "initial_overlap": campaign.initial_overlap,
        "max_overlap": campaign.max_overlap,
        "budget": "",
        "policy": campaign.policy,
        "policy_params": "{}",
        "created_by": "",
        "new_guidelines": "",
        "guidelines-TOTAL_FORMS": 0,
        "guidelines-INITIAL_FORMS": 1,
        "roles-TOTAL_FORMS": 0,
        "roles-INITIAL_FORMS": 0,
    }
    return {**data, **changes}


def test_the_admin_changes_a_draft_campaigns_slug_and_scheme_through_the_lifecycle_service(client, campaign):
    client.force_login(make_user("boss", is_staff=True, is_superuser=True))
    url = f"/admin/grading/campaign/{campaign.pk}/change/"
    params = '{"min": 1, "max": 7, "step": 1}'
    response = client.post(url, admin_post(campaign, slug="renamed", scheme="numeric", scheme_params=params))
    assert response.status_code == 302
    stored = Campaign.objects.get(pk=campaign.pk)
    assert (stored.slug, stored.scheme, stored.scheme_params["max"]) == ("renamed", "numeric", 7)


def test_the_lifecycle_service_refuses_a_taken_slug_and_a_scheme_once_graded(campaign):
    other = make_campaign(graders=1)
    with pytest.raises(InvalidValue, match="already taken"):
        campaign_admin_update(campaign=campaign, actor=None, slug=other.slug)
    grade_once(campaign)
    with pytest.raises(CampaignLocked, match="scheme cannot change"):
        campaign_admin_update(
            campaign=campaign, actor=None, scheme="numeric", scheme_params={"min": 1, "max": 7, "step": 1}
        )
    stored = Campaign.objects.get(pk=campaign.pk)
    assert (stored.slug, stored.scheme) == (campaign.slug, "broad_fine")


def test_edited_guidelines_make_a_version_and_graders_see_what_changed(client, campaign, organizer):
    grader = Assignment.objects.filter(campaign=campaign).first().grader
    client.post(f"/organize/campaigns/{campaign.pk}/status/open/")
    client.force_login(grader)
    client.post(f"/campaigns/{campaign.pk}/guidelines/")  # has read version 1
    client.force_login(organizer)
    client.post(
        f"/organize/campaigns/{campaign.pk}/",
        settings_form_data(campaign, guidelines="Judge similarity.\nIgnore loudness."),
    )
    campaign.refresh_from_db()
    assert campaign.guidelines_version == 2
    changes = guidelines_changes(campaign=campaign, since_version=1)
    assert changes["added"] == ["Judge similarity.", "Ignore loudness."]
    client.force_login(grader)
    assert "The guidelines changed since you last read them" in client.get("/").content.decode()
    response = client.get(f"/campaigns/{campaign.pk}/continue/")
    assert response["Location"] == f"/campaigns/{campaign.pk}/guidelines/"
    page = client.get(response["Location"]).content.decode()
    assert "What changed since you last read them (version 1 → 2)" in page and "Ignore loudness." in page
    assert client.get(f"/campaigns/{campaign.pk}/continue/")["Location"] == response["Location"]  # not read yet
    assert client.post(response["Location"])["Location"] == f"/campaigns/{campaign.pk}/continue/"
    assert client.get(f"/campaigns/{campaign.pk}/continue/")["Location"].startswith(f"/campaigns/{campaign.pk}/grade/")


def test_members_are_added_by_name_or_email_and_new_accounts_get_a_one_time_link(
    client, campaign, settings, django_capture_on_commit_callbacks
):
    settings.EMAIL_ENABLED = True
    existing = make_user("known", email="known@example.org")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/organize/campaigns/{campaign.pk}/members/",
            {"people": "known@example.org, newbie@example.org\nfresh-name", "role": "grader"},
        )
    assert response.status_code == 200
    added = {m.user.username: m for m in response.context["added"]}
    assert set(added) == {"known", "newbie", "fresh-name"}
    assert not added["known"].created and added["newbie"].created and not added["known"].link
    assert CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER, user=existing).exists()
    assert [m.to for m in mail.outbox] == [["newbie@example.org"]]  # fresh-name has no address: copy the link
    link = added["newbie"].link
    assert link in mail.outbox[0].body and link in response.content.decode()
    path = re.sub(r"^https?://[^/]+", "", link)
    form = client.get(path, follow=True)
    assert "Set your password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": "a-long-pass-phrase-9", "new_password2": "a-long-pass-phrase-9"}
    )
    assert done.status_code == 302
    assert client.get(path, follow=True).content.decode().count("already been used or has expired") == 1


def test_a_bad_entry_adds_nobody_and_says_which(client, campaign):
    before = CampaignRole.objects.count()
    response = client.post(
        f"/organize/campaigns/{campaign.pk}/members/", {"people": "ok-name, bad name!", "role": "grader"}
    )
    assert response.status_code == 400
    assert "&#x27;name!&#x27; is not a valid user name" in response.content.decode()
    assert CampaignRole.objects.count() == before


def test_removing_a_grader_keeps_judgments_and_returns_open_work(client, campaign):
    a = grade_once(campaign)
    grader = a.grader
    open_before = Assignment.objects.filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN).count()
    assert open_before >= 1
    url = f"/organize/campaigns/{campaign.pk}/members/{grader.pk}/grader/remove/"
    assert "Their judgments stay" in client.get(url).content.decode()
    assert client.post(url).status_code == 302
    assert not CampaignRole.objects.filter(campaign=campaign, user=grader, role=Role.GRADER).exists()
    assert Judgment.objects.filter(campaign=campaign, grader=grader).count() == 1
    assert not Assignment.objects.filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN).exists()
    newcomer = make_user()
    client.post(f"/organize/campaigns/{campaign.pk}/members/", {"people": newcomer.username, "role": "grader"})
    assert CampaignRole.objects.get(campaign=campaign, user=newcomer).pseudonym == "G03"  # never a reused pseudonym
    client.post(f"/organize/campaigns/{campaign.pk}/assign/")
    assert Assignment.objects.filter(campaign=campaign, grader=newcomer).count() == open_before


@pytest.mark.parametrize(
    "method,path",
    [
        ("get", ""),
        ("post", ""),
        ("get", "status/open/"),
        ("post", "status/open/"),
        ("get", "members/"),
        ("post", "members/"),
        ("post", "assign/"),
        ("get", "progress/"),
        ("get", "progress.json"),
    ],
)
def test_an_organizer_of_another_campaign_gets_404_and_a_grader_403(client, campaign, method, path):
    stranger = make_user()
    make_campaign(n_queries=1, n_candidates=1, graders=1, organizer=stranger)
    client.force_login(stranger)
    url = f"/organize/campaigns/{campaign.pk}/{path}"
    response = getattr(client, method)(url, {"people": "x", "role": "grader"} if method == "post" else None)
    assert response.status_code == 404
    assert "Not found" in response.content.decode() and "Back to your campaigns" in response.content.decode()
    client.force_login(Assignment.objects.filter(campaign=campaign).first().grader)
    assert getattr(client, method)(url).status_code == 403
    assert Campaign.objects.get(pk=campaign.pk).status == "draft"
