"""Model-based truth in the analysis run, the report and the ground-truth export."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from analysis import export
from analysis.metrics.dawid_skene import bias_noise, dawid_skene
from analysis.models import AnalysisRun
from analysis.presentation.report_tables import report_tables
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Judgment

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(judged_campaign) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=3)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def _judgments(campaign, column):
    rows = Judgment.objects.filter(campaign=campaign).values_list("unit_id", "grader_id", column)
    return pd.DataFrame(list(rows), columns=["unit", "grader", "value"])


def test_the_run_stores_each_graders_reliability_by_pseudonym(run, judged_campaign):
    model = run.result["model"]
    ds, bn = model["dawid_skene"], model["bias_noise"]
    assert len(ds["graders"]) == len(bn["graders"]) == 3
    pseudonyms = set(judged_campaign.roles.filter(role="grader").values_list("pseudonym", flat=True))
    assert {g["pseudonym"] for g in ds["graders"]} == pseudonyms
    expected = dawid_skene(_judgments(judged_campaign, "broad"), categories=["NS", "SS", "VS"])
    got = {g["grader"]: g["accuracy"] for g in ds["graders"]}
    assert got == pytest.approx(dict(zip(map(int, expected.graders), expected.accuracy, strict=True)))
    assert abs(sum(g["bias"] for g in bn["graders"])) < 1e-9
    tables = report_tables(run, show_names=False)
    assert len(tables["model_reliability"].rows) == 3 and len(tables["model_noise"].rows) == 3


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_ground_truth_has_the_model_label_and_score_with_their_uncertainty(run, judged_campaign, fmt):
    body = export.ground_truth_bytes(run, export.Filters(), fmt)
    if fmt == "csv":
        frame = pd.read_csv(io.StringIO(body.decode()), comment="#", float_precision="round_trip")
    elif fmt == "json":
        frame = pd.DataFrame(json.loads(body)["units"])
    else:
        frame = pd.read_parquet(io.BytesIO(body))
    assert len(frame) == judged_campaign.units.count() == 15
    ds = dawid_skene(_judgments(judged_campaign, "broad"), categories=["NS", "SS", "VS"])
    fine = _judgments(judged_campaign, "fine").astype({"value": float})
    bn = bias_noise(fine)
    frame = frame.set_index("unit_id").loc[ds.units]
    assert list(frame["model_label"]) == list(ds.labels)
    np.testing.assert_allclose(frame["model_probability"], ds.probability, rtol=1e-12)
    np.testing.assert_allclose(frame.loc[bn.units, "model_score"], bn.score, rtol=1e-12)
    np.testing.assert_allclose(frame.loc[bn.units, "model_se"], bn.score_se, rtol=1e-12)


def test_the_run_gives_the_uncertainty_policy_its_grader_model(judged_campaign):
    from grading.models import CampaignAllocation
    from grading.models.choices import Policy

    judged_campaign.policy = Policy.UNCERTAINTY
    judged_campaign.save()
    run = AnalysisRun.objects.create(campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=1)
    run_execute(run_id=run.pk)
    model = CampaignAllocation.objects.get(campaign=judged_campaign).model
    assert model["categories"] == ["NS", "SS", "VS"] and len(model["theta"]) == 3
    fitted = {
        g["grader"]: g["confusion"]
        for g in AnalysisRun.objects.get(pk=run.pk).result["model"]["dawid_skene"]["graders"]
    }
    assert model["theta"] == {str(g): c for g, c in fitted.items()}


def test_the_report_accounts_for_allocation(run, judged_campaign):
    acc = run.result["accounting"]
    assert acc["assignments"] == 45 and acc["judgments"] == 45 and acc["budget"] is None
    assert acc["units_settled"] + acc["units_open"] == 15
    sims = {(r["policy"], r["aggregation"]) for r in acc.get("simulated", [])}
    tables = report_tables(run, show_names=False)
    assert len(tables["accounting"].rows) >= 7
    assert not sims or ("fixed@max", "majority") in sims
    # The run counted the judgments with a value when it planned: the section counts them only without it.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from analysis.services.sections.accounting import accounting

    with CaptureQueriesContext(connection) as counted_here:
        assert accounting(campaign_id=judged_campaign.pk, model=run.result["model"]) == acc
    with CaptureQueriesContext(connection) as planned:
        assert accounting(campaign_id=judged_campaign.pk, model=run.result["model"], valued=45) == acc
    assert len(planned) == len(counted_here) - 1


def test_ground_truth_carries_the_adjudicated_value_and_flag(run, judged_campaign, organizer):
    from grading.services.adjudication import adjudication_record

    unit = judged_campaign.units.order_by("pk").first()
    adjudication_record(organizer=organizer, unit=unit, value="NS", note="checked")
    frame = pd.DataFrame(json.loads(export.ground_truth_bytes(run, export.Filters(), "json"))["units"])
    assert len(frame) == 15 and frame["adjudicated"].sum() == 1
    row = frame.set_index("unit_id").loc[unit.pk]
    assert row["adjudicated_value"] == "NS" and bool(row["adjudicated"])
