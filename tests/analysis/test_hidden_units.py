"""Hidden units in the analysis: gold judgments stay out of agreement and truth, and each grader's
accuracy on gold (and test–retest agreement on repeats) is reported."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis import selectors
from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from analysis.services.hidden_units import gold_scores, repeat_scores
from analysis.services.tables import report_tables
from grading.models import Judgment, Unit
from grading.services.gold import gold_set


def test_gold_scores_on_a_hand_made_case():
    frame = pd.DataFrame({"grader": [2, 1, 1, 2], "value": ["NS", "VS", "SS", "VS"], "gold": ["VS", "VS", "VS", "VS"]})
    scores = gold_scores(frame, numeric=False)
    assert scores.to_dict("records") == [{"grader": 1, "n": 2, "accuracy": 0.5}, {"grader": 2, "n": 2, "accuracy": 0.5}]
    numeric = pd.DataFrame({"grader": [1, 1, 3], "value": [7.0, 5.0, 2.5], "gold": ["8.0", "5.0", "4.0"]})
    assert gold_scores(numeric, numeric=True).to_dict("records") == [
        {"grader": 1, "n": 2, "mae": 0.5}, {"grader": 3, "n": 1, "mae": 1.5}]


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
    assert unit.pk not in {u.unit_id for u in run.unit_results.all()}
    table = report_tables(run, show_names=False)["gold"]
    assert len(table.rows) == 3 and {r["score"] for r in table.rows} <= {0.0, 1.0}
