"""Qualification of crowd participants (docs/design.md §2, "Join links"): a link's rule gives each
participant some of the campaign's gold units first; when the last is rated, in that event's
transaction, they are scored with §5.6's gold measure and either go on to their share or are
screened out (thanked, shown the screen-out code, no more work, excluded from the analysis)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from grading.activity import activity_line
from grading.models import Assignment, AuditEntry, CampaignRole, JoinLink, Participant
from grading.models.choices import AssignmentSource, AssignmentStatus, Role, Scheme
from grading.services.gold import answer_scores, gold_remove, gold_set
from grading.services.join_links import join_link_create
from grading.services.qualification import qualification_decide
from grading.services.tokens import token_get_or_create
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "st-1", "SESSION_ID": "se-1"}
RETURN = "https://app.prolific.com/submissions/complete?cc={code}"


def study(*, rule=None, scheme=Scheme.BROAD_FINE, n_gold=3, gold="VS", scheme_params=None):
    """A campaign of 2 queries × 3 units, the first `n_gold` units gold, and a link with `rule`."""
    organizer = make_user()
    campaign = make_campaign(
        scheme=scheme, n_queries=2, n_candidates=3, graders=1, organizer=organizer, scheme_params=scheme_params
    )
    for unit in campaign.units.order_by("query_id", "position", "pk")[:n_gold]:
        gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value=gold)
    link = join_link_create(
        campaign=campaign,
        actor=organizer,
        completion_code="DONE42",
        max_participants=5,
        return_url=RETURN,
        qualification=rule,
    )
    return campaign, link, organizer


def join(link, pid: str = "5f1a2b3c4d5e6f7a8b9c0d1e") -> tuple[Client, Participant]:
    browser = Client()
    response = browser.post(f"/join/{link.key}/", {**PROLIFIC, "PROLIFIC_PID": pid})
    assert response.status_code == 302, response.content
    return browser, Participant.objects.get(external_id=pid)


def qualification_work(participant) -> list[Assignment]:
    return list(
        Assignment.objects.filter(grader=participant.user, source=AssignmentSource.QUALIFY)
        .select_related("unit")
        .order_by("position")
    )


def rate(participant, campaign, assignment, broad: str) -> None:
    record(participant.user, campaign, "broad_set", {"value": broad}, unit=assignment.unit)
    record(participant.user, campaign, "fine_set", {"value": 8.0 if broad == "VS" else 1.0}, unit=assignment.unit)


def answer(participant, campaign, rights: list[bool]) -> None:
    for assignment, right in zip(qualification_work(participant)[: len(rights)], rights, strict=True):
        rate(participant, campaign, assignment, "VS" if right else "NS")


RULE = {"units": 3, "pass_mark": 2, "screen_out_code": "SCREEN7"}


# --- joining -----------------------------------------------------------------------------------------
def test_a_participant_is_given_the_qualification_gold_units_first_then_their_share():
    campaign, link, _ = study(rule=RULE)
    _, participant = join(link)
    work = list(Assignment.objects.filter(grader=participant.user).order_by("position"))
    gold_units = set(campaign.units.filter(gold__isnull=False).values_list("pk", flat=True))
    assert [a.source for a in work[:3]] == [AssignmentSource.QUALIFY] * 3
    assert {a.unit_id for a in work[:3]} == gold_units
    assert all(a.source == AssignmentSource.INITIAL and a.unit_id not in gold_units for a in work[3:])
    assert len(work) == 6  # the other three units are the share
    assert (participant.qualification_units, participant.qualification_pass_mark) == (3, 2.0)
    assert participant.qualified is None


def test_while_qualifying_the_pages_show_only_the_qualification_units_and_no_code():
    campaign, link, _ = study(rule=RULE)
    browser, participant = join(link)
    html = browser.get(f"/campaigns/{campaign.pk}/grade/1/").content.decode()
    assert 'id="qualifying"' in html and "of 3 in all" in html
    assert "SCREEN7" not in html and "DONE42" not in html
    assert browser.get(f"/campaigns/{campaign.pk}/grade/2/").status_code == 302  # the share is not shown yet
    answer(participant, campaign, [True, False])  # two of three rated: nothing decided
    participant.refresh_from_db()
    assert participant.qualified is None
    for url in (f"/campaigns/{campaign.pk}/grade/1/", f"/campaigns/{campaign.pk}/completion/"):
        html = browser.get(url).content.decode()
        assert "SCREEN7" not in html and "DONE42" not in html


# --- the decision --------------------------------------------------------------------------------------
def test_at_or_above_the_pass_mark_the_participant_goes_on_to_their_share():
    campaign, link, _ = study(rule=RULE)
    browser, participant = join(link)
    answer(participant, campaign, [True, True, True])
    participant.refresh_from_db()
    assert participant.qualified is True and participant.qualification_score == 1.0
    assert Assignment.objects.filter(grader=participant.user, status=AssignmentStatus.OPEN).count() == 3
    role = CampaignRole.objects.get(campaign=campaign, user=participant.user, role=Role.GRADER)
    assert role.excluded_at is None
    html = browser.get(f"/campaigns/{campaign.pk}/completion/").content.decode()
    assert 'id="qualified"' in html and "SCREEN7" not in html and "DONE42" not in html
    assert browser.get(f"/campaigns/{campaign.pk}/grade/2/").status_code == 200  # the share's page
    for assignment in Assignment.objects.filter(grader=participant.user, status=AssignmentStatus.OPEN):
        rate(participant, campaign, assignment, "SS")
    html = browser.get(f"/campaigns/{campaign.pk}/completion/").content.decode()
    assert "DONE42" in html and "SCREEN7" not in html  # the code of someone who passed, never the other


def test_exactly_at_the_pass_mark_passes():
    campaign, link, _ = study(rule=RULE)
    _, participant = join(link)
    answer(participant, campaign, [True, False, True])
    participant.refresh_from_db()
    assert participant.qualified is True and participant.qualification_score == pytest.approx(2 / 3)


def test_below_the_pass_mark_the_participant_is_screened_out_excluded_and_shown_the_screen_out_code():
    campaign, link, _ = study(rule=RULE)
    browser, participant = join(link)
    share_units = set(
        Assignment.objects.filter(grader=participant.user, source=AssignmentSource.INITIAL).values_list(
            "unit_id", flat=True
        )
    )
    answer(participant, campaign, [True, False, False])
    participant.refresh_from_db()
    assert participant.qualified is False and participant.qualification_score == pytest.approx(1 / 3)
    # Their open work went back to the pool; their judgments stay.
    assert not Assignment.objects.filter(grader=participant.user, status=AssignmentStatus.OPEN).exists()
    assert Assignment.objects.filter(grader=participant.user).count() == 3
    assert all(campaign.units.get(pk=u).allocation.n_assigned == 1 for u in share_units)  # only the first grader
    role = CampaignRole.objects.get(campaign=campaign, user=participant.user, role=Role.GRADER)
    reason = "screened out: 1 of 3 qualification units right (pass mark 2 of 3)"
    assert role.excluded_at is not None and role.exclusion_reason == reason and role.excluded_by is None
    entry = AuditEntry.objects.get(action="grader.excluded", campaign=campaign)
    assert entry.actor is None and entry.after["reason"] == reason
    assert activity_line(entry).who == "the join link's qualification (automatically)"
    # The pages: plain words, the screen-out code and the platform's link with it; never the completion code.
    for url in (f"/campaigns/{campaign.pk}/completion/", f"/campaigns/{campaign.pk}/grade/1/"):
        html = browser.get(url).content.decode()
        assert 'id="screen-out-code"' in html and "SCREEN7" in html and "DONE42" not in html
        assert (
            "below the pass mark" in html and 'href="https://app.prolific.com/submissions/complete?cc=SCREEN7"' in html
        )
        assert "You answered 1 of the 3 qualification units as expected." in html
    assert browser.get(f"/campaigns/{campaign.pk}/continue/").url.endswith(f"/campaigns/{campaign.pk}/completion/")
    # Taking work gives them nothing, and says why.
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_get_or_create(user=participant.user).key}")
    served = api.post("/api/assignments/next/", {"campaign": campaign.pk}, format="json")
    assert served.status_code == 204 and served["Evalutron-Reason"] == "screened_out"
    listed = api.get(f"/api/campaigns/{campaign.pk}/participants/")
    assert listed.status_code in (403, 404)  # graders never read the participants


def test_a_screened_out_participant_gets_no_extra_work_under_an_adaptive_policy():
    campaign, link, _ = study(rule=RULE)
    campaign.policy = "consensus"
    campaign.save()
    browser, participant = join(link)
    answer(participant, campaign, [False, False, False])
    response = browser.post(f"/campaigns/{campaign.pk}/more/")
    assert response.status_code == 302
    assert not Assignment.objects.filter(grader=participant.user, status=AssignmentStatus.OPEN).exists()


def test_without_a_screen_out_code_the_page_says_so():
    campaign, link, _ = study(rule={"units": 2, "pass_mark": 2})
    browser, participant = join(link)
    answer(participant, campaign, [True, False])
    participant.refresh_from_db()
    assert participant.qualified is False
    html = browser.get(f"/campaigns/{campaign.pk}/completion/").content.decode()
    assert 'id="no-screen-out-code"' in html and 'id="screen-out-return"' not in html and "DONE42" not in html


def test_the_decision_is_made_once():
    campaign, link, _ = study(rule=RULE)
    _, failing = join(link, pid="failing001")
    answer(failing, campaign, [False, False, False])
    answer(failing, campaign, [True, True, True])  # answers changed afterwards: still screened out
    failing.refresh_from_db()
    assert failing.qualified is False and failing.qualification_score == 0.0
    assert AuditEntry.objects.filter(action="grader.excluded").count() == 1
    _, passing = join(link, pid="passing001")
    answer(passing, campaign, [True, True, True])
    answer(passing, campaign, [False, False, False])
    passing.refresh_from_db()
    assert passing.qualified is True
    assert qualification_decide(grader=passing.user, campaign=campaign) is None


def test_a_skipped_qualification_unit_counts_as_wrong():
    campaign, link, _ = study(rule=RULE)
    _, participant = join(link)
    work = qualification_work(participant)
    rate(participant, campaign, work[0], "VS")
    record(participant.user, campaign, "skip", {}, unit=work[1].unit)
    record(participant.user, campaign, "skip", {}, unit=work[2].unit)
    participant.refresh_from_db()
    assert participant.qualified is False


def test_a_unit_whose_gold_answer_was_removed_counts_in_the_participants_favour():
    campaign, link, organizer = study(rule=RULE)
    _, participant = join(link)
    work = qualification_work(participant)
    gold_remove(organizer=organizer, campaign=campaign, unit_external_id=work[2].unit.external_id)
    answer(participant, campaign, [True, False, False])
    participant.refresh_from_db()
    assert participant.qualified is True  # 1 right + the unit no longer gold = 2 of 3


def test_a_numeric_campaign_uses_the_mean_absolute_error_and_exactly_at_the_mark_passes():
    params = {"min": 0, "max": 10, "step": 1}
    rule = {"units": 3, "pass_mark": 1, "screen_out_code": "NUMOUT"}
    campaign, link, _ = study(rule=rule, scheme=Scheme.NUMERIC, gold=5, scheme_params=params)
    _, at_mark = join(link, pid="atmark0001")
    for a, value in zip(qualification_work(at_mark), [6, 4, 5], strict=True):  # errors 1, 1, 0: mean 2/3
        record(at_mark.user, campaign, "score_set", {"value": value}, unit=a.unit)
    at_mark.refresh_from_db()
    assert at_mark.qualified is True and at_mark.qualification_score == pytest.approx(2 / 3)
    _, exactly = join(link, pid="exactly001")
    for a in qualification_work(exactly):
        record(exactly.user, campaign, "score_set", {"value": 6}, unit=a.unit)  # errors 1, 1, 1: at the mark
    exactly.refresh_from_db()
    assert exactly.qualified is True and exactly.qualification_score == 1.0
    _, off = join(link, pid="farout0001")
    for a in qualification_work(off):
        record(off.user, campaign, "score_set", {"value": 8}, unit=a.unit)
    off.refresh_from_db()
    assert off.qualified is False and off.qualification_score == 3.0
    reason = CampaignRole.objects.get(user=off.user, campaign=campaign).exclusion_reason
    assert reason == "screened out: mean absolute error 3.00 on 3 qualification units (pass mark: at most 1)"


def test_the_qualification_is_scored_as_the_reports_gold_units_are():
    assert answer_scores(["VS", "NS", None], ["VS", "VS", "VS"], numeric=False).tolist() == [1.0, 0.0, 0.0]
    assert answer_scores([6, "4.5", None], ["5", 5, 5], numeric=True)[:2].tolist() == [1.0, 0.5]
    with pytest.raises(ValueError, match="`answers` has 1 values"):
        answer_scores(["VS"], [], numeric=False)


# --- cost ----------------------------------------------------------------------------------------------
def statements_of(user, campaign, unit, kind: str, value) -> int:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_get_or_create(user=user).key}")
    body = {
        "id": str(uuid4()),
        "campaign": campaign.pk,
        "unit": unit.pk,
        "type": kind,
        "payload": {"value": value},
        "client_ts": datetime.now(UTC).isoformat(),
        "seq": 1,
        "session_id": "count",
    }
    api.post("/api/events/", {**body, "id": str(uuid4()), "type": "unit_viewed", "payload": {}}, format="json")
    with CaptureQueriesContext(connection) as queries:
        response = api.post("/api/events/", body, format="json")
    assert response.status_code in (200, 201), response.content
    return len(queries.captured_queries)


def test_the_qualification_costs_ordinary_graders_and_qualified_participants_no_statement():
    campaign, link, _ = study(rule=RULE)
    ordinary = CampaignRole.objects.get(campaign=campaign, role=Role.GRADER, pseudonym="G01").user
    mine = Assignment.objects.filter(grader=ordinary).select_related("unit").order_by("position")
    baseline = statements_of(ordinary, campaign, mine[5].unit, "broad_set", "VS")
    _, participant = join(link)
    answer(participant, campaign, [True, True, True])
    share = Assignment.objects.filter(grader=participant.user, status=AssignmentStatus.OPEN).select_related("unit")
    assert statements_of(participant.user, campaign, share[0].unit, "broad_set", "VS") == baseline
    assert statements_of(ordinary, campaign, mine[4].unit, "broad_set", "VS") == baseline


# --- the rule: checked, with the field named -------------------------------------------------------
def post_link(client, campaign, rule):
    return client.post(
        f"/api/campaigns/{campaign.pk}/join-links/",
        {"completion_code": "C1", "max_participants": 3, "qualification": rule},
        content_type="application/json",
    )


@pytest.mark.parametrize(
    ("rule", "field", "words"),
    [
        ({"units": 5, "pass_mark": 2}, "qualification.units", "asks for 5 gold units but campaign"),
        ({"units": 0, "pass_mark": 1}, "qualification.units", "whole number from 1 to 100"),
        ({"pass_mark": 1}, "qualification.units", "got None"),
        ({"units": 3, "pass_mark": 4}, "qualification.pass_mark", "whole number from 1 to 3"),
        ({"units": 3, "pass_mark": 0.7}, "qualification.pass_mark", "got 0.7"),
        ({"units": 3}, "qualification.pass_mark", "got None"),
        ({"units": 3, "pass_mark": 2, "screen_out_code": "no spaces"}, "qualification.screen_out_code", "letters"),
        ({"units": 3, "pass_mark": 2, "gold_units": 3}, "qualification.gold_units", "not a field"),
    ],
)
def test_a_bad_rule_is_refused_naming_its_field_and_nothing_is_stored(client, rule, field, words):
    campaign, _, organizer = study(rule=None)
    client.force_login(organizer)
    response = post_link(client, campaign, rule)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == field and words in body["detail"], body
    assert JoinLink.objects.count() == 1  # the study's own link only


def test_a_rule_is_refused_for_an_ordering_campaign_and_a_numeric_pass_mark_wider_than_the_scale(client):
    organizer = make_user()
    ordering = make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=3, graders=1, organizer=organizer)
    client.force_login(organizer)
    response = post_link(client, ordering, {"units": 1, "pass_mark": 1})
    assert response.status_code == 400 and response.json()["field"] == "qualification"
    numeric, _, organizer = study(scheme=Scheme.NUMERIC, gold=5, scheme_params={"min": 1, "max": 5, "step": 1})
    client.force_login(organizer)
    response = post_link(client, numeric, {"units": 2, "pass_mark": 4.5})
    assert response.status_code == 400 and response.json()["field"] == "qualification.pass_mark"
    assert "from 0 to 4" in response.json()["detail"]
    assert post_link(client, numeric, {"units": 2, "pass_mark": 0.5}).status_code == 201


def test_the_rule_is_stored_checked_and_read_back_in_words(client):
    campaign, _, organizer = study(rule=None)
    client.force_login(organizer)
    response = post_link(client, campaign, {"units": 2.0, "pass_mark": 2, "screen_out_code": " OUT1 "})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["qualification"] == {"units": 2, "pass_mark": 2, "screen_out_code": "OUT1"}
    assert body["qualification_words"] == (
        "Qualification: 2 gold units first; at least 2 of 2 right goes on to the share; "
        "below it: screened out, shown the code OUT1."
    )
    assert (body["qualified"], body["screened_out"]) == (0, 0)


def test_the_rule_is_changed_over_patch_audited_and_a_bad_one_changes_nothing(client):
    campaign, link, organizer = study(rule=RULE)
    client.force_login(organizer)
    url = f"/api/campaigns/{campaign.pk}/join-links/{link.pk}/"
    bad = client.patch(url, {"qualification": {"units": 9, "pass_mark": 1}}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "qualification.units"
    link.refresh_from_db()
    assert link.qualification == RULE
    good = client.patch(url, {"qualification": {"units": 1, "pass_mark": 1}}, content_type="application/json")
    assert good.status_code == 200 and good.json()["qualification"] == {"units": 1, "pass_mark": 1}
    assert AuditEntry.objects.filter(action="join_link.qualification").count() == 1
    off = client.patch(url, {"qualification": {}, "paused": True}, content_type="application/json").json()
    assert off["qualification"] == {} and off["paused"] is True and off["qualification_words"] == ""
    assert client.patch(url, {}, content_type="application/json").status_code == 400


def test_the_campaign_page_form_puts_a_rule_error_next_to_its_field_and_lists_rules_with_counts(client):
    campaign, link, organizer = study(rule=RULE)
    client.force_login(organizer)
    response = client.post(
        f"/organize/campaigns/{campaign.pk}/join-links/",
        {"completion_code": "ok", "max_participants": "5", "qualification_units": "7", "qualification_pass_mark": "2"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    field = html.index('id="id_qualification_units"')
    error = html.index("asks for 7 gold units but campaign")
    assert field < error < html.index('id="id_qualification_pass_mark"')  # next to its field
    assert JoinLink.objects.count() == 1
    _, failing = join(link, pid="failing001")
    answer(failing, campaign, [False, False, False])
    html = client.get(f"/organize/campaigns/{campaign.pk}/").content.decode()
    assert "at least 2 of 3 right goes on to the share" in html
    assert "So far <strong>0</strong> passed and <strong>1</strong> was screened out, of 1 who joined." in html
    response = client.post(
        f"/organize/campaigns/{campaign.pk}/join-links/",
        {"completion_code": "ok", "max_participants": "5", "qualification_units": "2", "qualification_pass_mark": "1"},
    )
    assert response.status_code == 302
    assert JoinLink.objects.order_by("pk").last().qualification == {"units": 2, "pass_mark": 1}


def test_a_link_whose_rule_the_campaign_no_longer_satisfies_takes_nobody():
    campaign, link, organizer = study(rule=RULE)
    unit = campaign.units.filter(gold__isnull=False).first()
    gold_remove(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id)
    browser = Client()
    response = browser.post(f"/join/{link.key}/", PROLIFIC)
    assert response.status_code == 403 and not Participant.objects.exists()


# --- the participants file -------------------------------------------------------------------------------
def test_the_participants_file_says_qualified_true_false_or_null(client):
    campaign, link, organizer = study(rule=RULE)
    _, passing = join(link, pid="passing001")
    _, failing = join(link, pid="failing001")
    join(link, pid="undecided1")
    answer(passing, campaign, [True, True, False])
    answer(failing, campaign, [False, False, True])
    client.force_login(organizer)
    rows = {r["external_id"]: r for r in client.get(f"/api/campaigns/{campaign.pk}/participants/").json()}
    assert {pid: r["qualified"] for pid, r in rows.items()} == {
        "passing001": True,
        "failing001": False,
        "undecided1": None,
    }
    assert rows["failing001"]["excluded"] is True and rows["passing001"]["excluded"] is False
    csv = client.get(f"/reports/campaigns/{campaign.pk}/download/participants.csv").content.decode()
    header, *lines = csv.splitlines()
    column = header.split(",").index("qualified")
    assert sorted(line.split(",")[column] for line in lines) == ["", "False", "True"]
