"""Systems in rating campaigns: the result's `systems` section, recomputed independently from the
exported ground truth and the provenance; per-unit score uploads by page, API and CLI."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from scipy import stats

from analysis import selectors
from analysis.models import AnalysisRun, RunStatus, SystemEvaluation
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import CandidateProvenance, System, SystemOutput, Unit
from grading.services.system_scores import (
    SystemScoresError,
    system_scores_import,
    system_scores_rows_from_csv,
)
from tests.analysis.conftest import judge_broad_fine, truth_levels
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(organizer):
    """Four queries × six candidates; system-a returned every candidate, system-b the first three of
    each query, system-c the last three; three graders judged everything."""
    campaign = make_campaign(n_queries=4, n_candidates=6, graders=3, organizer=organizer)
    a = System.objects.get(campaign=campaign, name="system-a")
    b, c = (System.objects.create(campaign=campaign, name=n) for n in ("system-b", "system-c"))
    for unit in Unit.objects.filter(campaign=campaign):
        CandidateProvenance.objects.create(
            candidate=unit.candidate, system=b if unit.position < 3 else c, query=unit.query, rank=unit.position % 3 + 1
        )
    assert CandidateProvenance.objects.filter(system=a).count() == 24
    judge_broad_fine(campaign, seed=3)
    return campaign


@pytest.fixture
def bare(organizer):
    """The same layout without judgments: enough for checking an import."""
    return make_campaign(n_queries=4, n_candidates=6, graders=1, organizer=organizer, assign=False)


def _run(campaign, n_boot: int = 200) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": n_boot}), seed=5)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    return run


def _scores_csv(campaign, noise: dict[str, float], seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    lines = ["unit,system,score"]
    levels = truth_levels(campaign)
    for unit in Unit.objects.filter(campaign=campaign).order_by("pk"):
        base = levels[unit.pk] * 3.5 + 1.5  # the truth judge_broad_fine simulates
        lines += [f"{unit.external_id},{s},{base + rng.normal(0, n):.3f}" for s, n in noise.items()]
    return "\n".join(lines) + "\n"


def test_system_scores_match_a_recomputation_from_the_exported_ground_truth_and_provenance(client, campaign):
    run = _run(campaign)
    section = run.result["systems"]
    assert section["available"] and len(section["per_system"]) == 3
    admin = make_user("admin13", is_staff=True)
    client.force_login(admin)
    body = client.get(f"/api/campaigns/{campaign.pk}/ground-truth/?format=csv").content.decode()
    exported = pd.read_csv(io.StringIO(body), comment="#").set_index("unit")
    truth = exported["mean"]  # mean FINE per unit
    _check_consensus_broad(campaign, exported)
    provenance = pd.DataFrame(
        list(
            CandidateProvenance.objects.filter(system__campaign=campaign).values_list(
                "system__name", "query__external_id", "candidate__external_id"
            )
        ),
        columns=["system", "query", "candidate"],
    )
    unit_of = {
        (u.query.external_id, u.candidate.external_id): u.external_id
        for u in Unit.objects.filter(campaign=campaign).select_related("query", "candidate")
    }
    provenance["g"] = [
        truth.get(unit_of[(q, c)]) for q, c in zip(provenance["query"], provenance["candidate"], strict=True)
    ]
    per_query = provenance.groupby(["system", "query"])["g"].mean().unstack("system")
    expected = per_query.mean()
    for entry in section["per_system"]:
        fine = entry["scores"]["fine"]
        assert fine["value"] == pytest.approx(expected[entry["system"]])
        assert fine["ci_low"] <= fine["value"] <= fine["ci_high"]
        assert entry["n_queries"] == 4
    friedman = stats.friedmanchisquare(*per_query.to_numpy().T)
    assert section["friedman"]["statistic"] == pytest.approx(friedman.statistic)
    assert section["friedman"]["p"] == pytest.approx(friedman.pvalue)
    assert section["friedman"]["w"] == pytest.approx(friedman.statistic / (4 * 2))
    assert len(section["posthoc"]["pairs"]) == 3
    assert set(section["posthoc"]["groups"]) == {"system-a", "system-b", "system-c"}


def _check_consensus_broad(campaign, exported: pd.DataFrame) -> None:
    """The export's majority_broad beside the FINE statistics, recomputed from the judgments in plain Python."""
    from grading.models import Judgment

    votes: dict[str, list[str]] = {}
    for unit, broad in Judgment.objects.filter(campaign=campaign).values_list("unit__external_id", "broad"):
        votes.setdefault(unit, []).append(broad)
    assert len(votes) == 24
    for unit, broads in votes.items():
        tally = {b: broads.count(b) for b in ("NS", "SS", "VS")}
        top = max(tally.values())
        mean = sum({"NS": 0, "SS": 1, "VS": 2}[b] for b in broads) / len(broads)
        tied = [b for b in ("NS", "SS", "VS") if tally[b] == top]
        expected = min(tied, key=lambda b: (abs({"NS": 0, "SS": 1, "VS": 2}[b] - mean), b))
        assert exported.loc[unit, "majority_broad"] == expected, unit


def test_broad_is_scored_as_a_number(campaign):
    run = _run(campaign, n_boot=20)
    assert len(run.result["systems"]["per_system"]) == 3  # system-a, system-b, system-c
    for entry in run.result["systems"]["per_system"]:
        assert 0 <= entry["scores"]["broad"]["value"] <= 2


def test_an_organizer_uploads_scores_on_the_page_and_sees_them_evaluated(
    client, campaign, organizer, django_capture_on_commit_callbacks
):
    client.force_login(organizer)
    upload = SimpleUploadedFile("scores.csv", _scores_csv(campaign, {"good": 0.5, "noisy": 4}).encode())
    with django_capture_on_commit_callbacks(execute=True):  # embedded: the queued run executes at commit
        response = client.post(f"/reports/campaigns/{campaign.pk}/system-scores/", {"file": upload})
    assert response.status_code == 302
    assert SystemOutput.objects.filter(system__campaign=campaign, unit__isnull=False).count() == 48
    html = client.get(f"/reports/campaigns/{campaign.pk}/").content.decode()
    assert 'id="table-systems_uploaded"' in html and "Imported 48 scores of 24 units" in html
    uploaded = AnalysisRun.objects.get(campaign=campaign, status=RunStatus.SUCCEEDED).result["systems"]["uploaded"]
    by_name = {s["system"]: s for s in uploaded["per_system"]}
    assert by_name["good"]["pearson"]["value"] > by_name["noisy"]["pearson"]["value"]
    assert {"ca_corr", "bands", "low_subset", "mean_confusability"} <= set(by_name["good"])
    asked = client.post(
        f"/reports/campaigns/{campaign.pk}/system-evaluation/",
        {"aggregate": "median", "measure": "entropy", "threshold": "0.5"},
    )
    assert asked.status_code == 302
    assert asked["Location"].endswith("/?aggregate=median&measure=entropy&threshold=0.5#systems-uploaded")
    again = client.get(asked["Location"].split("#")[0]).content.decode()
    assert "against the median of the judgments" in again and "entropy ≤ 0.5" in again
    assert 'id="evaluation-missing"' not in again


def test_a_bad_threshold_is_reported_next_to_the_form_and_nothing_is_stored(client, campaign, organizer):
    client.force_login(organizer)
    system_scores_import(campaign=campaign, rows=system_scores_rows_from_csv(_scores_csv(campaign, {"s": 1})))
    _run(campaign, n_boot=20)
    response = client.post(
        f"/reports/campaigns/{campaign.pk}/system-evaluation/",
        {"aggregate": "mean", "measure": "std", "threshold": "-1"},
    )
    html = response.content.decode()
    assert response.status_code == 400 and 'id="threshold-error"' in html and "greater than or equal to 0" in html
    assert not SystemEvaluation.objects.exists()


def test_an_evaluation_is_computed_once_by_its_post_and_only_read_by_the_page(client, campaign, organizer, monkeypatch):
    client.force_login(organizer)
    system_scores_import(campaign=campaign, rows=system_scores_rows_from_csv(_scores_csv(campaign, {"s": 1})))
    run = _run(campaign, n_boot=20)
    url = f"/reports/campaigns/{campaign.pk}/"
    settings = {"aggregate": "median", "measure": "std", "threshold": ""}
    not_yet = client.get(url, settings).content.decode()
    assert 'id="evaluation-missing"' in not_yet and f"analysis #{run.number or run.pk} yet" in not_yet
    for _ in range(2):
        assert client.post(url + "system-evaluation/", settings).status_code == 302
    stored = SystemEvaluation.objects.get()
    assert (stored.run, stored.aggregate, stored.threshold, stored.created_by) == (run, "median", None, organizer)
    assert stored.uploaded["aggregate"] == "median" and len(stored.uploaded["per_system"]) == 1

    def computing(**kwargs):
        raise AssertionError("the report page computed an evaluation")

    monkeypatch.setattr("analysis.services.sections.systems.uploaded_evaluation", computing)
    shown = client.get(url, settings).content.decode()
    assert "against the median of the judgments" in shown and 'id="evaluation-missing"' not in shown


def test_without_uploaded_scores_there_is_nothing_to_evaluate(client, campaign, organizer):
    client.force_login(organizer)
    _run(campaign, n_boot=20)
    response = client.post(
        f"/reports/campaigns/{campaign.pk}/system-evaluation/", {"aggregate": "mean", "measure": "std", "threshold": ""}
    )
    assert response.status_code == 400 and not SystemEvaluation.objects.exists()


def test_a_malformed_file_stores_nothing_and_names_the_line_field_and_value(client, campaign, organizer):
    client.force_login(organizer)
    text = _scores_csv(campaign, {"s": 1}).replace(",s,", ",s,", 1) + "u0-0,other,high\n"
    response = client.post(
        f"/reports/campaigns/{campaign.pk}/system-scores/", {"file": SimpleUploadedFile("bad.csv", text.encode())}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "line 26, field &#x27;score&#x27;, value &#x27;high&#x27;" in html and "Nothing was imported" in html
    assert not SystemOutput.objects.filter(system__campaign=campaign, unit__isnull=False).exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("unit,system\nu0-0,s\n", "line 1, field 'score'"),
        ("unit,system,score\nnope,s,1\n", "line 2, field 'unit', value 'nope': no unit of this campaign"),
        (
            "query,candidate,system,score\nq0,c9-9,s,1\n",
            "field 'candidate', value 'c9-9': not a candidate of query 'q0'",
        ),
        (
            "unit,system,score\nu0-0,s,1\nu0-0,s,2\n",
            "line 3, field 'system', value 's': this system already has a score",
        ),
        ("unit,system,score\nu0-0,s,nan\n", "a score is a finite number"),
    ],
)
def test_the_import_rejects_bad_rows(bare, text, message):
    with pytest.raises(SystemScoresError, match=message.replace("(", r"\(").replace(")", r"\)")):
        system_scores_import(campaign=bare, rows=system_scores_rows_from_csv(text))


def test_query_and_candidate_name_the_unit(bare):
    summary = system_scores_import(
        campaign=bare, rows=system_scores_rows_from_csv("query,candidate,system,score\nq1,c1-2,s,4.5\n")
    )
    assert summary.scores == 1
    assert SystemOutput.objects.get(system__name="s").unit.external_id == "u1-2"


def test_the_api_takes_json_rows_and_answers_errors_with_400(client, bare, organizer):
    campaign = bare
    client.force_login(organizer)
    url = f"/api/campaigns/{campaign.pk}/system-scores/"
    ok = client.post(
        url, json.dumps({"rows": [{"unit": "u0-0", "system": "s", "score": 3}]}), content_type="application/json"
    )
    assert ok.status_code == 201 and ok.json()["scores"] == 1
    bad = client.post(
        url, json.dumps({"rows": [{"unit": "u0-0", "system": "s", "score": "x"}]}), content_type="application/json"
    )
    assert bad.status_code == 400 and "rows[0]" in bad.json()["detail"]
    stranger = make_user("not-a-member")
    client.force_login(stranger)  # may not know the campaign exists
    assert client.post(url, json.dumps({"rows": []}), content_type="application/json").status_code == 404


def test_the_cli_imports_scores_and_fails_with_status_2_on_a_bad_file(bare, tmp_path):
    campaign = bare
    good = tmp_path / "scores.csv"
    good.write_text(_scores_csv(campaign, {"s": 1}))
    out = io.StringIO()
    call_command("import_system_scores", campaign.slug, str(good), "--no-analysis", stdout=out)
    assert "Imported 24 scores of 24 units" in out.getvalue()
    bad = tmp_path / "bad.csv"
    bad.write_text("unit,system,score\nu0-0,s,\n")
    with pytest.raises(CommandError, match="line 2, field 'score'") as exc:
        call_command("import_system_scores", campaign.slug, str(bad), "--no-analysis")
    assert exc.value.returncode == 2
    assert SystemOutput.objects.filter(system__name="s").count() == 24


def test_provenance_frame_names_each_returned_candidates_unit(campaign):
    frame = selectors.provenance_frame(campaign_id=campaign.pk)
    units = {(u.query_id, u.candidate_id): u.pk for u in Unit.objects.filter(campaign=campaign)}
    expected = sorted(
        (p.system.name, p.query_id, units[(p.query_id, p.candidate_id)])
        for p in CandidateProvenance.objects.filter(system__campaign=campaign)
    )
    assert sorted(frame.itertuples(index=False, name=None)) == expected
    assert len(frame) == 48  # system-a's 24, then b's and c's 12 each


def test_provenance_frame_of_a_campaign_without_provenance_is_empty(bare):
    CandidateProvenance.objects.filter(system__campaign=bare).delete()
    frame = selectors.provenance_frame(campaign_id=bare.pk)
    assert frame.empty and list(frame.columns) == ["system", "query", "unit"]
