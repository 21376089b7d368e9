"""Hidden repeats: a unit the grader already judged comes back later as ordinary work; its answer is
kept apart, never overwrites the judgment, and stays out of agreement and ground truth."""

from __future__ import annotations

import pytest

from analysis import selectors as analysis_selectors
from analysis.services.sections.hidden_units import hidden_units_section
from grading import selectors
from grading.models import Assignment, GradingEvent, Judgment, RepeatAnswer
from grading.models.choices import AssignmentStatus
from grading.services.repeats import MIN_GAP, repeat_share
from tests.factories import make_campaign, record
from tests.grading.api_helpers import client_for, fast_passwords, graders_of  # noqa: F401

pytestmark = pytest.mark.django_db


def _campaign(share: float | None = 0.1, n: int = 30):
    campaign = make_campaign(n_queries=0, n_candidates=n, graders=1)
    if share is not None:
        campaign.policy_params = {"repeat_share": share}
        campaign.save(update_fields=["policy_params"])
    return campaign, graders_of(campaign)[0]


def _judge(grader, campaign, assignment, broad="VS", fine=8.0):
    record(grader, campaign, "broad_set", {"value": broad}, unit=assignment.unit_id)
    record(grader, campaign, "fine_set", {"value": fine}, unit=assignment.unit_id)


def _work_in_order(grader, campaign, count: int) -> list[int]:
    """Judge the grader's first `count` open ordinary units in page order; the unit ids judged."""
    judged = []
    for _ in range(count):
        a = (
            Assignment.objects.filter(grader=grader, campaign=campaign, status=AssignmentStatus.OPEN, repeat=False)
            .order_by("position", "pk")
            .first()
        )
        _judge(grader, campaign, a)
        judged.append(a.unit_id)
    return judged


def test_a_repeat_comes_after_at_least_ten_other_units_and_beyond_the_current_page():
    campaign, grader = _campaign()
    judged = _work_in_order(grader, campaign, MIN_GAP)
    assert not Assignment.objects.filter(repeat=True).exists()  # nothing old enough yet
    judged += _work_in_order(grader, campaign, 1)
    repeat = Assignment.objects.get(repeat=True)
    assert repeat.unit_id == judged[0] and repeat.status == AssignmentStatus.OPEN and repeat.grader == grader
    # At least MIN_GAP other units were judged since, and the repeat sits a page beyond the next open unit.
    assert len(judged[judged.index(repeat.unit_id) + 1 :]) >= MIN_GAP
    ahead = list(
        Assignment.objects.filter(
            grader=grader, status=AssignmentStatus.OPEN, repeat=False, position__lt=repeat.position
        )
    )
    assert len(ahead) >= 10
    positions = list(Assignment.objects.filter(grader=grader).values_list("position", flat=True))
    assert len(positions) == 31 and len(set(positions)) == 31
    assert selectors.grading_pages(grader=grader, campaign=campaign)[-1].assignments[-1].repeat is False


def test_the_share_sets_how_many_and_zero_turns_repeats_off():
    campaign, grader = _campaign(share=0.2)
    _work_in_order(grader, campaign, 15)
    assert Assignment.objects.filter(repeat=True).count() == 3  # floor(15 × 0.2)
    off, grader_off = _campaign(share=None)
    _work_in_order(grader_off, off, 15)
    assert not Assignment.objects.filter(campaign=off, repeat=True).exists()
    assert repeat_share(off) == 0.0
    for bad in (-0.1, 0.9, "0.1", True):
        off.policy_params = {"repeat_share": bad}
        assert repeat_share(off) == 0.0


def test_a_repeat_answer_never_overwrites_the_judgment_and_its_events_are_recorded():
    campaign, grader = _campaign()
    _work_in_order(grader, campaign, MIN_GAP + 1)
    repeat = Assignment.objects.get(repeat=True)
    events_before = GradingEvent.objects.count()
    _judge(grader, campaign, repeat, broad="NS", fine=2.5)
    assert GradingEvent.objects.count() == events_before + 2
    original = Judgment.objects.get(grader=grader, unit=repeat.unit)
    assert (original.broad, float(original.fine)) == ("VS", 8.0)
    answer = RepeatAnswer.objects.get(assignment=repeat)
    assert (answer.broad, float(answer.fine), answer.unit_id) == ("NS", 2.5, repeat.unit_id)
    repeat.refresh_from_db()
    assert repeat.status == AssignmentStatus.DONE
    assert Judgment.objects.filter(grader=grader).count() == MIN_GAP + 1


def test_repeat_answers_stay_out_of_agreement_and_judgment_changes_and_are_scored():
    campaign, grader = _campaign()
    _work_in_order(grader, campaign, MIN_GAP + 1)
    repeat = Assignment.objects.get(repeat=True)
    frame_before = analysis_selectors.judgments_frame(campaign_id=campaign.pk)
    values_before = analysis_selectors.value_events(analysis_selectors.unit_events_frame(campaign_id=campaign.pk))
    _judge(grader, campaign, repeat, broad="SS", fine=6.5)
    frame = analysis_selectors.judgments_frame(campaign_id=campaign.pk)
    assert len(frame) == MIN_GAP + 1 and frame.equals(frame_before)
    values = analysis_selectors.value_events(analysis_selectors.unit_events_frame(campaign_id=campaign.pk))
    assert len(values) == len(values_before) == 2 * (MIN_GAP + 1)
    section = hidden_units_section(campaign_id=campaign.pk, scheme=campaign.scheme, pseudonyms={grader.pk: "G1"})
    assert section["repeats"] == {
        "categorical": True,
        "numeric": True,
        "graders": [
            {"grader": grader.pk, "pseudonym": "G1", "n": 1, "identical": 0.0, "mean_abs_diff": 1.5, "excluded": False}
        ],
    }


def test_the_api_and_the_page_show_a_repeat_like_any_other_unit():
    campaign, grader = _campaign()
    _work_in_order(grader, campaign, MIN_GAP + 1)
    repeat = Assignment.objects.get(repeat=True)
    client = client_for(grader)
    items = client.get(f"/api/assignments/?campaign={campaign.pk}&page_size=100").json()["results"]
    assert len(items) == 31
    shown = next(i for i in items if i["id"] == repeat.pk)
    ordinary = next(i for i in items if i["status"] == "open" and i["id"] != repeat.pk)
    assert shown.keys() == ordinary.keys() and shown["unit"].keys() == ordinary["unit"].keys()
    assert shown["judgment"] is None and "repeat" not in str(shown)  # never the first judgment
    _judge(grader, campaign, repeat, broad="NS", fine=1.0)
    items = client.get(f"/api/assignments/?campaign={campaign.pk}&page_size=100").json()["results"]
    answers = [i["judgment"]["broad"] for i in items if i["unit"]["id"] == repeat.unit_id]
    assert sorted(answers) == ["NS", "VS"]
    page = next(p for p in selectors.grading_pages(grader=grader, campaign=campaign) if repeat in p.assignments)
    view, _ = selectors.grading_page_get(grader=grader, campaign=campaign, number=page.number)
    assert view.judgments[repeat.unit_id].broad == "NS"


def test_the_grading_page_of_a_repeat_shows_an_unrated_card_and_no_hint(client):
    campaign, grader = _campaign()
    _work_in_order(grader, campaign, MIN_GAP + 1)
    repeat = Assignment.objects.get(repeat=True)
    pages = selectors.grading_pages(grader=grader, campaign=campaign)
    number = next(p.number for p in pages if repeat in p.assignments)
    client.force_login(grader)
    html = client.get(f"/campaigns/{campaign.pk}/grade/{number}/").content.decode()
    card = html.split(f'data-unit="{repeat.unit_id}"')
    assert len(card) == 2 and card[1].startswith(' data-status="open"')
    assert "Not rated yet" in card[1].split("</li>")[0] and "repeat" not in html.lower()


def test_a_replayed_repeat_event_is_answered_with_the_repeat_answer():
    from uuid import uuid4

    campaign, grader = _campaign()
    _work_in_order(grader, campaign, MIN_GAP + 1)
    repeat = Assignment.objects.get(repeat=True)
    event_id = uuid4()
    first = record(grader, campaign, "broad_set", {"value": "NS"}, unit=repeat.unit_id, event_id=event_id)
    again = record(grader, campaign, "broad_set", {"value": "NS"}, unit=repeat.unit_id, event_id=event_id)
    assert again.replayed and first.as_dict()["judgment"] == again.as_dict()["judgment"]
    assert again.as_dict()["judgment"]["broad"] == "NS"
