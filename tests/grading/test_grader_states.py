"""What the grading page says about each unit is what is stored: states, counters, skips and their
undoing, comments, campaign wording, and the events that feed active time."""

import re

import pytest
from django.test import Client

from grading.errors import InvalidValue
from grading.models import Assignment, GradingEvent, Judgment
from grading.models.choices import AssignmentStatus, Scheme
from tests.factories import make_campaign, record
from tests.grading.api_helpers import fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = pytest.mark.django_db


def page_of(grader, campaign, number: int = 1) -> str:
    client = Client()
    client.force_login(grader)
    response = client.get(f"/campaigns/{campaign.pk}/grade/{number}/")
    assert response.status_code == 200
    return response.content.decode()


def state_of(html: str, unit) -> str:
    card = html.split(f'data-unit="{unit.pk}"', 1)[1].split("</li>", 1)[0]
    return re.search(r'<span class="saved" data-state="(\w+)"[^>]*>([^<]*)<', card).groups()


def test_viewing_a_unit_changes_nothing_the_page_shows():
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1)
    grader = graders_of(campaign)[0]
    first = my_units(grader, campaign)[0]
    record(grader, campaign, "unit_viewed", {}, unit=first)
    html = page_of(grader, campaign)
    assert state_of(html, first) == ("unrated", "Not rated yet")
    assert "Saved<" not in html
    assert "0 of 3 here" in html and "0 of 3 in all" in html


def test_a_unit_is_partly_rated_saved_skipped_and_unskipped_as_stored():
    campaign = make_campaign(n_queries=1, n_candidates=3, graders=1)
    grader = graders_of(campaign)[0]
    a, b, c = my_units(grader, campaign)
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=a, seq=1)
    record(grader, campaign, "fine_set", {"value": 7.5}, unit=b, seq=2)
    record(grader, campaign, "broad_set", {"value": "SS"}, unit=b, seq=3)
    record(grader, campaign, "skip", {"reason": "cannot hear it"}, unit=c, seq=4)
    html = page_of(grader, campaign)
    assert state_of(html, a) == ("partial", "Partly rated: FINE missing")
    assert state_of(html, b) == ("saved", "Saved")
    assert state_of(html, c) == ("skipped", "Skipped")
    assert "1 of 3 here" in html and '<span class="n">1</span> skipped' in html

    outcome = record(grader, campaign, "skip_undone", {}, unit=c, seq=5)
    assert outcome.judgment.skipped is False
    assert Assignment.objects.get(grader=grader, unit=c).status == AssignmentStatus.OPEN
    assert state_of(page_of(grader, campaign), c) == ("unrated", "Not rated yet")
    assert GradingEvent.objects.filter(unit=c, type="skip_undone").count() == 1
    assert GradingEvent.objects.get(unit=c, type="skip").payload == {"reason": "cannot hear it"}


def test_an_older_skip_arriving_late_does_not_undo_the_undoing():
    campaign = make_campaign(n_queries=1, n_candidates=1, graders=1)
    grader = graders_of(campaign)[0]
    unit = my_units(grader, campaign)[0]
    record(grader, campaign, "skip_undone", {}, unit=unit, seq=2, session_id="s")
    record(grader, campaign, "skip", {}, unit=unit, seq=1, session_id="s")
    assert Judgment.objects.get(grader=grader, unit=unit).skipped is False


def test_a_saved_comment_is_on_the_card_and_an_edit_replaces_it():
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1)
    grader = graders_of(campaign)[0]
    unit = my_units(grader, campaign)[0]
    record(grader, campaign, "comment", {"text": "clip is cut short"}, unit=unit, seq=1)
    html = page_of(grader, campaign)
    assert "clip is cut short</textarea>" in html and "Comment saved" in html
    record(grader, campaign, "comment", {"text": "clip is cut short at 0:20"}, unit=unit, seq=2)
    assert Judgment.objects.get(grader=grader, unit=unit).comment == "clip is cut short at 0:20"


def test_page_focus_events_need_a_visible_flag():
    campaign = make_campaign(n_queries=1, n_candidates=1, graders=1)
    grader = graders_of(campaign)[0]
    unit = my_units(grader, campaign)[0]
    record(grader, campaign, "page_focus", {"visible": False}, unit=unit)
    with pytest.raises(InvalidValue, match="payload.visible must be true or false"):
        record(grader, campaign, "page_focus", {"visible": "no"}, unit=unit)
    assert not Judgment.objects.filter(grader=grader, unit=unit).exists()  # focus is not a judgment


def test_unrated_sliders_and_number_fields_show_no_value():
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=0, n_candidates=2, graders=1)
    grader = graders_of(campaign)[0]
    html = page_of(grader, campaign)
    assert html.count('data-unset="1"') == 2
    assert re.findall(r'class="score-number"[^>]*value="([^"]*)"', html) == ["", ""]


def test_the_campaign_words_its_ordering_and_pairwise_pages():
    ordering = make_campaign(
        scheme=Scheme.ORDERING, n_queries=1, n_candidates=3, graders=1, scheme_params={"first": "best"}
    )
    assert "<strong>best first</strong>" in page_of(graders_of(ordering)[0], ordering)
    default = make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=3, graders=1)
    assert "<strong>most similar first</strong>" in page_of(graders_of(default)[0], default)
    pairwise = make_campaign(
        scheme=Scheme.PAIRWISE, n_queries=0, n_candidates=2, graders=1, scheme_params={"attribute": "danceable"}
    )
    html = page_of(graders_of(pairwise)[0], pairwise)
    assert "Which is more danceable: A, B, or equal?" in html and "A is more" not in html
    with pytest.raises(InvalidValue, match="scheme_params.first must be a non-empty text"):
        make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=2, graders=1, scheme_params={"first": ""})


def test_next_unrated_points_past_complete_pages_and_the_complete_page_offers_it():
    campaign = make_campaign(n_queries=3, n_candidates=1, graders=1)
    grader = graders_of(campaign)[0]
    units = my_units(grader, campaign)
    assert len(units) == 3
    for unit in units[:2]:
        record(grader, campaign, "broad_set", {"value": "NS"}, unit=unit)
        record(grader, campaign, "fine_set", {"value": 1.0}, unit=unit)
    html = page_of(grader, campaign, 1)
    config = re.search(r'"nextUnratedUrl": "([^"]+)"', html).group(1)
    assert config.endswith("/grade/3/")
    assert re.search(r'id="page-complete"[^>]*>', html).group(0).find("hidden") == -1
    assert f'href="/campaigns/{campaign.pk}/grade/3/">Go to the next page with unrated units' in html
