"""Keeping the honest ones: an organizer excludes a grader (with a reason) and includes them again,
over the API and from the members page. The grader's judgments stay in the event log but leave the
analysis (agreement, ground truth, the model) as if they were absent; the report and the
participants file say who was excluded and why; every change is audited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analysis.presentation.report_tables import _excluded_table
from analysis.services import runs
from analysis.services.participants import participants_report
from analysis.services.report import campaign_data_load, report_compute
from grading.activity import sentence
from grading.models import Assignment, AuditEntry, CampaignRole, GradingEvent, Judgment
from grading.models.choices import Role
from grading.services.exclusion import grader_exclude, grader_include, grader_role_find
from grading.services.join_links import Identity, join_link_create, participant_join
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db
BROADS = ["NS", "SS", "VS"]


def _judge(campaign, graders) -> None:
    """Every grader judges every unit; a grader's answers depend only on the unit's position and the
    grader's place in `graders`, so two campaigns built alike get the same judgments."""
    start = datetime.now(UTC) - timedelta(days=1)
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").order_by("pk"):
        g = graders.index(a.grader)
        pos = a.unit.query.position * 10 + a.unit.position
        level = (pos + (g == 2) * (pos % 2 + 1)) % 3  # the third grader disagrees on most units
        t = start + timedelta(minutes=pos * 5 + g)
        record(a.grader, campaign, "unit_viewed", unit=a.unit, client_ts=t, seq=1)
        record(a.grader, campaign, "broad_set", {"value": BROADS[level]}, unit=a.unit, client_ts=t, seq=2)
        record(a.grader, campaign, "fine_set", {"value": 1.0 + 3.5 * level + g * 0.5}, unit=a.unit, client_ts=t, seq=3)


def _built(n_graders: int, organizer=None):
    graders = [make_user() for _ in range(n_graders)]
    campaign = make_campaign(n_queries=2, n_candidates=4, graders=graders, organizer=organizer)
    _judge(campaign, graders)
    return campaign, graders


def _result(campaign):
    result, units = report_compute(campaign_id=campaign.pk, parameters=runs.parameters_clean({"n_boot": 50}), seed=7)
    return result, units


def _role(campaign, user):
    return CampaignRole.objects.get(campaign=campaign, user=user, role=Role.GRADER)


def test_excluding_a_grader_gives_the_analysis_of_a_campaign_without_their_judgments_and_including_restores_it():
    organizer = make_user("org")
    campaign, graders = _built(3, organizer)
    without, _ = _built(2)
    before, _ = _result(campaign)
    grader_exclude(campaign=campaign, role=_role(campaign, graders[2]), reason="straight-lined", actor=organizer)
    excluded, units = _result(campaign)
    expected, expected_units = _result(without)
    assert excluded["agreement"] == expected["agreement"]
    assert excluded["agreement"] != before["agreement"]
    assert list(units["n"]) == list(expected_units["n"]) == [2] * 8
    data = campaign_data_load(campaign_id=campaign.pk)
    assert graders[2].pk not in set(data.judgments.graders().tolist()) | set(data.behaviour.events.index)
    assert graders[2].pk not in set(data.behaviour.opportunities.frame()["grader"])
    # The log keeps everything.
    assert Judgment.objects.filter(campaign=campaign, grader=graders[2]).count() == 8
    assert GradingEvent.objects.filter(campaign=campaign, grader=graders[2]).exists()
    grader_include(campaign=campaign, role=_role(campaign, graders[2]), actor=organizer)
    again, _ = _result(campaign)
    assert again["agreement"] == before["agreement"] and again["excluded_graders"] == []


def test_the_report_lists_who_was_excluded_why_and_when():
    organizer = make_user("org")
    campaign, graders = _built(3, organizer)
    role = grader_exclude(
        campaign=campaign, role=_role(campaign, graders[1]), reason="failed attention checks", actor=organizer
    )
    result, _ = _result(campaign)
    assert result["excluded_graders"] == [
        {
            "pseudonym": role.pseudonym,
            "reason": "failed attention checks",
            "excluded_at": role.excluded_at.isoformat(),
            "by": organizer.username,
        }
    ]
    table = _excluded_table(result)["excluded_graders"]
    assert table.rows == [
        {
            "pseudonym": role.pseudonym,
            "by": f"organizer {organizer.username}",
            "reason": "failed attention checks",
            "excluded_at": str(role.excluded_at.date()),
        }
    ]


def test_exclusion_and_inclusion_are_audited_with_the_reason():
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    role = _role(campaign, graders[0])
    grader_exclude(campaign=campaign, role=role, reason="bot-like timing", actor=organizer)
    grader_include(campaign=campaign, role=role, actor=organizer)
    grader_include(campaign=campaign, role=role, actor=organizer)  # already included: nothing recorded
    entries = list(AuditEntry.objects.filter(campaign=campaign, action__startswith="grader.").order_by("pk"))
    assert [e.action for e in entries] == ["grader.excluded", "grader.included"]
    assert entries[0].after["reason"] == "bot-like timing" and entries[0].actor == organizer
    assert entries[1].before["reason"] == "bot-like timing" and entries[1].after["excluded"] is False


def test_an_organizer_excludes_and_includes_over_the_api_by_pseudonym_or_id(client):
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    role = _role(campaign, graders[0])
    client.force_login(organizer)
    url = f"/api/campaigns/{campaign.pk}/participants/{role.pseudonym}/exclusion/"
    response = client.post(url, {"reason": "random answers"}, content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["grader"], body["excluded"], body["reason"]) == (role.pseudonym, True, "random answers")
    assert client.get(f"/api/campaigns/{campaign.pk}/participants/{graders[0].pk}/exclusion/").json()["excluded"]
    response = client.delete(f"/api/campaigns/{campaign.pk}/participants/{graders[0].pk}/exclusion/")
    assert response.status_code == 200 and response.json()["excluded"] is False
    assert _role(campaign, graders[0]).excluded_at is None


def test_an_exclusion_without_a_reason_or_of_an_unknown_grader_is_refused_naming_the_field(client):
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    client.force_login(organizer)
    role = _role(campaign, graders[0])
    response = client.post(
        f"/api/campaigns/{campaign.pk}/participants/{role.pseudonym}/exclusion/",
        {"reason": "  "},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "reason"
    response = client.post(
        f"/api/campaigns/{campaign.pk}/participants/nobody/exclusion/", {"reason": "x"}, content_type="application/json"
    )
    assert response.status_code == 404 and response.json()["field"] == "grader"
    assert _role(campaign, graders[0]).excluded_at is None
    assert not AuditEntry.objects.filter(action="grader.excluded").exists()


def test_graders_cannot_exclude_and_strangers_do_not_learn_the_campaign_exists(client):
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    role = _role(campaign, graders[1])
    url = f"/api/campaigns/{campaign.pk}/participants/{role.pseudonym}/exclusion/"
    client.force_login(graders[0])
    assert client.post(url, {"reason": "x"}, content_type="application/json").status_code == 403
    assert client.delete(url).status_code == 403
    client.force_login(make_user("stranger"))
    assert client.post(url, {"reason": "x"}, content_type="application/json").status_code == 404
    assert _role(campaign, graders[1]).excluded_at is None


def test_the_participants_file_says_who_is_excluded_and_why():
    organizer = make_user("org")
    campaign = make_campaign(n_queries=2, n_candidates=3, graders=1, organizer=organizer)
    link = join_link_create(campaign=campaign, actor=organizer, completion_code="DONE", max_participants=5)
    kept = participant_join(link=link, identity=Identity(platform="prolific", external_id="A1")).participant
    dropped = participant_join(link=link, identity=Identity(platform="prolific", external_id="B2")).participant
    grader_exclude(
        campaign=campaign,
        role=grader_role_find(campaign=campaign, grader=str(dropped.user_id)),
        reason="speeder",
        actor=organizer,
    )
    rows = {r["external_id"]: r for r in participants_report(campaign=campaign)}
    assert (rows["B2"]["excluded"], rows["B2"]["excluded_reason"]) == (True, "speeder")
    assert rows["B2"]["excluded_at"] is not None
    assert (rows["A1"]["excluded"], rows["A1"]["excluded_reason"]) == (False, "")
    assert kept.user_id != dropped.user_id


def test_an_organizer_excludes_from_the_members_page_and_a_missing_reason_is_shown_beside_the_form(client):
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    role = _role(campaign, graders[0])
    client.force_login(organizer)
    url = f"/organize/campaigns/{campaign.pk}/members/{graders[0].pk}/exclusion/"
    page = client.get(f"/organize/campaigns/{campaign.pk}/members/").content.decode()
    assert f'id="reason-{graders[0].pk}"' in page and f'id="exclude-{graders[0].pk}"' in page
    response = client.post(url, {"action": "exclude", "reason": ""})
    assert response.status_code == 400
    assert f'id="reason-error-{graders[0].pk}"' in response.content.decode()
    assert "reason is required" in response.content.decode()
    response = client.post(url, {"action": "exclude", "reason": "answered in two seconds each"}, follow=True)
    assert response.status_code == 200
    text = response.content.decode()
    assert "answered in two seconds each" in text and f"Include {role.pseudonym} again" in text
    assert _role(campaign, graders[0]).exclusion_reason == "answered in two seconds each"
    client.post(url, {"action": "include"})
    assert _role(campaign, graders[0]).excluded_at is None


def test_a_grader_cannot_use_the_members_page_exclusion_form(client):
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    client.force_login(graders[0])
    response = client.post(
        f"/organize/campaigns/{campaign.pk}/members/{graders[1].pk}/exclusion/", {"action": "exclude", "reason": "x"}
    )
    assert response.status_code in (403, 404)
    assert _role(campaign, graders[1]).excluded_at is None


def test_the_activity_says_who_was_excluded_and_why_in_words():
    organizer = make_user("org")
    campaign, graders = _built(2, organizer)
    role = grader_exclude(campaign=campaign, role=_role(campaign, graders[0]), reason="speeder", actor=organizer)
    entry = AuditEntry.objects.get(action="grader.excluded")
    assert sentence(entry) == f"excluded grader {role.pseudonym} from the analysis: speeder"
