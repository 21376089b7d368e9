"""What the report says about graders' own words and time: comments, skips, durations people read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analysis.models import AnalysisRun
from analysis.presentation.report_tables import format_duration
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Assignment
from tests.factories import record

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (4.24, "4.2 s"),
        (42.4, "42 s"),
        (89.4, "89 s"),
        (90, "1.5 min"),
        (3000, "50.0 min"),
        (5400, "1.5 h"),
        (86400 * 3, "72.0 h"),
        (None, "—"),
        (float("nan"), "—"),
    ],
)
def test_durations_read_as_seconds_minutes_or_hours(seconds, text):
    assert format_duration(seconds) == text


def test_the_report_counts_skips_lists_comments_and_shows_active_time_in_minutes(client, judged_campaign, organizer):
    campaign = judged_campaign
    first = Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").first()
    grader, unit = first.grader, first.unit
    record(grader, campaign, "comment", {"text": "the clip cuts off early"}, unit=unit)
    record(grader, campaign, "skip", {"reason": "no sound"}, unit=unit)
    # Ten busy minutes on one unit for one grader (an event each minute): active time, in minutes.
    start = datetime.now(UTC) - timedelta(hours=1)
    for minute in range(11):
        record(grader, campaign, "unit_viewed", {}, unit=unit, client_ts=start + timedelta(minutes=minute))
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=1)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.result["overview"]["skips"] == 1 and run.result["overview"]["judgments_skipped_now"] == 1
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{campaign.pk}/").content.decode()
    assert 'id="section-comments"' in html and "the clip cuts off early" in html
    assert "Skips</td>" in html
    assert " min</td>" in html and "e+0" not in html  # durations read as minutes, never 1.2e+05
    unit_page = client.get(f"/reports/campaigns/{campaign.pk}/units/{unit.pk}/").content.decode()
    assert "the clip cuts off early" in unit_page and "Comments from graders" in unit_page


def test_the_event_frame_marks_a_hidden_page_so_that_active_time_stops(judged_campaign):
    from analysis import selectors
    from analysis.metrics import engagement

    campaign = judged_campaign
    first = Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").first()
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    steps = [
        (0, "unit_viewed", {}),
        (30, "page_focus", {"visible": False}),
        (900, "page_focus", {"visible": True}),
        (960, "unit_viewed", {}),
    ]
    for seconds, kind, payload in steps:
        record(first.grader, campaign, kind, payload, unit=first.unit, client_ts=start + timedelta(seconds=seconds))
    frame = selectors.unit_events_frame(campaign_id=campaign.pk)
    mine = frame[(frame["grader"] == first.grader_id) & frame["ts"].between(start, start + timedelta(hours=1))]
    assert list(mine.sort_values("ts")["type"]) == ["unit_viewed", "page_hidden", "page_focus", "unit_viewed"]
    # 0→30 s on the unit, hidden 30→900 s not counted, 900→960 s counted.
    assert engagement(mine[["grader", "unit", "ts", "type"]]).loc[(first.grader_id, first.unit_id), "seconds"] == 90
