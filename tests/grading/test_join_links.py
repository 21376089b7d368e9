"""Join links (crowd studies): organizers make them on the campaign page and over the API, pause and
reopen them; a participant who opens one with a platform id becomes a pseudonymous grader of the
campaign, logged in on that browser, and the same id from any browser comes back to the same grader.
A full, paused or expired link says so and creates nothing; ids are bounded; visits are rate-limited."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from evalutron import limits
from grading.models import Assignment, AuditEntry, Campaign, CampaignRole, GradingEvent, JoinLink, Participant
from grading.models.choices import EventType, Role
from grading.services.gold import gold_set
from grading.services.join_links import Identity, join_link_create, join_link_pause, participant_join
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "st-1", "SESSION_ID": "se-1"}


@pytest.fixture
def organizer():
    return make_user("org")


@pytest.fixture
def campaign(organizer):
    return make_campaign(n_queries=2, n_candidates=3, graders=1, organizer=organizer)


@pytest.fixture
def link(campaign, organizer):
    return join_link_create(
        campaign=campaign, actor=organizer, completion_code="C0MPLETE", max_participants=2, units_per_participant=4
    )


def users() -> int:
    return get_user_model().objects.count()


def join_url(link, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/join/{link.key}/" + (f"?{query}" if query else "")


# --- organizers --------------------------------------------------------------------------------------
def test_an_organizer_makes_a_link_over_the_api_and_the_answer_has_its_url(client, campaign, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/api/campaigns/{campaign.pk}/join-links/",
        {
            "completion_code": "ABC123",
            "max_participants": 30,
            "expires_at": (timezone.now() + timedelta(days=3)).isoformat(),
            "consent_text": "You agree to take part.",
            "return_url": "https://app.prolific.com/submissions/complete?cc={code}",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    link = JoinLink.objects.get()
    assert body["url"] == f"http://testserver/join/{link.key}/"
    assert (body["max_participants"], body["participants"], body["taking_participants"]) == (30, 0, True)
    assert link.qualification == {} and link.consent_text
    assert AuditEntry.objects.filter(action="join_link.created", campaign=campaign).count() == 1
    listed = client.get(f"/api/campaigns/{campaign.pk}/join-links/").json()
    assert [entry["id"] for entry in listed] == [link.pk]


def test_a_bad_completion_code_is_refused_naming_the_field_and_nothing_is_stored(client, campaign, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/api/campaigns/{campaign.pk}/join-links/",
        {"completion_code": "no spaces please", "max_participants": 3},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["field"] == "completion_code"
    assert not JoinLink.objects.exists() and not AuditEntry.objects.filter(action="join_link.created").exists()


def test_a_grader_of_the_campaign_may_not_make_links(client, campaign):
    grader = CampaignRole.objects.get(campaign=campaign, role=Role.GRADER).user
    client.force_login(grader)
    response = client.post(
        f"/api/campaigns/{campaign.pk}/join-links/",
        {"completion_code": "X", "max_participants": 3},
        content_type="application/json",
    )
    assert response.status_code == 403 and not JoinLink.objects.exists()


def test_a_link_is_paused_and_reopened_over_the_api_and_both_are_audited(client, link, organizer):
    client.force_login(organizer)
    url = f"/api/campaigns/{link.campaign_id}/join-links/{link.pk}/"
    paused = client.patch(url, {"paused": True}, content_type="application/json").json()
    assert (paused["paused"], paused["taking_participants"], paused["closed_reason"]) == (True, False, "paused")
    reopened = client.patch(url, {"paused": False}, content_type="application/json").json()
    assert reopened["taking_participants"] is True
    actions = list(
        AuditEntry.objects.filter(action__startswith="join_link").order_by("id").values_list("action", flat=True)
    )
    assert actions == ["join_link.created", "join_link.paused", "join_link.reopened"]


def test_the_campaign_page_makes_a_link_and_lists_it_with_its_address_and_pause_button(client, campaign, organizer):
    client.force_login(organizer)
    page = client.get(f"/organize/campaigns/{campaign.pk}/").content.decode()
    assert 'id="new-link"' in page and 'id="no-join-links"' in page
    response = client.post(
        f"/organize/campaigns/{campaign.pk}/join-links/",
        {"label": "pilot", "completion_code": "PILOT1", "max_participants": "10"},
    )
    assert response.status_code == 302
    link = JoinLink.objects.get()
    page = client.get(f"/organize/campaigns/{campaign.pk}/").content.decode()
    assert f"http://testserver/join/{link.key}/" in page and f'id="pause-link-{link.pk}"' in page
    client.post(f"/organize/campaigns/{campaign.pk}/join-links/{link.pk}/pause/")
    link.refresh_from_db()
    assert link.paused
    page = client.get(f"/organize/campaigns/{campaign.pk}/").content.decode()
    assert f'id="reopen-link-{link.pk}"' in page


def test_a_bad_link_form_shows_the_problem_next_to_it_and_makes_nothing(client, campaign, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/organize/campaigns/{campaign.pk}/join-links/",
        {"completion_code": "ok", "max_participants": "5", "return_url": "javascript:alert(1)"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "return_url must be an http(s) address" in html and "No link was made." in html
    assert not JoinLink.objects.exists()


# --- participants --------------------------------------------------------------------------------------
def test_opening_the_link_with_prolific_ids_offers_to_start_and_writes_nothing(link):
    before = users()
    response = Client().get(join_url(link, **PROLIFIC))
    assert response.status_code == 200
    assert 'id="join-start"' in response.content.decode()
    assert users() == before and not Participant.objects.exists()


def test_starting_makes_a_pseudonymous_grader_without_password_logged_in_with_their_share_of_work(link):
    browser = Client()
    response = browser.post(f"/join/{link.key}/", PROLIFIC)
    assert response.status_code == 302 and response["Location"] == f"/campaigns/{link.campaign_id}/guidelines/"
    participant = Participant.objects.get()
    user = participant.user
    assert (participant.platform, participant.external_id, participant.study_id, participant.session_id) == (
        "prolific",
        PROLIFIC["PROLIFIC_PID"],
        "st-1",
        "se-1",
    )
    assert not user.has_usable_password() and PROLIFIC["PROLIFIC_PID"] not in user.username
    role = CampaignRole.objects.get(campaign=link.campaign, user=user)
    assert role.role == Role.GRADER and role.pseudonym.startswith("G")
    assert AuditEntry.objects.filter(action="member.added", target=user.username).exists()
    assert Assignment.objects.filter(grader=user).count() == 4
    assert browser.get(f"/campaigns/{link.campaign_id}/continue/").status_code == 302  # logged in: their work


def test_the_same_id_from_another_browser_comes_back_to_the_same_grader(link):
    Client().post(f"/join/{link.key}/", PROLIFIC)
    first = Participant.objects.get().user
    before = users()
    other = Client()
    page = other.get(join_url(link, **PROLIFIC)).content.decode()
    assert 'id="welcome-back"' in page
    response = other.post(f"/join/{link.key}/", PROLIFIC)
    assert response["Location"] == f"/campaigns/{link.campaign_id}/continue/"
    assert users() == before and Participant.objects.count() == 1
    assert int(other.session["_auth_user_id"]) == first.pk
    assert Assignment.objects.filter(grader=first).count() == 4  # the same work, none added


def test_without_an_id_the_page_asks_for_one(link):
    response = Client().get(join_url(link))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="ask-id"' in html and 'name="pid"' in html


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"PROLIFIC_PID": "x" * 65}, "PROLIFIC_PID"),
        ({"pid": "<script>alert(1)</script>"}, "pid"),
        ({"workerId": "A1 B2"}, "workerId"),
        ({"PROLIFIC_PID": "ok", "STUDY_ID": "'; drop table"}, "STUDY_ID"),
    ],
)
def test_a_hostile_id_is_refused_naming_the_parameter_and_nothing_is_made(link, params, field):
    before = users()
    for response in (Client().get(f"/join/{link.key}/", params), Client().post(f"/join/{link.key}/", params)):
        assert response.status_code == 400
        assert field in response.content.decode()
    assert users() == before and not Participant.objects.exists()


def test_mturk_and_generic_ids_are_told_apart_by_platform(link):
    Client().post(f"/join/{link.key}/", {"workerId": "A1B2C3", "assignmentId": "asg", "hitId": "hit"})
    Client().post(f"/join/{link.key}/", {"pid": "A1B2C3"})
    assert sorted(Participant.objects.values_list("platform", "external_id", "study_id")) == [
        ("generic", "A1B2C3", ""),
        ("mturk", "A1B2C3", "hit"),
    ]


@pytest.mark.parametrize("how", ["full", "paused", "expired"])
def test_a_full_paused_or_expired_link_says_so_and_creates_nothing(link, organizer, how):
    if how == "full":
        for n in range(link.max_participants):
            participant_join(link=link, identity=Identity(platform="generic", external_id=f"p{n}"))
    elif how == "paused":
        join_link_pause(link=link, paused=True, actor=organizer)
    else:
        JoinLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    before, participants = users(), Participant.objects.count()
    shown = Client().get(join_url(link, **PROLIFIC))
    assert shown.status_code == 403 and 'id="join-closed"' in shown.content.decode()
    assert {"full": "is full", "paused": "is paused", "expired": "has expired"}[how] in shown.content.decode()
    posted = Client().post(f"/join/{link.key}/", PROLIFIC)
    assert posted.status_code == 403
    assert users() == before and Participant.objects.count() == participants


def test_someone_already_in_may_come_back_to_a_full_link(link):
    participant_join(link=link, identity=Identity(platform="prolific", external_id="first"))
    participant_join(link=link, identity=Identity(platform="prolific", external_id="second"))
    response = Client().post(f"/join/{link.key}/", {"PROLIFIC_PID": "first"})
    assert response.status_code == 302


def test_link_visits_are_rate_limited_per_address(link, settings, monkeypatch):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "join": "3/min"}
    monkeypatch.setattr(limits, "_now", lambda: 1_800_000_000.0)  # the start of a minute: one window
    browser = Client()
    codes = [browser.get(join_url(link, pid=f"p{n}")).status_code for n in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = browser.post(f"/join/{link.key}/", {"pid": "p9"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert not Participant.objects.exists()
    assert Client(REMOTE_ADDR="10.0.0.9").get(join_url(link, pid="p1")).status_code == 200


def test_an_unknown_link_is_not_found():
    assert Client().get("/join/nosuchlink/?pid=abc").status_code == 404


def test_a_link_of_a_draft_campaign_takes_nobody(organizer):
    draft = make_campaign(status="draft", graders=1, organizer=organizer)
    link = join_link_create(campaign=draft, actor=organizer, completion_code="X", max_participants=3)
    response = Client().post(f"/join/{link.key}/", {"pid": "abc"})
    assert response.status_code == 403 and "not open" in response.content.decode()
    assert not Participant.objects.exists()


# --- consent, then the guidelines, then the work ----------------------------------------------------------
@pytest.fixture
def consent_link(campaign, organizer):
    return join_link_create(
        campaign=campaign,
        actor=organizer,
        completion_code="C0MPLETE",
        max_participants=5,
        consent_text="I agree that my ratings are used for research.",
    )


def test_the_consent_text_is_shown_first_with_an_agree_button(consent_link):
    html = Client().get(join_url(consent_link, **PROLIFIC)).content.decode()
    assert "my ratings are used for research" in html and 'name="consent" value="yes"' in html


def test_agreeing_is_recorded_as_an_event_of_the_new_grader_then_the_guidelines_then_the_work(consent_link):
    browser = Client()
    response = browser.post(f"/join/{consent_link.key}/", {**PROLIFIC, "consent": "yes"})
    assert response["Location"] == f"/campaigns/{consent_link.campaign_id}/guidelines/"
    user = Participant.objects.get().user
    event = GradingEvent.objects.get(grader=user)
    assert event.type == EventType.CONSENT_GIVEN and event.payload["link"] == consent_link.pk
    assert len(event.payload["text_sha256"]) == 64 and event.unit_id is None
    guidelines = browser.get(response["Location"])
    assert guidelines.status_code == 200 and 'id="guidelines-read"' in guidelines.content.decode()
    onward = browser.post(response["Location"])
    assert onward["Location"] == f"/campaigns/{consent_link.campaign_id}/continue/"
    assert browser.get(onward["Location"])["Location"].startswith(f"/campaigns/{consent_link.campaign_id}/grade/")


def test_without_agreeing_nobody_is_made_and_the_consent_is_asked_again(consent_link):
    before = users()
    response = Client().post(f"/join/{consent_link.key}/", PROLIFIC)
    assert response.status_code == 400
    assert 'id="consent-error"' in response.content.decode()
    assert users() == before and not GradingEvent.objects.filter(type=EventType.CONSENT_GIVEN).exists()


def test_a_refused_join_stores_no_consent_event(organizer):
    small = make_campaign(n_queries=1, n_candidates=1, graders=1, organizer=organizer)
    Campaign.objects.filter(pk=small.pk).update(max_overlap=1)  # its one unit has its one grader already
    link = join_link_create(
        campaign=small, actor=organizer, completion_code="X", max_participants=3, consent_text="Agree?"
    )
    response = Client().post(f"/join/{link.key}/", {"pid": "abc", "consent": "yes"})
    assert response.status_code == 403 and "no work left" in response.content.decode()
    assert not Participant.objects.exists() and not GradingEvent.objects.filter(type=EventType.CONSENT_GIVEN).exists()


def test_graders_cannot_send_a_consent_event_themselves(client, campaign):
    grader = CampaignRole.objects.get(campaign=campaign, role=Role.GRADER).user
    client.force_login(grader)
    response = client.post(
        "/api/events/",
        {
            "id": "6f1c0000-0000-4000-8000-000000000001",
            "campaign": campaign.pk,
            "type": "consent_given",
            "payload": {},
            "client_ts": timezone.now().isoformat(),
        },
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "type"
    assert not GradingEvent.objects.filter(type=EventType.CONSENT_GIVEN).exists()


# --- completion ------------------------------------------------------------------------------------------
def rate(user, campaign, assignment) -> None:
    record(user, campaign, "broad_set", {"value": "VS"}, unit=assignment.unit)
    record(user, campaign, "fine_set", {"value": 8.5}, unit=assignment.unit)


def test_the_completion_code_is_shown_only_once_the_whole_share_is_rated(organizer):
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1, organizer=organizer)
    link = join_link_create(
        campaign=campaign,
        actor=organizer,
        completion_code="SECRET42",
        max_participants=3,
        return_url="https://app.prolific.com/submissions/complete?cc={code}",
    )
    browser = Client()
    browser.post(f"/join/{link.key}/", PROLIFIC)
    user = Participant.objects.get().user
    work = list(Assignment.objects.filter(grader=user).select_related("unit").order_by("position"))
    assert len(work) == 3
    pages = [f"/campaigns/{campaign.pk}/grade/1/", f"/campaigns/{campaign.pk}/completion/"]
    for assignment in [None, *work]:
        if assignment is not None:
            rate(user, campaign, assignment)
        finished = assignment is work[-1]
        for url in pages:
            html = browser.get(url).content.decode()
            assert ("SECRET42" in html) is finished, (url, assignment)
    html = browser.get(pages[1]).content.decode()
    assert 'id="completion-code"' in html
    assert 'href="https://app.prolific.com/submissions/complete?cc=SECRET42"' in html


def test_a_half_rated_unit_is_not_finished(organizer):
    campaign = make_campaign(n_queries=1, n_candidates=1, graders=1, organizer=organizer)
    link = join_link_create(campaign=campaign, actor=organizer, completion_code="SECRET42", max_participants=3)
    browser = Client()
    browser.post(f"/join/{link.key}/", {"pid": "abc"})
    user = Participant.objects.get().user
    unit = Assignment.objects.get(grader=user).unit
    record(user, campaign, "broad_set", {"value": "VS"}, unit=unit)
    html = browser.get(f"/campaigns/{campaign.pk}/completion/").content.decode()
    assert "SECRET42" not in html and 'id="units-left"' in html


def test_graders_who_did_not_come_through_a_link_have_no_completion_page(client, link):
    grader = CampaignRole.objects.get(campaign=link.campaign, role=Role.GRADER).user
    client.force_login(grader)
    assert client.get(f"/campaigns/{link.campaign_id}/completion/").status_code == 404
    assert "C0MPLETE" not in client.get(f"/campaigns/{link.campaign_id}/grade/1/").content.decode()


# --- participants -------------------------------------------------------------------------------------------
def test_the_participants_list_has_ids_work_active_time_and_completion_for_organizers_only(client, organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    link = join_link_create(campaign=campaign, actor=organizer, completion_code="DONE1", max_participants=5)
    joined = participant_join(link=link, identity=Identity(platform="prolific", external_id="abc123", study_id="s9"))
    participant_join(link=link, identity=Identity(platform="mturk", external_id="-1+1"))
    user = joined.participant.user
    start = timezone.now() - timedelta(hours=2)
    work = list(Assignment.objects.filter(grader=user).select_related("unit").order_by("position"))
    assert len(work) == 2
    for i, assignment in enumerate(work):  # 30 s on each unit, and an idle hour between them
        at = start + timedelta(hours=i)
        record(user, campaign, "broad_set", {"value": "VS"}, unit=assignment.unit, client_ts=at)
        record(user, campaign, "fine_set", {"value": 8.0}, unit=assignment.unit, client_ts=at + timedelta(seconds=30))
    client.force_login(organizer)
    rows = client.get(f"/api/campaigns/{campaign.pk}/participants/").json()
    assert [r["external_id"] for r in rows] == ["abc123", "-1+1"]
    first = rows[0]
    assert (first["platform"], first["study_id"], first["units_rated"], first["units_assigned"]) == (
        "prolific",
        "s9",
        2,
        2,
    )
    assert first["pseudonym"].startswith("G") and first["completed_at"] is not None
    # 30 s + the idle hour counted as 5 minutes + 30 s; time after the last event is not counted
    assert first["active_seconds"] == 360.0
    assert first["gold_accuracy"] is None and first["repeat_agreement"] is None
    assert rows[1]["units_rated"] == 0 and rows[1]["completed_at"] is None
    csv_text = client.get(f"/reports/campaigns/{campaign.pk}/download/participants.csv").content.decode()
    lines = csv_text.splitlines()
    assert lines[0].startswith("external_id,platform,study_id,session_id,pseudonym")
    assert len(lines) == 3 and lines[1].startswith("abc123,prolific,s9,")
    assert lines[2].startswith("'-1+1,mturk")  # a spreadsheet does not take it for a formula
    assert AuditEntry.objects.filter(action="export.downloaded", target__startswith="participants").count() == 2
    page = client.get(f"/organize/campaigns/{campaign.pk}/").content.decode()
    assert 'id="participants-csv"' in page


def test_graders_never_see_the_participants_or_their_ids(client, organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    link = join_link_create(campaign=campaign, actor=organizer, completion_code="DONE1", max_participants=5)
    joined = participant_join(link=link, identity=Identity(platform="prolific", external_id="secretpid42"))
    for grader in (
        joined.participant.user,
        CampaignRole.objects.get(campaign=campaign, role=Role.GRADER, pseudonym="G01").user,
    ):
        client.force_login(grader)
        assert client.get(f"/api/campaigns/{campaign.pk}/participants/").status_code == 403
        assert client.get(f"/reports/campaigns/{campaign.pk}/download/participants.csv").status_code == 403
        for url in (
            "/",
            f"/campaigns/{campaign.pk}/continue/",
            f"/campaigns/{campaign.pk}/grade/1/",
            f"/api/assignments/?campaign={campaign.pk}",
            f"/api/campaigns/{campaign.pk}/",
        ):
            response = client.get(url, follow=True)
            assert b"secretpid42" not in response.content, url


def test_gold_accuracy_of_a_participant_is_their_share_of_gold_units_answered_right(client, organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    units = list(campaign.units.order_by("pk"))
    for unit in units:
        gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value="VS")
    link = join_link_create(campaign=campaign, actor=organizer, completion_code="DONE1", max_participants=5)
    user = participant_join(link=link, identity=Identity(platform="generic", external_id="g1")).participant.user
    for unit, broad in zip(units, ["VS", "NS"], strict=True):
        record(user, campaign, "broad_set", {"value": broad}, unit=unit)
    client.force_login(organizer)
    (row,) = client.get(f"/api/campaigns/{campaign.pk}/participants/").json()
    assert row["gold_accuracy"] == 0.5


def test_a_browser_logged_in_as_someone_else_is_told_the_button_logs_it_in_as_the_participant(client, link, organizer):
    client.force_login(organizer)
    html = client.get(join_url(link, **PROLIFIC)).content.decode()
    assert 'id="other-account"' in html and "logged in as org" in html
    client.post(f"/join/{link.key}/", PROLIFIC)
    assert int(client.session["_auth_user_id"]) == Participant.objects.get().user_id
    assert 'id="other-account"' not in client.get(join_url(link, **PROLIFIC)).content.decode()


def test_pay_is_the_links_rate_per_unit_rated_plus_per_hour_of_active_time(client, organizer):
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    client.force_login(organizer)
    made = client.post(
        f"/api/campaigns/{campaign.pk}/join-links/",
        {
            "completion_code": "PAY1",
            "max_participants": 5,
            "pay_per_unit": "0.50",
            "pay_per_hour": "12.00",
            "currency": "gbp",
        },
        content_type="application/json",
    ).json()
    assert (made["pay_per_unit"], made["pay_per_hour"], made["currency"]) == ("0.50", "12.00", "GBP")
    link = JoinLink.objects.get()
    user = participant_join(link=link, identity=Identity(platform="prolific", external_id="payme")).participant.user
    start = timezone.now() - timedelta(hours=1)
    for i, assignment in enumerate(Assignment.objects.filter(grader=user).select_related("unit").order_by("position")):
        at = start + timedelta(minutes=10 * i)  # 30 s on each unit and 9.5 idle minutes between: 6 minutes
        record(user, campaign, "broad_set", {"value": "SS"}, unit=assignment.unit, client_ts=at)
        record(user, campaign, "fine_set", {"value": 5.0}, unit=assignment.unit, client_ts=at + timedelta(seconds=30))
    (row,) = client.get(f"/api/campaigns/{campaign.pk}/participants/").json()
    assert (row["units_rated"], row["active_seconds"]) == (2, 360.0)
    assert (row["pay"], row["currency"]) == ("2.20", "GBP")  # 2 × 0.50 + 12.00 × 0.1 h
    csv_text = client.get(f"/reports/campaigns/{campaign.pk}/download/participants.csv").content.decode()
    assert csv_text.splitlines()[1].endswith(",2.20,GBP")


@pytest.mark.parametrize(
    ("field", "value", "taken"),
    [
        ("pay_per_unit", "0.50", True),
        ("pay_per_unit", "100000.00", True),
        ("pay_per_unit", "12", True),
        ("pay_per_unit", "-.", False),  # DRF's own pattern for a decimal took this, and then refused it
        ("pay_per_unit", "", False),
        ("pay_per_unit", ".5", False),
        ("pay_per_unit", "5.", False),
        ("pay_per_unit", "100000.01", False),
        ("pay_per_unit", " 1.00", False),
        ("pay_per_unit", "\u0663", False),  # an Arabic-Indic 3: a digit to Python's \\d and to Decimal
        ("pay_per_unit", 12.5, False),  # a number, not a string
        ("pay_per_hour", "-1", False),
        ("currency", "gbp", True),
        ("currency", "", True),
        ("currency", " GB", False),
        ("currency", "\u00a3", False),
        ("completion_code", "C-1_x", True),
        ("completion_code", "C1\n", False),  # Python's `$` matches before a final newline; the schema's does not
        ("completion_code", " C1", False),
        ("completion_code", "C*1", False),
    ],
)
def test_a_code_a_currency_and_a_rate_are_taken_exactly_when_the_schema_pattern_says(
    client, campaign, organizer, field, value, taken
):
    """The schema's pattern is what the server takes: a client (or a fuzzer) that builds a value by
    the schema is never refused, and one the schema refuses is refused naming the field."""
    client.force_login(organizer)
    schema = client.get("/api/schema/?format=json").json()["components"]["schemas"]["JoinLinkIn"]["properties"]
    pattern = schema[field]["pattern"]
    assert (isinstance(value, str) and re.search(pattern, value) is not None and "\n" not in value) == taken
    body = {"completion_code": "X", "max_participants": 2, field: value}
    response = client.post(f"/api/campaigns/{campaign.pk}/join-links/", body, content_type="application/json")
    if taken:
        assert response.status_code == 201, response.content
    else:
        assert response.status_code == 400 and response.json()["field"] == field, response.content
    assert JoinLink.objects.count() == int(taken)


def test_a_negative_rate_or_a_bad_currency_is_refused_naming_the_field(client, campaign, organizer):
    client.force_login(organizer)
    for body, field in (({"pay_per_unit": "-1"}, "pay_per_unit"), ({"currency": "£"}, "currency")):
        response = client.post(
            f"/api/campaigns/{campaign.pk}/join-links/",
            {"completion_code": "X", "max_participants": 2, **body},
            content_type="application/json",
        )
        assert response.status_code == 400 and response.json()["field"] == field
    assert not JoinLink.objects.exists()
