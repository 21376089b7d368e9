"""A grader who has finished asks for more, and the campaign's policy may have a unit for them."""
import pytest
from django.urls import reverse

from grading.models import Assignment
from grading.models.choices import AssignmentSource, Policy
from tests.factories import make_campaign, record

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


def test_asking_for_more_gives_a_disagreeing_unit_an_extra_grader(client, disagreement):
    campaign, unit, third = disagreement
    client.force_login(third)
    response = client.post(reverse("grading:more", args=[campaign.pk]))
    assert response.status_code == 302 and response.url == reverse("grading:continue", args=[campaign.pk])
    extra = Assignment.objects.get(grader=third)
    assert (extra.unit, extra.source) == (unit, AssignmentSource.ADAPTIVE)


def test_when_no_unit_needs_them_the_grader_is_thanked(client, disagreement):
    campaign, unit, third = disagreement
    campaign.policy = Policy.FIXED
    campaign.save()
    client.force_login(third)
    response = client.post(reverse("grading:more", args=[campaign.pk]), follow=True)
    assert "needs you right now" in response.content.decode()
    assert not Assignment.objects.filter(grader=third).exists()


def test_it_takes_only_post(client, disagreement):
    campaign, _, third = disagreement
    client.force_login(third)
    assert client.get(reverse("grading:more", args=[campaign.pk])).status_code == 405
