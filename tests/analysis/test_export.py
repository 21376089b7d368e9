"""Ground truth and event-log exports: exact values in every format, filters, streaming, CLI."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.http import StreamingHttpResponse

from analysis import export
from analysis import metrics as m
from analysis.models import AnalysisRun
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import GradingEvent, Judgment
from grading.services.gold import gold_remove, gold_set
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(judged_campaign) -> AnalysisRun:
    run = AnalysisRun.objects.create(
        campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 100}), seed=11
    )
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def admin_client(client):
    client.force_login(make_user("root", is_staff=True))
    return client


def _expected(campaign) -> pd.DataFrame:
    """The metrics, called directly on the judgments."""
    rows = Judgment.objects.filter(campaign=campaign).values_list("unit_id", "grader_id", "fine", "broad")
    frame = pd.DataFrame(list(rows), columns=["unit", "grader", "value", "broad"])
    frame["value"] = frame["value"].astype(float)
    units = m.unit_confusability(frame[["unit", "grader", "value"]])
    counts = pd.crosstab(frame["unit"], frame["broad"]).reindex(columns=["NS", "SS", "VS"], fill_value=0)
    return units.join(counts.rename(columns=lambda c: f"n_{c.lower()}"))


def _read(body: bytes, fmt: str) -> tuple[pd.DataFrame, dict]:
    if fmt == "csv":
        text = body.decode()
        meta = {
            line[2:].split(": ", 1)[0]: json.loads(line[2:].split(": ", 1)[1])
            for line in text.splitlines()
            if line.startswith("# ")
        }
        return pd.read_csv(io.StringIO(text), comment="#", float_precision="round_trip"), meta
    if fmt == "json":
        doc = json.loads(body)
        return pd.DataFrame(doc["units"]), doc["metadata"]
    return pd.read_parquet(io.BytesIO(body)), export.read_parquet_metadata(io.BytesIO(body))


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_ground_truth_round_trips_through_pandas_to_full_precision(admin_client, run, fmt):
    response = admin_client.get(f"/api/campaigns/{run.campaign_id}/ground-truth/?format={fmt}")
    assert response.status_code == 200 and response["Content-Type"] == export.FORMATS[fmt]
    frame, meta = _read(response.content, fmt)
    expected = _expected(run.campaign)
    got = frame.set_index("unit_id").sort_index()
    assert list(got.index) == list(expected.index)
    for column in ["n", "mean", "median", "majority", "dif", "std", "entropy", "n_ns", "n_ss", "n_vs"]:
        np.testing.assert_array_equal(
            got[column].to_numpy(dtype=float), expected[column].to_numpy(dtype=float), err_msg=column
        )  # exact: no tolerance
    counts = expected[["n_ns", "n_ss", "n_vs"]].to_numpy(dtype=float)
    assert meta["fleiss_kappa"]["3 levels"]["value"] == m.fleiss_kappa(counts)
    assert meta["fleiss_kappa"]["3 levels"] == run.result["agreement"]["levels"][0]["kappa"]
    assert meta["krippendorff_alpha"]["ci_low"] < meta["krippendorff_alpha"]["value"]
    assert meta["guidelines_version"] == 1 and meta["analysis_run"] == run.pk and meta["units_exported"] == 15
    assert meta["filters"] == {"min_judgments": 1, "max_confusability": None, "measure": "std"}


def test_filters_leave_out_thin_and_confusable_units(run):
    everything = export.ground_truth_frame(run, export.Filters())
    threshold = float(everything["std"].median())
    calm = export.ground_truth_frame(run, export.Filters(max_confusability=threshold))
    assert 0 < len(calm) < len(everything) and (calm["std"] <= threshold).all()
    assert export.ground_truth_frame(run, export.Filters(min_judgments=4)).empty
    with pytest.raises(ValueError, match="measure must be one of std, dif, entropy; got 'var'"):
        export.Filters(measure="var")


def test_ground_truth_before_any_analysis_is_a_409(admin_client, judged_campaign):
    response = admin_client.get(f"/api/campaigns/{judged_campaign.pk}/ground-truth/")
    assert response.status_code == 409 and b"run one first" in response.content


def test_a_bad_format_is_named(admin_client, run):
    response = admin_client.get(f"/api/campaigns/{run.campaign_id}/ground-truth/?format=xlsx")
    body = response.json()
    assert response.status_code == 400 and body["code"] == "invalid" and body["field"] == "format"
    assert "xlsx" in body["detail"] and body["value"] == "xlsx"


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_event_log_streams_every_event(admin_client, judged_campaign, fmt):
    response = admin_client.get(f"/api/campaigns/{judged_campaign.pk}/events/?format={fmt}")
    assert response.status_code == 200 and isinstance(response, StreamingHttpResponse)
    text = b"".join(response.streaming_content).decode()
    n = GradingEvent.objects.filter(campaign=judged_campaign).count()
    if fmt == "csv":
        frame = pd.read_csv(io.StringIO(text))
        assert len(frame) == n and list(frame.columns) == export.EVENT_COLUMNS
        assert json.loads(frame.loc[frame["type"] == "fine_set", "payload"].iloc[0])["value"] >= 0
    else:
        lines = [json.loads(line) for line in text.splitlines()]
        assert len(lines) == n and {e["id"] for e in lines} == {
            str(i) for i in GradingEvent.objects.filter(campaign=judged_campaign).values_list("id", flat=True)
        }


def test_the_event_log_carries_the_organizers_gold_events(admin_client, judged_campaign, organizer):
    unit = judged_campaign.units.order_by("pk").first()
    gold_set(organizer=organizer, campaign=judged_campaign, unit_external_id=unit.external_id, value="NS")
    gold_remove(organizer=organizer, campaign=judged_campaign, unit_external_id=unit.external_id)
    response = admin_client.get(f"/api/campaigns/{judged_campaign.pk}/events/?format=jsonl")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    gold = [(e["type"], e["grader"], e["unit"], e["payload"]) for e in lines if e["type"].startswith("gold_")]
    assert gold == [
        ("gold_set", organizer.pk, unit.pk, {"value": "NS"}),
        ("gold_removed", organizer.pk, unit.pk, {"previous": "NS"}),
    ]


def test_the_cli_exports_ground_truth_in_each_format(judged_campaign, tmp_path, capsys):
    for fmt in ("csv", "json", "parquet"):
        path = tmp_path / f"gt.{fmt}"
        call_command(
            "export_ground_truth", judged_campaign.slug, "--format", fmt, "--output", str(path), "--min-judgments", "2"
        )
        frame, meta = _read(path.read_bytes(), fmt)
        assert len(frame) == 15 and meta["filters"]["min_judgments"] == 2
    assert AnalysisRun.objects.filter(campaign=judged_campaign).count() == 1  # ran once, then reused


def test_the_cli_runs_an_analysis_and_exports_events(judged_campaign, tmp_path, capsys):
    call_command("run_analysis", str(judged_campaign.pk), "--wait", "--n-boot", "50", "--seed", "4")
    assert "succeeded" in capsys.readouterr().out
    assert AnalysisRun.objects.get(campaign=judged_campaign).seed == 4
    path = tmp_path / "events.jsonl"
    call_command("export_events", judged_campaign.slug, "--format", "jsonl", "--output", str(path))
    assert len(path.read_text().splitlines()) == GradingEvent.objects.filter(campaign=judged_campaign).count()
