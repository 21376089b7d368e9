"""Hidden units in the analysis: gold judgments stay out of agreement and truth, and each grader's
accuracy on gold (and test–retest agreement on repeats) is reported."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis import selectors, unit_blocks
from analysis.models import AnalysisRun
from analysis.presentation.report_tables import report_tables
from analysis.services import runs
from analysis.services.execute import run_execute
from analysis.services.sections.hidden_units import gold_scores, repeat_scores
from grading.models import GradingEvent, Judgment, Unit
from grading.models.choices import Role
from grading.services.campaigns import role_grant
from grading.services.gold import gold_remove, gold_set


def test_gold_scores_on_a_hand_made_case():
    frame = pd.DataFrame({"grader": [2, 1, 1, 2], "value": ["NS", "VS", "SS", "VS"], "gold": ["VS", "VS", "VS", "VS"]})
    scores = gold_scores(frame, numeric=False)
    assert scores.to_dict("records") == [{"grader": 1, "n": 2, "accuracy": 0.5}, {"grader": 2, "n": 2, "accuracy": 0.5}]
    numeric = pd.DataFrame({"grader": [1, 1, 3], "value": [7.0, 5.0, 2.5], "gold": ["8.0", "5.0", "4.0"]})
    assert gold_scores(numeric, numeric=True).to_dict("records") == [
        {"grader": 1, "n": 2, "mae": 0.5},
        {"grader": 3, "n": 1, "mae": 1.5},
    ]


def test_repeat_scores_on_a_hand_made_case():
    frame = pd.DataFrame({"grader": [1, 1, 1, 2], "first": ["VS", "SS", "NS", "SS"], "again": ["VS", "VS", "NS", "SS"]})
    scores = repeat_scores(frame, numeric=False)
    assert len(scores) == 2
    assert scores.iloc[0]["n"] == 3 and scores.iloc[0]["identical"] == pytest.approx(2 / 3)
    assert scores.iloc[1]["n"] == 1 and scores.iloc[1]["identical"] == 1.0
    numeric = pd.DataFrame({"grader": [4, 4], "first": [3.0, 6.5], "again": [4.0, 6.0]})
    assert repeat_scores(numeric, numeric=True).to_dict("records") == [{"grader": 4, "n": 2, "mean_abs_diff": 0.75}]


@pytest.mark.django_db
def test_gold_judgments_leave_agreement_and_truth_and_are_scored_per_grader(judged_campaign, organizer):
    unit = Unit.objects.filter(campaign=judged_campaign).order_by("pk").first()
    gold_set(organizer=organizer, campaign=judged_campaign, unit_external_id=unit.external_id, value="VS")
    frame = selectors.judgments_frame(campaign_id=judged_campaign.pk)
    assert len(frame) == 42 and unit.pk not in set(frame["unit"])
    run = AnalysisRun.objects.create(campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=3)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    gold = run.result["hidden_units"]["gold"]
    judged = dict(Judgment.objects.filter(unit=unit).values_list("grader_id", "broad"))
    assert gold["measure"] == "accuracy" and gold["units"] == 1 and len(gold["graders"]) == 3 == len(judged)
    for g in gold["graders"]:
        assert g["n"] == 1 and g["accuracy"] == (1.0 if judged[g["grader"]] == "VS" else 0.0)
    assert run.result["agreement"]["units_rated"] == 14
    assert unit.pk not in set(unit_blocks.RunUnits(run.pk).frame(["unit"])["unit"])
    table = report_tables(run, show_names=False)["gold"]
    assert len(table.rows) == 3 and {r["score"] for r in table.rows} <= {0.0, 1.0}


@pytest.mark.django_db
def test_the_report_page_shows_gold_and_repeat_figures(client, organizer):
    from grading.models import Assignment
    from tests.factories import make_campaign, record
    from tests.grading.api_helpers import graders_of

    campaign = make_campaign(n_queries=0, n_candidates=16, graders=1, organizer=organizer)
    campaign.policy_params = {"repeat_share": 0.1}
    campaign.save(update_fields=["policy_params"])
    grader = graders_of(campaign)[0]
    gold_set(organizer=organizer, campaign=campaign, unit_external_id="u0-15", value="SS")
    for a in Assignment.objects.filter(grader=grader).order_by("position", "pk")[:12]:  # the last is gold
        record(grader, campaign, "broad_set", {"value": "VS"}, unit=a.unit_id)
        record(grader, campaign, "fine_set", {"value": 9.0}, unit=a.unit_id)
    repeat = Assignment.objects.get(repeat=True)
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=repeat.unit_id)
    record(grader, campaign, "fine_set", {"value": 8.0}, unit=repeat.unit_id)
    gold_unit = Unit.objects.get(campaign=campaign, external_id="u0-15")
    record(grader, campaign, "broad_set", {"value": "VS"}, unit=gold_unit)
    record(grader, campaign, "fine_set", {"value": 9.0}, unit=gold_unit)
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=1)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    hidden = run.result["hidden_units"]
    assert [(g["n"], g["accuracy"]) for g in hidden["gold"]["graders"]] == [(1, 0.0)]
    assert [(g["n"], g["identical"], g["mean_abs_diff"]) for g in hidden["repeats"]["graders"]] == [(1, 1.0, 1.0)]
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{campaign.pk}/").content.decode()
    assert 'id="section-hidden-units"' in html and 'id="table-gold"' in html and 'id="table-repeats"' in html
    assert "Same answer again" in html and "Mean absolute difference" in html and "Accuracy" in html
    csv_text = client.get(f"/reports/campaigns/{campaign.pk}/tables/repeats.csv").content.decode()
    assert csv_text.splitlines()[0] == "who,n,identical,mean_abs_diff,excluded" and len(csv_text.splitlines()) == 2


@pytest.mark.django_db
def test_gold_events_stay_out_of_the_graders_event_statistics(judged_campaign, organizer):
    # The organizer also grades here, so their gold events carry the id of someone with judgments.
    role_grant(campaign=judged_campaign, user=organizer, role=Role.GRADER)
    before = selectors.unit_events_frame(campaign_id=judged_campaign.pk)
    unit = Unit.objects.filter(campaign=judged_campaign).order_by("pk").first()
    gold_set(organizer=organizer, campaign=judged_campaign, unit_external_id=unit.external_id, value="VS")
    gold_remove(organizer=organizer, campaign=judged_campaign, unit_external_id=unit.external_id)
    assert GradingEvent.objects.filter(campaign=judged_campaign, grader=organizer).count() == 2
    after = selectors.unit_events_frame(campaign_id=judged_campaign.pk)
    assert len(before) > 0 and len(after) == len(before)
    assert not set(after["type"]) & {"gold_set", "gold_removed"}


def test_the_overview_counts_from_a_runs_reading_what_the_database_counts(judged_campaign, organizer):
    """The overview starts from the judgments a run read (not gold, not skipped, not excluded) and
    adds gold units' judgments from the database: the same counts as the database's alone."""
    from analysis.services.judgments import FrameJudgments
    from analysis.services.report import _judged
    from analysis.services.values import value_spec
    from grading.services.exclusion import grader_exclude

    units = list(Unit.objects.filter(campaign=judged_campaign).order_by("pk"))
    for unit in units[:2]:
        gold_set(organizer=organizer, campaign=judged_campaign, unit_external_id=unit.external_id, value="VS")
    skipped = Judgment.objects.filter(campaign=judged_campaign, unit=units[3]).first()
    Judgment.objects.filter(pk=skipped.pk).update(skipped=True)
    leaver = Judgment.objects.filter(campaign=judged_campaign).order_by("grader_id").values_list("grader", flat=True)[0]
    grader_exclude(
        campaign=judged_campaign, role=judged_campaign.roles.get(user_id=leaver, role="grader"), reason="x", actor=None
    )
    excluded = selectors.excluded_grader_ids(campaign_id=judged_campaign.pk)
    read = selectors.without_graders(selectors.judgments_frame(campaign_id=judged_campaign.pk), excluded)
    read_as_run = FrameJudgments(read, value_spec(judged_campaign))
    from_run = selectors.campaign_overview(
        campaign_id=judged_campaign.pk, excluded=excluded, judged=_judged(read_as_run)
    )
    from_database = selectors.campaign_overview(campaign_id=judged_campaign.pk, excluded=excluded)
    assert from_run == from_database
    # The event log as a run's plan counts it, grader by grader (the organizer's gold events too).
    log = selectors.EventLog.of(selectors.events_per_grader(campaign_id=judged_campaign.pk))
    planned = selectors.campaign_overview(
        campaign_id=judged_campaign.pk, excluded=excluded, judged=_judged(read_as_run), log=log
    )
    assert planned == from_database and planned["events"] > 0 and planned["span_seconds"] >= 0
    # With the judgments as the plan counts them too, the skipped ones are not counted again.
    judged = selectors.judgments_per_grader(campaign_id=judged_campaign.pk, value_field="broad")
    counted = selectors.EventLog.of(selectors.events_per_grader(campaign_id=judged_campaign.pk), judged)
    assert counted.skipped == 1 and selectors.EventLog.loaded(counted.stored()) == counted
    with CaptureQueriesContext(connection) as within:
        assert (
            selectors.campaign_overview(
                campaign_id=judged_campaign.pk, excluded=excluded, judged=_judged(read_as_run), log=counted
            )
            == from_database
        )
    with CaptureQueriesContext(connection) as without:
        selectors.campaign_overview(
            campaign_id=judged_campaign.pk, excluded=excluded, judged=_judged(read_as_run), log=log
        )
    assert len(within) == len(without) - 1
    # With the units as the plan counts them too (for its fingerprints), they are not counted again.
    with_units = replace(counted, units=selectors.CampaignUnits.counted(campaign_id=judged_campaign.pk).n)
    assert with_units.units == Unit.objects.filter(campaign=judged_campaign).count()
    assert selectors.EventLog.loaded(with_units.stored()) == with_units
    with CaptureQueriesContext(connection) as planned_units:
        assert (
            selectors.campaign_overview(
                campaign_id=judged_campaign.pk, excluded=excluded, judged=_judged(read_as_run), log=with_units
            )
            == from_database
        )
    assert len(planned_units) == len(within) - 1
    assert from_run["units_judged"] == len(units) and from_run["active_graders"] == 2
    assert from_run["judgments"] == len(read) + 2 * 2  # two gold units, judged by the two who count


def test_the_event_log_of_the_graders_is_the_campaigns_first_to_last():
    """The first and last server times are compared as times, not as text (an ISO stamp at a whole
    second has no fraction: "…:00+00:00" and "…:00.5+00:00" are ordered right, and so are offsets)."""
    from analysis.selectors import EventLog, GraderEvents

    logged = [
        GraderEvents(3, 2, "2026-11-02T10:00:00.500000+00:00", "2026-11-02T12:00:00+00:00"),
        GraderEvents(4, 5, "2026-11-02T10:00:00+00:00", "2026-11-02T13:30:00+02:00"),
        GraderEvents(9, 1, "2026-11-02T11:00:00+01:00", "2026-11-02T11:59:59.999999+00:00"),
    ]
    log = EventLog.of(logged)
    assert log == EventLog(8, "2026-11-02T10:00:00+00:00", "2026-11-02T12:00:00+00:00")
    assert EventLog.loaded(log.stored()) == log and EventLog.loaded(None) is None
    assert EventLog.of([]) == EventLog(0, None, None)
