"""Downloads for organizers: streamed, the same content as the exports, readable by pandas/pyarrow;
nobody else's campaign. Run numbers within a campaign."""

from __future__ import annotations

import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis import export, streams
from analysis.models import AnalysisRun
from analysis.services.execute import run_execute
from analysis.services.runs import run_create
from grading.models import GradingEvent, Judgment, Ordering
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def analysed(judged_campaign):
    run = run_create(campaign_id=judged_campaign.pk, parameters={"n_boot": 50})
    run_execute(run_id=run.pk)
    return judged_campaign


def url(campaign, what: str, fmt: str) -> str:
    return f"/reports/campaigns/{campaign.pk}/download/{what}.{fmt}"


def test_ground_truth_downloads_equal_the_export_in_every_format(client, organizer, analysed, monkeypatch):
    monkeypatch.setattr(streams, "CHUNK", 7)  # several chunks: 45 units
    client.force_login(organizer)
    run = AnalysisRun.objects.get(campaign=analysed)
    expected = export.ground_truth_frame(run, export.Filters())
    csv_bytes = body(client.get(url(analysed, "ground-truth", "csv")))
    frame = pd.read_csv(io.BytesIO(csv_bytes), comment="#", float_precision="round_trip")
    assert len(frame) == len(expected) == analysed.units.count()
    reference = export.ground_truth_bytes(run, export.Filters(), "csv").decode()
    strip = lambda text: [line for line in text.splitlines() if not line.startswith("# exported_at")]  # noqa: E731
    assert strip(csv_bytes.decode()) == strip(reference)
    data = json.loads(body(client.get(url(analysed, "ground-truth", "json"))))
    assert len(data["units"]) == len(expected) and data["metadata"]["units_exported"] == len(expected)
    parquet = body(client.get(url(analysed, "ground-truth", "parquet")))
    table = pd.read_parquet(io.BytesIO(parquet))
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    assert export.read_parquet_metadata(io.BytesIO(parquet))["campaign_id"] == analysed.pk


def test_judgments_and_event_log_downloads(client, organizer, judged_campaign, monkeypatch):
    monkeypatch.setattr(streams, "CHUNK", 10)
    client.force_login(organizer)
    judgments = pd.read_csv(io.BytesIO(body(client.get(url(judged_campaign, "judgments", "csv")))))
    assert len(judgments) == Judgment.objects.filter(campaign=judged_campaign).count() > 0
    assert set(judgments["grader"]) == {"G01", "G02", "G03"}
    events = pq.read_table(io.BytesIO(body(client.get(url(judged_campaign, "events", "parquet")))))
    assert events.num_rows == GradingEvent.objects.filter(campaign=judged_campaign).count()
    csv_events = pd.read_csv(io.BytesIO(body(client.get(url(judged_campaign, "events", "csv")))))
    assert len(csv_events) == events.num_rows


def test_ordering_ground_truth_has_a_consensus_and_each_graders_tau(client, organizer, ordering_campaign):
    client.force_login(organizer)
    frame = pd.read_csv(io.BytesIO(body(client.get(url(ordering_campaign, "ordering-ground-truth", "csv")))))
    n_orderings = Ordering.objects.filter(campaign=ordering_campaign).count()
    assert len(frame) == ordering_campaign.queries.count() + n_orderings
    consensus = frame[frame["grader"] == "consensus"]
    assert len(consensus) == 3 and consensus["kendall_tau"].isna().all()
    graders = frame[frame["grader"] != "consensus"]
    assert graders["kendall_tau"].between(-1, 1).all()
    first = consensus.iloc[0]["ordering"].split()
    assert sorted(first) == sorted(
        ordering_campaign.units.filter(query__external_id=consensus.iloc[0]["query"]).values_list(
            "candidate__external_id", flat=True
        )
    )


def test_no_analysis_yet_sends_the_organizer_to_the_report(client, organizer, judged_campaign):
    client.force_login(organizer)
    response = client.get(url(judged_campaign, "ground-truth", "csv"))
    assert response.status_code == 302 and response["Location"] == f"/reports/campaigns/{judged_campaign.pk}/"


def test_other_organizers_get_404_graders_403(client, judged_campaign):
    stranger = make_user()
    make_campaign(n_queries=1, n_candidates=1, graders=1, organizer=stranger)
    client.force_login(stranger)
    formats = streams_formats()
    assert len(formats) == 9  # every download: qrels and the participants file included
    for what, fmt in formats:
        assert client.get(url(judged_campaign, what, fmt)).status_code == 404
    assert client.post(f"/reports/campaigns/{judged_campaign.pk}/run/").status_code == 404
    assert not AnalysisRun.objects.exists()
    client.force_login(judged_campaign.roles.filter(role="grader").first().user)
    assert client.get(url(judged_campaign, "judgments", "csv")).status_code == 403


def streams_formats() -> list[tuple[str, str]]:
    from analysis.downloads import DOWNLOADS

    return list(DOWNLOADS)


def test_runs_are_numbered_within_their_campaign(judged_campaign, ordering_campaign):
    a1 = run_create(campaign_id=judged_campaign.pk, parameters={"n_boot": 50})
    b1 = run_create(campaign_id=ordering_campaign.pk, parameters={"n_boot": 50})
    run_execute(run_id=a1.pk)
    a2 = run_create(campaign_id=judged_campaign.pk, parameters={"n_boot": 60})
    assert (a1.number, b1.number, a2.number) == (1, 1, 2)
