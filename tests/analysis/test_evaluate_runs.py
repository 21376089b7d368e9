"""Runs evaluated: the example's runs pooled, judged and scored; the means are what ir-measures computes
from our own qrels export and the same run files; intervals, Friedman, Nemenyi and judged fractions."""

from __future__ import annotations

import io
import json
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from analysis import unit_blocks
from analysis.metrics.systems import friedman
from analysis.models import AnalysisRun
from analysis.run_evaluation import measures_parse, measures_split
from analysis.services.execute import run_execute
from analysis.services.runs import run_create
from grading.models import Assignment, Campaign, Judgment, SystemOutput
from grading.models.choices import CampaignStatus, Role
from grading.services.campaigns import assignments_create_initial, campaign_set_status, role_grant
from tests.factories import make_user, record

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trec"
RUNS = [str(EXAMPLES / f"run_{x}.txt") for x in "abc"]
# How relevant each example document is to each topic, as graders would say (NS where not listed).
TRUTH = {
    "t1": {"d01": "VS", "d02": "VS", "d03": "VS", "d04": "SS"},
    "t2": {"d05": "VS", "d07": "VS", "d06": "SS"},
    "t3": {"d09": "VS", "d10": "VS", "d12": "SS"},
}
FINE = {"NS": 2.0, "SS": 5.5, "VS": 9.0}


@pytest.fixture
def judged_pool(db) -> Campaign:
    call_command(
        "pool_campaign",
        "--name",
        "TREC example",
        "--depth",
        "3",
        "--topics",
        str(EXAMPLES / "topics.tsv"),
        "--docs",
        str(EXAMPLES / "docs.jsonl"),
        *RUNS,
        stdout=io.StringIO(),
    )
    campaign = Campaign.objects.get(slug="trec-example")
    for _ in range(2):
        role_grant(campaign=campaign, user=make_user(), role=Role.GRADER)
    campaign_set_status(campaign=campaign, status=CampaignStatus.OPEN)
    assignments_create_initial(campaign=campaign, seed=1)
    assignments = Assignment.objects.filter(campaign=campaign).select_related(
        "grader", "unit__query", "unit__candidate"
    )
    for i, a in enumerate(assignments):
        broad = TRUTH[a.unit.query.external_id].get(a.unit.candidate.external_id, "NS")
        if broad == "SS" and i % 2:  # graders disagree a little
            broad = "VS"
        record(a.grader, campaign, "broad_set", {"value": broad}, unit=a.unit, seq=1)
        record(a.grader, campaign, "fine_set", {"value": FINE[broad]}, unit=a.unit, seq=2)
    return campaign


MEASURES = "nDCG@10 P@5 AP RBP(p=0.8)"


def evaluate(campaign, *args: str) -> dict:
    out = io.StringIO()
    call_command("evaluate_runs", campaign.slug, *RUNS, "--format", "json", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_the_means_are_what_ir_measures_computes_from_our_qrels_export_and_the_run_files(judged_pool, tmp_path):
    result = evaluate(judged_pool, "--measures", MEASURES, "--bootstrap", "200", "--seed", "3")
    qrels_path = tmp_path / "pool.qrels"
    call_command(
        "export_ground_truth", judged_pool.slug, "--format", "qrels", "-o", str(qrels_path), stderr=io.StringIO()
    )
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    assert len(qrels) == judged_pool.units.count() == 16
    assert [r["run"] for r in result["runs"]] == ["bm25", "dense", "random"]
    names = ["nDCG@10", "P@5", "AP", "RBP(p=0.8)"]
    computed = [ir_measures.parse_measure(n) for n in ["nDCG@10", "P@5", "AP", "RBP(p=0.8,rel=1)"]]
    for entry, path in zip(result["runs"], RUNS, strict=True):
        assert list(entry["measures"]) == names  # as given on the command line
        expected = ir_measures.calc_aggregate(computed, qrels, list(ir_measures.read_trec_run(path)))
        for name, measure in zip(names, computed, strict=True):
            got = entry["measures"][name]
            assert got["mean"] == pytest.approx(float(expected[measure]), abs=1e-12)
            assert got["ci_low"] <= got["mean"] <= got["ci_high"]
            assert sorted(got["per_topic"]) == ["t1", "t2", "t3"]
            assert got["mean"] == pytest.approx(np.mean(list(got["per_topic"].values())), abs=1e-15)
        per_topic = {
            m.query_id: m.value for m in ir_measures.iter_calc([computed[0]], qrels, ir_measures.read_trec_run(path))
        }
        assert entry["measures"]["nDCG@10"]["per_topic"] == pytest.approx(per_topic, abs=1e-12)


def test_friedman_and_nemenyi_come_from_the_systems_machinery_on_the_topics_by_runs_table(judged_pool):
    result = evaluate(judged_pool, "--measures", "AP P@5", "--bootstrap", "50")
    assert set(result) == {"runs", "friedman", "nemenyi"}
    table = pd.DataFrame({r["run"]: r["measures"]["AP"]["per_topic"] for r in result["runs"]})
    expected = friedman(table)
    assert result["friedman"]["AP"]["statistic"] == pytest.approx(expected["chi2"])
    assert result["friedman"]["AP"]["n_queries"] == 3 and result["friedman"]["AP"]["n_systems"] == 3
    assert len(result["nemenyi"]["AP"]["pairs"]) == 3
    assert set(result["nemenyi"]["AP"]["groups"]) == {"bm25", "dense", "random"}


def test_the_bootstrap_is_seeded_and_the_judged_fraction_is_reported_at_each_cutoff(judged_pool):
    a = evaluate(judged_pool, "--measures", "nDCG@10 P@5", "--bootstrap", "100", "--seed", "7")
    b = evaluate(judged_pool, "--measures", "nDCG@10 P@5", "--bootstrap", "100", "--seed", "7")
    assert a == b
    pooled = set(judged_pool.units.values_list("query__external_id", "candidate__external_id"))
    assert len(a["runs"]) == 3
    for entry, path in zip(a["runs"], RUNS, strict=True):
        lines = [line.split() for line in Path(path).read_text().splitlines()]
        for k in (5, 10):
            fractions = [
                np.mean([(q, d) in pooled for q2, _, d, rank, *_ in lines if q2 == q and int(rank) <= k])
                for q in ("t1", "t2", "t3")
            ]
            assert entry["judged_at_k"][str(k)] == pytest.approx(np.mean(fractions), abs=1e-12)
        assert entry["judged_at_k"]["10"] < 1.0  # a depth-3 pool leaves some of each run's 6 documents unjudged
    condensed = evaluate(judged_pool, "--measures", "P@5", "--unjudged", "condense", "--bootstrap", "10")
    for plain, cond in zip(a["runs"], condensed["runs"], strict=True):
        assert cond["measures"]["P@5"]["mean"] >= plain["measures"]["P@5"]["mean"]


def test_the_table_names_each_run_with_its_interval_and_the_friedman_test(judged_pool):
    out = io.StringIO()
    call_command("evaluate_runs", judged_pool.slug, *RUNS, "--bootstrap", "50", stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert "nDCG@10  (mean over topics, 95% bootstrap interval" in text and "RBP(p=0.8)" in text
    assert "Friedman χ² = " in text and "bm25: @5 " in text


def test_measures_are_split_outside_parentheses_and_an_unknown_one_is_refused():
    assert measures_split("nDCG@10  P@5 RBP(p=0.8, rel=2)") == ["nDCG@10", "P@5", "RBP(p=0.8, rel=2)"]
    assert [name for name, _ in measures_parse("AP RBP(p=0.8)")] == ["AP", "RBP(p=0.8)"]
    with pytest.raises(ValueError, match="measure 'Bogus@3'"):
        measures_parse("AP Bogus@3")


def test_a_bad_run_file_is_refused_naming_its_line_before_any_analysis(judged_pool, tmp_path):
    bad = tmp_path / "bad.run"
    bad.write_text("t1 Q0 d01 1 1.0 x\nt1 Q0 d02 two 0.5 x\n")
    with pytest.raises(CommandError, match=rf"{bad} line 2, field 'rank', value 'two'"):
        call_command("evaluate_runs", judged_pool.slug, str(bad))
    with pytest.raises(CommandError, match="measure 'nDCG@'"):
        call_command("evaluate_runs", judged_pool.slug, RUNS[0], "--measures", "nDCG@")


def test_a_topic_a_run_does_not_answer_counts_zero_as_ir_measures_counts_it(judged_pool, tmp_path):
    partial = tmp_path / "partial.txt"
    partial.write_text("t1 Q0 d01 1 9 partial\nt1 Q0 d02 2 8 partial\nt9 Q0 d01 1 9 partial\n")
    out = io.StringIO()
    call_command(
        "evaluate_runs",
        judged_pool.slug,
        str(partial),
        "--measures",
        "AP",
        "--format",
        "json",
        "--bootstrap",
        "20",
        stdout=out,
        stderr=io.StringIO(),
    )
    result = json.loads(out.getvalue())
    qrels_path = tmp_path / "pool.qrels"
    call_command(
        "export_ground_truth", judged_pool.slug, "--format", "qrels", "-o", str(qrels_path), stderr=io.StringIO()
    )
    expected = ir_measures.calc_aggregate(
        [ir_measures.AP], list(ir_measures.read_trec_qrels(str(qrels_path))), ir_measures.read_trec_run(str(partial))
    )
    ap = result["runs"][0]["measures"]["AP"]
    assert ap["per_topic"]["t2"] == ap["per_topic"]["t3"] == 0.0 and "t9" not in ap["per_topic"]
    assert ap["mean"] == pytest.approx(expected[ir_measures.AP], abs=1e-12)
    assert "reason" in result["friedman"]["AP"]  # one run: nothing to compare
    conf = ap["confusability"]  # the topics the run does not answer read no judged document
    assert conf["topics_left_out"] == ["t2", "t3"] and conf["n_topics"] == 1 and conf["n_units"] == 2
    assert conf["mean"] == conf["weighted_mean"] == ap["per_topic"]["t1"]


def test_a_failure_inside_ir_measures_is_reported_not_raised(judged_pool, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("gdeval.pl: format error")

    monkeypatch.setattr(ir_measures, "iter_calc", broken)
    with pytest.raises(CommandError, match="ir-measures could not compute AP: OSError: gdeval.pl: format error"):
        call_command("evaluate_runs", judged_pool.slug, RUNS[0], "--measures", "AP", stderr=io.StringIO())


def _uploads(*paths: str):
    return [SimpleUploadedFile(Path(p).name, Path(p).read_bytes(), content_type="text/plain") for p in paths]


def test_the_report_scores_uploaded_runs_as_the_command_does_and_stores_nothing(judged_pool, client):
    organizer = make_user()
    role_grant(campaign=judged_pool, user=organizer, role=Role.ORGANIZER)
    client.force_login(organizer)
    run = run_create(campaign_id=judged_pool.pk, parameters={"n_boot": 60})
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    outputs = SystemOutput.objects.count()
    response = client.post(
        f"/reports/campaigns/{judged_pool.pk}/evaluate-runs/", {"runs": _uploads(*RUNS), "measures": "AP P@5"}
    )
    assert response.status_code == 200
    shown = response.context["runs_result"]["measures"]
    assert [m["name"] for m in shown] == ["AP", "P@5"]
    expected = evaluate(judged_pool, "--measures", "AP P@5", "--bootstrap", "60", "--seed", str(run.seed))
    means = {r["run"]: r["measures"]["AP"]["mean"] for r in expected["runs"]}
    assert len(shown[0]["rows"]) == 3 and {r["run"]: r["mean"] for r in shown[0]["rows"]} == means
    html = response.content.decode()
    assert "AP: mean over topics, best first" in html and "Friedman χ² =" in html
    expected_conf = {r["run"]: r["measures"]["AP"]["confusability"] for r in expected["runs"]}
    assert {r["run"]: r["confusability"] for r in shown[0]["rows"]} == expected_conf
    assert shown[0]["confusability"]["measure"] == "std" and len(shown[0]["confusability"]["rows"]) == 3
    assert "AP and the graders' disagreement" in html and "A topic's confusability is the mean standard" in html
    assert SystemOutput.objects.count() == outputs and AnalysisRun.objects.filter(campaign=judged_pool).count() == 1


def test_a_bad_upload_on_the_report_lists_its_problem_beside_the_form(judged_pool, client, tmp_path):
    organizer = make_user()
    role_grant(campaign=judged_pool, user=organizer, role=Role.ORGANIZER)
    client.force_login(organizer)
    url = f"/reports/campaigns/{judged_pool.pk}/evaluate-runs/"
    response = client.post(url, {"runs": _uploads(RUNS[0]), "measures": "AP"})
    assert response.status_code == 400 and "run one first" in response.content.decode()  # no analysis yet
    run_execute(run_id=run_create(campaign_id=judged_pool.pk, parameters={"n_boot": 20}).pk)
    bad = SimpleUploadedFile("bad.txt", b"t1 Q0 d01 1 9 x\nt1 Q0 d02 2 nine x\n", content_type="text/plain")
    response = client.post(url, {"runs": [bad], "measures": "AP"})
    html = response.content.decode()
    assert response.status_code == 400 and 'id="runs-errors"' in html
    assert "bad.txt line 2, field &#x27;score&#x27;, value &#x27;nine&#x27;: the score must be a number" in html
    response = client.post(url, {"runs": _uploads(RUNS[0]), "measures": "Bogus@3"})
    assert response.status_code == 400 and "measure &#x27;Bogus@3&#x27;" in response.content.decode()
    stranger = make_user()
    client.force_login(stranger)
    assert client.post(url, {"runs": _uploads(RUNS[0]), "measures": "AP"}).status_code == 404


@pytest.fixture
def confused_pool(judged_pool) -> Campaign:
    """The judged pool with the graders disagreeing on FINE (BROAD, hence the qrels, unchanged): on t1
    one grader of each unit scores 1 lower, on t2 one grader scores 5 whatever the document."""
    changed = set()
    for a in Assignment.objects.filter(campaign=judged_pool).select_related("grader", "unit__query").order_by("pk"):
        topic = a.unit.query.external_id
        if a.unit_id in changed or topic == "t3":
            continue
        changed.add(a.unit_id)
        fine = float(Judgment.objects.get(grader=a.grader, unit=a.unit).fine)
        record(a.grader, judged_pool, "fine_set", {"value": fine - 1 if topic == "t1" else 5.0}, unit=a.unit, seq=3)
    return judged_pool


def _unit_confusability(campaign: Campaign, column: str) -> dict[tuple[str, str], float]:
    run = AnalysisRun.objects.filter(campaign=campaign, status="succeeded").latest("pk")
    units = unit_blocks.RunUnits(run.pk).frame(["n", column]).set_index("unit")
    keys = campaign.units.filter(pk__in=units.index[units["n"] >= 2].tolist()).select_related("query", "candidate")
    return {(u.query.external_id, u.candidate.external_id): float(units.at[u.pk, column]) for u in keys}


@pytest.mark.parametrize("option, column", [("std", "std"), ("range", "dif"), ("entropy", "entropy")])
def test_each_measure_of_each_run_is_summarised_by_topic_confusability_from_the_documents_it_read(
    confused_pool, option, column
):
    result = evaluate(confused_pool, "--measures", "P@3 AP", "--bootstrap", "20", "--confusability", option)
    units = _unit_confusability(confused_pool, column)
    assert len({round(v, 9) for v in units.values()}) > 1  # the graders disagree on some units
    for entry, path in zip(result["runs"], RUNS, strict=True):
        lines = [line.split() for line in Path(path).read_text().splitlines()]
        for name, depth in (("P@3", 3), ("AP", None)):
            measure = entry["measures"][name]
            conf = measure["confusability"]
            read = {
                q: [
                    units[(q, d)]
                    for q2, _, d, rank, *_ in lines
                    if q2 == q and (depth is None or int(rank) <= depth)
                    if (q, d) in units
                ]
                for q in ("t1", "t2", "t3")
            }
            c = {q: np.mean(v) for q, v in read.items() if v}
            x = measure["per_topic"]
            assert conf["measure"] == option and conf["cutoff"] == depth and conf["threshold_chosen"] is False
            assert conf["n_topics"] == len(c) and conf["n_units"] == sum(len(v) for v in read.values())
            assert conf["mean_confusability"] == pytest.approx(np.mean(sum(read.values(), [])))
            assert conf["mean"] == pytest.approx(np.mean([x[q] for q in c]))
            lo, hi = min(c.values()), max(c.values())
            w = {q: 1 - (v - lo) / (hi - lo) if hi - lo > 1e-9 else 1.0 for q, v in c.items()}
            assert conf["weighted_mean"] == pytest.approx(sum(w[q] * x[q] for q in c) / sum(w.values()))
            median = np.median(list(c.values()))
            low = [q for q in c if c[q] <= median + 1e-12]
            assert conf["low_subset"]["n"] == len(low)
            assert conf["low_subset"]["mean"] == pytest.approx(np.mean([x[q] for q in low]))
            assert sum(b["n"] for b in conf["bands"]) == len(c)


def test_the_confusability_keys_sit_beside_the_existing_ones_and_the_threshold_is_an_option(confused_pool):
    result = evaluate(confused_pool, "--measures", "nDCG@10", "--bootstrap", "20", "--threshold", "0.5")
    measure = result["runs"][0]["measures"]["nDCG@10"]
    assert set(measure) == {"mean", "ci_low", "ci_high", "per_topic", "confusability"}
    conf = measure["confusability"]
    assert set(conf) == {
        "measure",
        "cutoff",
        "threshold_chosen",
        "n_topics",
        "topics_left_out",
        "n_units",
        "mean",
        "mean_confusability",
        "bands",
        "low_subset",
        "weighted_mean",
    }
    assert all(set(b) == {"low", "high", "n", "mean", "mean_confusability"} for b in conf["bands"])
    assert conf["threshold_chosen"] is True and conf["low_subset"]["threshold"] == 0.5
    with pytest.raises(CommandError, match="--threshold must be a number ≥ 0; got -1"):
        evaluate(confused_pool, "--threshold", "-1")
    out = io.StringIO()
    call_command(
        "evaluate_runs",
        confused_pool.slug,
        *RUNS,
        "--measures",
        "P@3",
        "--bootstrap",
        "20",
        "--confusability",
        "entropy",
        stdout=out,
        stderr=io.StringIO(),
    )
    text = out.getvalue()
    assert "Confusability-aware (§5.8; a topic's confusability = the mean entropy of the judged units" in text
    assert (
        "among the run's first 3 documents" in text and "weighted " in text and "low-confusability topics (≤ " in text
    )
