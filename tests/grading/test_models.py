"""Database constraints hold on SQLite and PostgreSQL; the event log cannot be changed."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction

from analysis.models import AnalysisRun
from grading.models import Assignment, Campaign, GradingEvent, Judgment
from grading.models.judgments import AppendOnlyError
from tests.factories import make_campaign, record

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


@pytest.fixture
def campaign() -> Campaign:
    return make_campaign(n_queries=1, n_candidates=2)


def refused(**create) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create.pop("model").objects.create(**create)


def test_one_grader_cannot_have_two_judgments_of_one_unit(campaign):
    grader, unit = campaign.roles.first().user, campaign.units.first()
    Judgment.objects.create(campaign=campaign, grader=grader, unit=unit, broad="VS")
    refused(model=Judgment, campaign=campaign, grader=grader, unit=unit, broad="NS")


@pytest.mark.parametrize("fine", [Decimal("10.1"), Decimal("-0.1")])
def test_fine_must_lie_within_0_and_10(campaign, fine):
    refused(
        model=Judgment, campaign=campaign, grader=campaign.roles.first().user, unit=campaign.units.first(), fine=fine
    )


def test_broad_must_be_a_known_category(campaign):
    refused(
        model=Judgment, campaign=campaign, grader=campaign.roles.first().user, unit=campaign.units.first(), broad="XX"
    )


def test_maximum_overlap_is_at_least_the_initial_overlap(campaign):
    with pytest.raises(IntegrityError), transaction.atomic():
        Campaign.objects.filter(pk=campaign.pk).update(initial_overlap=4, max_overlap=3)


def test_an_assignment_needs_a_unit_or_a_query(campaign):
    refused(model=Assignment, campaign=campaign, grader=campaign.roles.first().user)


def test_a_grader_is_assigned_a_unit_once(campaign):
    a = Assignment.objects.filter(campaign=campaign).first()
    refused(model=Assignment, campaign=campaign, grader=a.grader, unit=a.unit)


def test_analysis_progress_stays_within_0_and_100(campaign):
    refused(model=AnalysisRun, campaign=campaign, progress=101)


def test_only_one_automatic_run_waits_per_campaign(campaign):
    AnalysisRun.objects.create(campaign=campaign, trigger="auto", status="queued")
    refused(model=AnalysisRun, campaign=campaign, trigger="auto", status="queued")
    AnalysisRun.objects.create(campaign=campaign, trigger="manual", status="queued")


def test_the_orm_refuses_to_update_or_delete_an_event(campaign):
    grader = campaign.roles.first().user
    event = record(grader, campaign, "unit_viewed", unit=campaign.assignments.filter(grader=grader).first().unit).event
    event.payload = {"tampered": True}
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        GradingEvent.objects.filter(pk=event.pk).update(payload={})
    with pytest.raises(AppendOnlyError):
        GradingEvent.objects.all().delete()
    assert GradingEvent.objects.get(pk=event.pk).payload == {}


@pytest.mark.postgres
def test_postgres_itself_refuses_update_and_delete_of_events(campaign):
    grader = campaign.roles.first().user
    event = record(grader, campaign, "unit_viewed", unit=campaign.assignments.filter(grader=grader).first().unit).event
    for sql in (
        "UPDATE grading_gradingevent SET seq = 99 WHERE id = %s",
        "DELETE FROM grading_gradingevent WHERE id = %s",
    ):
        with pytest.raises(Exception, match="append-only"), transaction.atomic(), connection.cursor() as cur:
            cur.execute(sql, [event.pk.hex if connection.vendor == "sqlite" else event.pk])
    assert GradingEvent.objects.filter(pk=event.pk, seq=0).exists()


def test_a_new_event_is_stored_with_the_current_guidelines_version(campaign):
    grader = campaign.roles.first().user
    unit = campaign.assignments.filter(grader=grader).first().unit
    event = record(
        grader, campaign, "broad_set", {"value": "SS"}, unit=unit, client_ts=datetime.now(UTC) - timedelta(days=30)
    ).event
    assert event.guidelines_version == campaign.guidelines_version == 1
