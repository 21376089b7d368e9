"""Every organizer and admin action leaves one audit entry, with the right values before and after,
written in the action's own transaction; a refused action leaves none."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import AuditEntry, Campaign, CampaignRole
from grading.models.choices import CampaignStatus, Role, Scheme
from tests.factories import make_campaign, make_user, record, settings_form_data
from tests.grading.api_helpers import client_for, graders_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def organizer():
    return make_user("olga")


@pytest.fixture
def campaign(organizer) -> Campaign:
    return make_campaign(n_queries=1, n_candidates=3, graders=2, organizer=organizer, status=CampaignStatus.DRAFT)


@pytest.fixture
def page(client, organizer):
    client.force_login(organizer)
    return client


def only(action: str) -> AuditEntry:
    """The one entry of this action; fails when there are none or several."""
    entries = list(AuditEntry.objects.filter(action=action))
    assert len(entries) == 1, [(e.action, e.target) for e in AuditEntry.objects.all()]
    return entries[0]


def judged(campaign: Campaign) -> None:
    Campaign.objects.filter(pk=campaign.pk).update(status=CampaignStatus.OPEN)
    grader = graders_of(campaign)[0]
    unit = campaign.units.order_by("pk").first()
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=unit)


# --- the campaign: status, settings, guidelines ------------------------------------------------------


def test_a_status_change_is_recorded_and_a_refused_one_is_not(page, campaign, organizer):
    url = f"/organize/campaigns/{campaign.pk}/status/"
    assert page.post(url + "open/").status_code == 302
    entry = only("campaign.status")
    assert (entry.actor, entry.campaign, entry.before, entry.after) == (
        organizer,
        campaign,
        {"status": "draft"},
        {"status": "open"},
    )
    assert page.post(url + "draft/").status_code == 400
    assert AuditEntry.objects.filter(action="campaign.status").count() == 1


def test_changed_settings_are_recorded_with_only_what_changed(page, campaign):
    url = f"/organize/campaigns/{campaign.pk}/"
    assert page.post(url, settings_form_data(campaign, policy="consensus", max_overlap=4)).status_code == 302
    entry = only("campaign.settings")
    assert entry.before == {"max_overlap": 5, "policy": "fixed"} and entry.after == {
        "max_overlap": 4,
        "policy": "consensus",
    }
    assert (
        page.post(url, settings_form_data(campaign, policy="consensus", max_overlap=4)).status_code == 302
    )  # no change
    assert page.post(url, settings_form_data(campaign, max_overlap=1)).status_code == 400  # below the initial overlap
    assert AuditEntry.objects.filter(action="campaign.settings").count() == 1


def test_an_edit_of_the_guidelines_is_recorded_as_their_versions(page, campaign):
    url = f"/organize/campaigns/{campaign.pk}/"
    assert page.post(url, settings_form_data(campaign, guidelines="Listen twice.")).status_code == 302
    entry = only("campaign.guidelines")
    assert (entry.before, entry.after) == ({"version": 1}, {"version": 2})
    page.post(url, settings_form_data(campaign, guidelines="Listen twice."))  # the same text: no new version
    assert AuditEntry.objects.filter(action="campaign.guidelines").count() == 1
    assert not AuditEntry.objects.filter(action="campaign.settings").exists()


def test_the_api_records_its_changes_and_not_its_refusals(campaign, organizer):
    api = client_for(organizer)
    url = f"/api/campaigns/{campaign.pk}/"
    assert api.patch(url, {"status": "open", "budget": 30}, format="json").status_code == 200
    assert only("campaign.status").after == {"status": "open"}
    assert (only("campaign.settings").before, only("campaign.settings").after) == ({"budget": None}, {"budget": 30})
    assert api.patch(url, {"policy_params": {"batch_size": 0}}, format="json").status_code == 400
    assert AuditEntry.objects.count() == 2


# --- members, invitations, assignments ----------------------------------------------------------------


def test_adding_members_records_each_new_role_and_each_invitation(page, campaign, organizer):
    existing = make_user("gita")
    url = f"/organize/campaigns/{campaign.pk}/members/"
    response = page.post(url, {"people": "gita\nnew.person@example.org", "role": "grader"})
    assert response.status_code == 200
    added = AuditEntry.objects.filter(action="member.added").order_by("id")
    assert [(e.target, e.after["role"], e.actor) for e in added] == [
        ("gita", "grader", organizer),
        ("new.person", "grader", organizer),
    ]
    invited = only("invitation.created")
    assert invited.target == "new.person" and invited.after == {"account": "new", "emailed": False}
    assert "http" not in json.dumps(invited.after)  # the one-time link is a password: never in the trail
    page.post(url, {"people": "gita", "role": "grader"})  # already a grader: nothing changes
    page.post(url, {"people": "gita, not valid!", "role": "grader"})  # refused as a whole
    assert AuditEntry.objects.filter(action="member.added").count() == 2
    assert CampaignRole.objects.filter(user=existing, campaign=campaign).count() == 1


def test_removing_a_member_is_recorded_and_removing_the_last_organizer_is_refused(page, campaign, organizer):
    grader = graders_of(campaign)[0]
    base = f"/organize/campaigns/{campaign.pk}/members/"
    assert page.post(f"{base}{grader.pk}/grader/remove/").status_code == 302
    entry = only("member.removed")
    assert entry.target == grader.username and entry.before["role"] == "grader"
    assert entry.after == {"open_assignments_returned": 3}
    assert page.post(f"{base}{organizer.pk}/organizer/remove/").status_code == 400
    assert AuditEntry.objects.filter(action="member.removed").count() == 1


def test_assigning_initial_work_is_recorded_once_work_was_made(client, organizer):
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=2, organizer=organizer, assign=False)
    client.force_login(organizer)
    url = f"/organize/campaigns/{campaign.pk}/assign/"
    assert client.post(url).status_code == 302
    entry = only("assignments.created")
    assert entry.target == "initial overlap" and entry.after == {"created": 6, "initial_overlap": 2}
    client.post(url)  # every unit has its graders: nothing is made, nothing recorded
    assert AuditEntry.objects.filter(action="assignments.created").count() == 1


def test_the_api_records_a_member_and_assigned_units(campaign, organizer):
    newcomer = make_user("nina")
    api = client_for(organizer)
    base = f"/api/campaigns/{campaign.pk}/"
    assert api.post(base + "members/", {"username": "nina", "role": "grader"}, format="json").status_code == 201
    assert only("member.added").after == {"user": "nina", "role": "grader", "pseudonym": "G03"}
    assert api.post(base + "members/", {"username": "nobody", "role": "grader"}, format="json").status_code == 404
    unit = campaign.units.order_by("pk").first()
    body = {"grader": "G03", "units": [unit.pk]}
    assert api.post(base + "assignments/", body, format="json").status_code == 201
    assert only("assignments.created").after == {"created": 1, "grader": "G03"}
    assert api.post(base + "assignments/", {"grader": "G03", "units": [424242]}, format="json").status_code == 404
    assert AuditEntry.objects.count() == 2 and newcomer.assignments.count() == 1


# --- gold answers and adjudications -----------------------------------------------------------------


def test_gold_answers_set_changed_and_removed_are_recorded(page, campaign):
    unit = campaign.units.order_by("pk").first()
    url = f"/organize/campaigns/{campaign.pk}/gold/"
    page.post(url, {"unit": unit.external_id, "value": "VS"})
    page.post(url, {"unit": unit.external_id, "value": "SS"})
    page.post(url, {"unit": unit.external_id, "value": "XX"})  # refused
    page.post(url, {"unit": unit.external_id, "action": "remove"})
    entries = [(e.action, e.target, e.before, e.after) for e in AuditEntry.objects.order_by("id")]
    assert entries == [
        ("gold.set", unit.external_id, None, {"value": "VS"}),
        ("gold.set", unit.external_id, {"value": "VS"}, {"value": "SS"}),
        ("gold.removed", unit.external_id, {"value": "SS"}, None),
    ]


def test_an_adjudication_is_recorded_with_the_verdict_it_replaces(page, campaign):
    judged(campaign)
    unit = campaign.units.order_by("pk").first()
    url = f"/campaigns/{campaign.pk}/adjudicate/"
    page.post(url, {"unit": unit.pk, "value": "VS", "note": "first"})
    page.post(url, {"unit": unit.pk, "value": "XX", "note": ""})  # refused
    page.post(url, {"unit": unit.pk, "value": "SS", "note": "second"})
    entries = [(e.action, e.target, e.before, e.after) for e in AuditEntry.objects.order_by("id")]
    assert entries == [
        ("unit.adjudicated", unit.external_id, None, {"value": "VS", "note": "first"}),
        ("unit.adjudicated", unit.external_id, {"value": "VS", "note": "first"}, {"value": "SS", "note": "second"}),
    ]


# --- exports ---------------------------------------------------------------------------------------


def analysed(campaign: Campaign) -> AnalysisRun:
    judged(campaign)
    run = AnalysisRun.objects.create(
        campaign=campaign, number=1, parameters=runs.parameters_clean({"n_boot": 20}), seed=1
    )
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    return run


def test_a_download_records_who_exported_what_and_a_refused_one_does_not(page, campaign, organizer):
    base = f"/reports/campaigns/{campaign.pk}/download/"
    assert page.get(base + "ground-truth.csv").status_code == 302  # no analysis yet: nothing exported
    run = analysed(campaign)
    response = page.get(base + "ground-truth.csv")
    assert response.status_code == 200 and b"".join(response.streaming_content)
    page.get(base + "events.parquet")
    page.get(base + "nothing.csv")  # 404
    page.force_login(graders_of(campaign)[0])
    assert page.get(base + "judgments.csv").status_code == 403
    entries = [
        (e.actor, e.target, e.after) for e in AuditEntry.objects.filter(action="export.downloaded").order_by("id")
    ]
    assert entries == [
        (organizer, "ground-truth.csv", {"what": "ground-truth", "format": "csv", "analysis": run.number}),
        (organizer, "events.parquet", {"what": "events", "format": "parquet"}),
    ]


def test_the_export_api_records_an_admins_download(campaign):
    admin = make_user("root", is_staff=True)
    analysed(campaign)
    api = client_for(admin)
    assert api.get(f"/api/campaigns/{campaign.pk}/events/?format=csv").status_code == 200
    assert api.get(f"/api/campaigns/{campaign.pk}/ground-truth/?format=json").status_code == 200
    assert api.get(f"/api/campaigns/{campaign.pk}/ground-truth/?format=xml").status_code == 400
    exported = AuditEntry.objects.filter(action="export.downloaded", actor=admin).order_by("id")
    targets = list(exported.values_list("target", flat=True))
    assert targets == ["events.csv", "ground-truth.json"]


# --- creating and deleting campaigns, linking them ---------------------------------------------------


def test_a_campaign_created_through_the_api_is_recorded_and_a_refused_one_is_not(campaign):
    creator = make_user("cleo", is_staff=True)
    api = client_for(creator)
    body = {"name": "New", "slug": "new-one", "scheme": "broad_fine"}
    assert api.post("/api/campaigns/", body, format="json").status_code == 201
    created = only("campaign.created")
    assert (created.actor, created.campaign.slug, created.after["scheme"]) == (creator, "new-one", "broad_fine")
    assert only("member.added").after["role"] == "organizer"
    assert api.post("/api/campaigns/", {**body, "name": "Again"}, format="json").status_code == 400  # slug taken
    assert AuditEntry.objects.filter(action="campaign.created").count() == 1


def test_a_deleted_campaign_keeps_its_entry_and_one_with_events_is_not_deleted(campaign, organizer):
    api = client_for(organizer)
    name = campaign.name
    assert api.delete(f"/api/campaigns/{campaign.pk}/").status_code == 204
    entry = only("campaign.deleted")
    assert (entry.campaign, entry.campaign_name, entry.before["slug"]) == (None, name, campaign.slug)
    graded = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    judged(graded)
    assert api.delete(f"/api/campaigns/{graded.pk}/").status_code == 409
    assert AuditEntry.objects.filter(action="campaign.deleted").count() == 1


def test_linking_the_campaigns_that_measure_one_is_recorded(page, organizer):
    ratings = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    sibling = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    url = f"/reports/campaigns/{ratings.pk}/instrument-links/"
    page.post(url, {"sibling_campaign": sibling.pk, "pairwise_campaign": ""})
    page.post(url, {"sibling_campaign": ratings.pk, "pairwise_campaign": ""})  # its own sibling: refused
    entry = only("campaign.instrument_links")
    assert entry.before == {"sibling_campaign": None, "pairwise_campaign": None}
    assert entry.after == {"sibling_campaign": sibling.slug, "pairwise_campaign": None}


# --- the Django admin ---------------------------------------------------------------------------------


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


@pytest.fixture
def admin(client):
    user = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(user)
    return user


def test_the_admins_changes_to_a_campaign_are_recorded_as_theirs(client, admin, campaign):
    url = f"/admin/grading/campaign/{campaign.pk}/change/"
    response = client.post(url, admin_post(campaign, slug="renamed", status="open", max_overlap=3))
    assert response.status_code == 302
    assert [e.action for e in AuditEntry.objects.order_by("id")] == [
        "campaign.settings",
        "campaign.status",
        "campaign.settings",
    ]
    slug, status, overlap = AuditEntry.objects.order_by("id")
    assert (slug.actor, slug.before, slug.after) == (admin, {"slug": campaign.slug}, {"slug": "renamed"})
    assert (status.before, status.after) == ({"status": "draft"}, {"status": "open"})
    assert (overlap.before, overlap.after) == ({"max_overlap": 5}, {"max_overlap": 3})
    refused = client.post(url, admin_post(Campaign.objects.get(pk=campaign.pk), status="draft"))
    assert refused.status_code == 200 and AuditEntry.objects.count() == 3


def test_the_admins_new_campaign_roles_and_deletion_are_recorded(client, admin, campaign):
    data = admin_post(
        campaign, name="Made here", slug="made-here", scheme_params="{}", **{"guidelines-INITIAL_FORMS": 0}
    )
    assert client.post("/admin/grading/campaign/add/", data).status_code == 302
    made = Campaign.objects.get(slug="made-here")
    assert only("campaign.created").campaign == made
    someone = make_user("sam")
    roles = {
        "roles-TOTAL_FORMS": 1,
        "roles-INITIAL_FORMS": 0,
        "roles-0-user": someone.pk,
        "roles-0-role": Role.GRADER,
        "roles-0-campaign": campaign.pk,
    }
    url = f"/admin/grading/campaign/{campaign.pk}/change/"
    assert client.post(url, {**admin_post(campaign), **roles}).status_code == 302
    assert only("member.added").target == "sam"
    assert client.post(f"/admin/grading/campaign/{made.pk}/delete/", {"post": "yes"}).status_code == 302
    deleted = only("campaign.deleted")
    assert (deleted.actor, deleted.campaign_name) == (admin, "Made here")


def test_the_upload_of_a_campaign_file_records_the_campaign_created(client):
    creator = make_user("cleo", is_staff=True)
    client.force_login(creator)
    definition = {
        "format": "evalutron.campaign/1",
        "campaign": {
            "name": "From a file",
            "slug": "from-a-file",
            "scheme": "numeric",
            "scheme_params": {"min": 1, "max": 5, "step": 1},
        },
        "candidates": [{"id": "c1", "text": "one"}, {"id": "c2", "text": "two"}],
    }
    upload = SimpleUploadedFile("campaign.json", json.dumps(definition).encode(), content_type="application/json")
    preview = client.post("/organize/new/", {"source": "file", "file": upload})
    assert not AuditEntry.objects.exists()  # a preview stores nothing
    client.post("/organize/new/confirm/", {"token": preview.context["preview"].token, "action": "confirm"})
    created = only("campaign.created")
    assert (created.actor, created.campaign.slug, created.after["scheme"]) == (creator, "from-a-file", Scheme.NUMERIC)


def test_uploads_of_system_scores_and_orderings_are_recorded_and_a_refused_one_is_not(page, organizer):
    rating = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    scores = "unit,system,score\n" + "".join(f"{u.external_id},sys-x,{i}\n" for i, u in enumerate(rating.units.all()))
    url = f"/reports/campaigns/{rating.pk}/system-scores/"
    assert page.post(url, {"file": SimpleUploadedFile("s.csv", scores.encode())}).status_code == 302
    assert page.post(url, {"file": SimpleUploadedFile("s.csv", b"unit,system,score\nnope,x,1\n")}).status_code == 400
    entry = only("systems.scores_uploaded")
    assert (entry.actor, entry.target, entry.after) == (
        organizer,
        "sys-x",
        {"systems": ["sys-x"], "units": 2, "scores": 2, "replaced": 0},
    )
    ordering = make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    rows = [{"query": "q0", "system": "sys-o", "rank": r + 1, "item": f"c0-{r}"} for r in range(2)]
    api = client_for(organizer)
    assert api.post(f"/api/campaigns/{ordering.pk}/system-orderings/", {"rows": rows}, format="json").status_code == 201
    assert only("systems.orderings_uploaded").after == {
        "systems": ["sys-o"],
        "queries": 1,
        "orderings": 1,
        "replaced": 0,
    }
