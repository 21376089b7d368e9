"""The organizer's page of one unit: judgments by pseudonym, events, statistics; never for graders."""

import pytest
from django.urls import reverse

from grading.models import Assignment
from grading.models.choices import Role
from grading.services.campaigns import role_grant
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged():
    organizer = make_user("olga")
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=2, organizer=organizer)
    unit = campaign.units.first()
    for role in campaign.roles.filter(role=Role.GRADER):
        record(role.user, campaign, "broad_set", {"value": "VS"}, unit=unit)
        record(role.user, campaign, "fine_set", {"value": 8.5}, unit=unit)
    return campaign, unit, organizer


def url(campaign, unit):
    return reverse("analysis:unit", args=[campaign.pk, unit.pk])


def test_an_organizer_sees_judgments_and_events_by_pseudonym_only(client, judged):
    campaign, unit, organizer = judged
    client.force_login(organizer)
    page = client.get(url(campaign, unit)).content.decode()
    graders = [r.user.username for r in campaign.roles.filter(role=Role.GRADER)]
    assert len(graders) >= 2
    assert "G01" in page and "G02" in page and "broad_set" in page and "8.5" in page
    assert not any(name in page for name in graders)


def test_an_admin_also_sees_usernames(client, judged):
    campaign, unit, _ = judged
    client.force_login(make_user(is_staff=True))
    page = client.get(url(campaign, unit)).content.decode()
    roles = campaign.roles.filter(role=Role.GRADER)
    assert roles.count() >= 2
    assert all(r.user.username in page for r in roles)


def test_graders_and_other_organizers_are_refused(client, judged):
    campaign, unit, _ = judged
    client.force_login(Assignment.objects.filter(campaign=campaign).first().grader)
    assert client.get(url(campaign, unit)).status_code == 403
    other = make_campaign(n_queries=1, n_candidates=1, graders=1)
    stranger = make_user()
    role_grant(campaign=other, user=stranger, role=Role.ORGANIZER)
    client.force_login(stranger)
    assert client.get(url(campaign, unit)).status_code == 404  # they may not know the campaign exists


def test_a_unit_of_another_campaign_is_not_found(client, judged):
    campaign, _, organizer = judged
    other = make_campaign(n_queries=1, n_candidates=1, graders=1)
    client.force_login(organizer)
    assert client.get(reverse("analysis:unit", args=[campaign.pk, other.units.first().pk])).status_code == 404


def test_the_report_links_the_most_confusable_units_to_their_pages(client, judged, django_capture_on_commit_callbacks):
    from django.core.management import call_command

    campaign, unit, organizer = judged
    with django_capture_on_commit_callbacks(execute=True):  # embedded: the run executes as it commits
        call_command("run_analysis", str(campaign.pk))
    client.force_login(organizer)
    page = client.get(reverse("analysis:report", args=[campaign.pk])).content.decode()
    assert f'href="{url(campaign, unit)}"' in page
