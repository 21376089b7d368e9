"""A grader who has finished asks for more, and the campaign's policy may have a unit for them."""

import pytest
from django.urls import reverse

from grading.models import Assignment
from grading.models.choices import AssignmentSource, Policy, Role
from grading.selectors import UNITS_PER_PAGE
from grading.services.allocation import (
    ALREADY_JUDGED,
    BUDGET_SPENT,
    MAX_OVERLAP_REACHED,
    NOTHING_NEEDED,
    OTHERS_JUDGING,
    assignment_next_explained,
    units_wanting_more,
)
from grading.services.campaigns import role_grant
from grading.services.more_work import OWN_WORK_OPEN, more_work_request, reason_message
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def disagreement():
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=3, overlap=2)
    campaign.policy = Policy.CONSENSUS
    campaign.save()
    unit = campaign.units.first()
    judges = [a.grader for a in Assignment.objects.filter(unit=unit)]
    for grader, broad in zip(judges, ["VS", "NS"], strict=True):
        record(grader, campaign, "broad_set", {"value": broad}, unit=unit)
        record(grader, campaign, "fine_set", {"value": 5.0}, unit=unit)
    third = next(r.user for r in campaign.roles.all() if r.user not in judges)
    Assignment.objects.filter(grader=third).delete()  # the third grader has nothing open
    return campaign, unit, third


def test_asking_for_more_gives_a_disagreeing_unit_an_extra_grader_and_lands_on_its_page(client, disagreement):
    campaign, unit, third = disagreement
    client.force_login(third)
    response = client.post(reverse("grading:more", args=[campaign.pk]))
    assert response.status_code == 302 and response.url == reverse("grading:grade", args=[campaign.pk, 1])
    extra = Assignment.objects.get(grader=third)
    assert (extra.unit, extra.source) == (unit, AssignmentSource.ADAPTIVE)
    page = client.get(response.url).content.decode()
    assert "1 more unit added for you" in page


def disagree_on(campaign, units):
    for unit in units:
        judges = [a.grader for a in Assignment.objects.filter(unit=unit)]
        for grader, broad in zip(judges, ["VS", "NS"], strict=True):
            record(grader, campaign, "broad_set", {"value": broad}, unit=unit)
            record(grader, campaign, "fine_set", {"value": 5.0}, unit=unit)


@pytest.fixture
def wide_disagreement():
    """Two graders disagree on each of 6 units; a newcomer has nothing assigned."""
    campaign = make_campaign(n_queries=0, n_candidates=6, graders=3, overlap=2)
    campaign.policy = Policy.CONSENSUS
    campaign.save()
    disagree_on(campaign, list(campaign.units.all()))
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role=Role.GRADER)
    return campaign, newcomer


def test_a_batch_is_as_large_as_the_campaign_says(client, wide_disagreement):
    campaign, third = wide_disagreement
    campaign.policy_params = {"batch_size": 2}
    campaign.save()
    result = more_work_request(grader=third, campaign=campaign)
    assert result.added == 2 and result.reason is None
    assert len({a.unit_id for a in result.assignments}) == 2
    assert Assignment.objects.filter(grader=third, source=AssignmentSource.ADAPTIVE).count() == 2


def test_the_default_batch_is_one_page_or_all_there_is(client, wide_disagreement):
    campaign, third = wide_disagreement
    wanted = len(units_wanting_more(campaign))
    result = more_work_request(grader=third, campaign=campaign)
    assert wanted >= 2 and result.added == min(wanted, UNITS_PER_PAGE)
    client.force_login(third)
    page = client.post(reverse("grading:more", args=[campaign.pk]), follow=True).content.decode()
    # nothing more to add while the batch is open, and the grader is told so (the next API serves the batch)
    assert "No more units for you" in page and "You still have units of your own to judge" in page


@pytest.mark.parametrize(
    ("change", "reason", "words"),
    [
        ({"policy": Policy.FIXED}, NOTHING_NEEDED, "fixed number of graders"),
        ({"budget": 1}, BUDGET_SPENT, "budget is spent"),
        ({"max_overlap": 2}, MAX_OVERLAP_REACHED, "most graders the campaign allows (2)"),
    ],
)
def test_when_nothing_is_added_the_grader_is_told_why(client, wide_disagreement, change, reason, words):
    campaign, third = wide_disagreement
    for key, value in change.items():
        setattr(campaign, key, value)
    campaign.save()
    result = more_work_request(grader=third, campaign=campaign)
    assert (result.added, result.reason) == (0, reason)
    client.force_login(third)
    page = client.post(reverse("grading:more", args=[campaign.pk]), follow=True).content.decode()
    assert words in page


def two_graders(n_units=4, **settings):
    """Units judged by two graders each, under the settings given (policy, max_overlap, budget)."""
    campaign = make_campaign(n_queries=0, n_candidates=n_units, graders=2, overlap=2)
    for key, value in settings.items():
        setattr(campaign, key, value)
    campaign.save()
    return campaign


def agreeing_at_the_maximum():
    """Every unit has its maximum overlap and its graders agree: a newcomer has nothing to do, and no
    unit is held back by the maximum."""
    campaign = two_graders(policy=Policy.CONSENSUS, max_overlap=2)
    for a in Assignment.objects.filter(campaign=campaign):
        record(a.grader, campaign, "broad_set", {"value": "VS"}, unit=a.unit)
        record(a.grader, campaign, "fine_set", {"value": 8.0}, unit=a.unit)
    return campaign


def spent_budget():
    campaign = two_graders(policy=Policy.CONSENSUS, budget=8)
    disagree_on(campaign, list(campaign.units.all()))
    return campaign


def capped_disagreement():
    campaign = two_graders(policy=Policy.CONSENSUS, max_overlap=2)
    disagree_on(campaign, list(campaign.units.all()))
    return campaign


def fixed_overlap():
    campaign = two_graders()
    disagree_on(campaign, list(campaign.units.all()))
    return campaign


@pytest.mark.parametrize("situation", [agreeing_at_the_maximum, spent_budget, capped_disagreement, fixed_overlap])
def test_the_page_gives_the_reason_the_next_api_gives(client, situation):
    campaign = situation()
    newcomer, other = make_user(), make_user()
    for user in (newcomer, other):
        role_grant(campaign=campaign, user=user, role=Role.GRADER)
    result = more_work_request(grader=newcomer, campaign=campaign)
    client.force_login(other)
    api = client.post("/api/assignments/next/", {"campaign": campaign.pk}, content_type="application/json")
    explained = assignment_next_explained(grader=other, campaign=campaign)
    assert api.status_code == 204 and explained.assignment is None
    assert api.headers["Evalutron-Reason"] == explained.reason
    assert result.added == 0 and result.reason == explained.reason
    page = client.post(reverse("grading:more", args=[campaign.pk]), follow=True).content.decode()
    assert reason_message(campaign=campaign, reason=explained.reason).replace("'", "&#x27;") in page


def test_when_no_unit_needs_them_the_grader_is_thanked(client, disagreement):
    campaign, unit, third = disagreement
    campaign.policy = Policy.FIXED
    campaign.save()
    client.force_login(third)
    response = client.post(reverse("grading:more", args=[campaign.pk]), follow=True)
    assert "fixed number of graders" in response.content.decode()
    assert not Assignment.objects.filter(grader=third).exists()


def test_it_takes_only_post(client, disagreement):
    campaign, _, third = disagreement
    client.force_login(third)
    assert client.get(reverse("grading:more", args=[campaign.pk])).status_code == 405


def test_with_open_work_of_their_own_the_grader_is_told_to_finish_it_which_the_next_api_serves(client):
    campaign = make_campaign(n_queries=0, n_candidates=4, graders=2, overlap=2)
    campaign.policy = Policy.CONSENSUS
    campaign.save()
    grader = Assignment.objects.filter(campaign=campaign).first().grader
    result = more_work_request(grader=grader, campaign=campaign)
    assert (result.added, result.reason) == (0, OWN_WORK_OPEN)
    client.force_login(grader)
    page = client.post(reverse("grading:more", args=[campaign.pk]), follow=True).content.decode()
    assert "You still have units of your own to judge" in page
    served = client.post("/api/assignments/next/", {"campaign": campaign.pk}, content_type="application/json")
    mine = Assignment.objects.filter(grader=grader, status="open", source=AssignmentSource.INITIAL)
    assert served.status_code == 200 and served.json()["id"] in set(mine.values_list("pk", flat=True))


def asked_by_all(client, campaign, grader, reason):
    """More work, the next API and the page all give `reason` to this grader."""
    result = more_work_request(grader=grader, campaign=campaign)
    assert (result.added, result.reason) == (0, reason)
    client.force_login(grader)
    api = client.post("/api/assignments/next/", {"campaign": campaign.pk}, content_type="application/json")
    assert (api.status_code, api.headers["Evalutron-Reason"]) == (204, reason)
    page = client.post(reverse("grading:more", args=[campaign.pk]), follow=True).content.decode()
    assert reason_message(campaign=campaign, reason=reason).replace("'", "&#x27;") in page


def test_graders_who_judged_every_unit_that_needs_more_are_told_so(client):
    campaign = two_graders(3, policy=Policy.CONSENSUS, max_overlap=3)
    disagree_on(campaign, list(campaign.units.all()))  # every unit wants a third grader, not these two
    asked_by_all(client, campaign, Assignment.objects.filter(campaign=campaign).first().grader, ALREADY_JUDGED)


def test_while_other_graders_are_still_judging_a_newcomer_is_asked_to_come_back(client):
    campaign = two_graders(3, policy=Policy.CONSENSUS, max_overlap=3)
    first = Assignment.objects.filter(campaign=campaign).first().grader
    for a in Assignment.objects.filter(campaign=campaign, grader=first):  # the other grader has not started
        record(first, campaign, "broad_set", {"value": "VS"}, unit=a.unit)
        record(first, campaign, "fine_set", {"value": 8.0}, unit=a.unit)
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role=Role.GRADER)
    asked_by_all(client, campaign, newcomer, OTHERS_JUDGING)
