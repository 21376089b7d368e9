"""Degenerate campaigns and implausible stored timestamps: the analysis runs, the pages answer, and
the report says in words what cannot be computed and why."""

import re
from datetime import UTC, datetime
from html import unescape
from uuid import uuid4

import pytest

from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import GradingEvent
from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db
NO_PAIRS = "no unit has two or more judgments"


def analysed_page(client, campaign) -> tuple[AnalysisRun, str]:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=1)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    client.force_login(campaign.roles.get(role="organizer").user)
    response = client.get(f"/reports/campaigns/{campaign.pk}/")
    assert response.status_code == 200
    for unit in campaign.units.all()[:2]:
        assert client.get(f"/reports/campaigns/{campaign.pk}/units/{unit.pk}/").status_code == 200
    text = unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))
    return run, text


def judge(campaign, values: list[tuple[str, float | None]]) -> None:
    assignments = list(campaign.assignments.select_related("grader", "unit").order_by("pk"))
    assert len(assignments) >= len(values)
    for a, (broad, fine) in zip(assignments, values, strict=False):
        record(a.grader, campaign, "broad_set", {"value": broad}, unit=a.unit)
        if fine is not None:
            record(a.grader, campaign, "fine_set", {"value": fine}, unit=a.unit)


@pytest.mark.parametrize(
    "case,graders,values,words",
    [
        ("no judgments", 2, [], [NO_PAIRS]),
        ("one incomplete judgment", 2, [("VS", None)], [NO_PAIRS]),
        ("one judgment", 2, [("VS", 8.0)], [NO_PAIRS]),
        ("one grader", 1, [("NS", 1.0), ("SS", 5.0), ("VS", 9.0)], [NO_PAIRS, "no unit has two judgments yet"]),
        (
            "one category, all values equal",
            2,
            [("VS", 8.0)] * 6,
            ["all judgments are identical (expected agreement is 1)", "all pairable values are identical"],
        ),
    ],
)
def test_a_degenerate_campaign_is_analysed_and_the_report_says_what_cannot_be_computed(
    client, case, graders, values, words
):
    campaign = make_campaign(graders=graders, n_queries=1, n_candidates=3, organizer=make_user())
    judge(campaign, values)
    run, text = analysed_page(client, campaign)
    assert run.status == "succeeded", run.error
    for phrase in words:
        assert phrase in text, (case, phrase)


def test_a_numeric_campaign_with_all_scores_equal_is_explained(client):
    campaign = make_campaign(scheme=Scheme.NUMERIC, graders=2, n_queries=0, n_candidates=3, organizer=make_user())
    for a in campaign.assignments.select_related("grader", "unit"):
        record(a.grader, campaign, "score_set", {"value": 3}, unit=a.unit)
    run, text = analysed_page(client, campaign)
    assert run.status == "succeeded" and "all pairable values are identical" in text


@pytest.mark.parametrize("stamp", [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=UTC)])
def test_a_campaign_holding_an_implausible_stored_timestamp_still_analyses_and_says_so(client, stamp):
    """Events written by an older version, before client_ts was checked, stay in the append-only log."""
    campaign = make_campaign(graders=2, n_queries=1, n_candidates=2, organizer=make_user())
    judge(campaign, [("VS", 8.0), ("SS", 5.0), ("VS", 7.0), ("NS", 2.0)])
    a = campaign.assignments.select_related("grader", "unit").first()
    GradingEvent.objects.bulk_create(
        [
            GradingEvent(
                id=uuid4(),
                campaign=campaign,
                grader=a.grader,
                unit=a.unit,
                query_id=a.unit.query_id,
                type="broad_set",
                payload={"value": "NS"},
                client_ts=stamp,
                server_ts=datetime.now(UTC),
                session_id="old",
                seq=1,
                guidelines_version=1,
            )
        ]
    )
    run, text = analysed_page(client, campaign)
    assert run.status == "succeeded", run.error
    assert "1 event has a client timestamp outside the accepted window" in text and "server's arrival time" in text
    assert client.get(f"/reports/campaigns/{campaign.pk}/units/{a.unit.pk}/").status_code == 200
