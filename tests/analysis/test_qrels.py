"""Ground truth as TREC qrels: the grade mapping, adjudicated units, the command, the download, and
ir-measures reading what we write."""

from __future__ import annotations

import bisect

import ir_measures
import pytest
from django.core.management import CommandError, call_command

from analysis import export, qrels
from analysis.models import AnalysisRun
from analysis.services.execute import run_execute
from analysis.services.runs import run_create
from grading.models import Assignment, AuditEntry, Unit
from grading.models.choices import Role, Scheme
from grading.services.adjudication import adjudication_record
from grading.services.campaigns import role_grant
from tests.factories import make_campaign, make_user, record

pytestmark = pytest.mark.django_db


def analyse(campaign) -> AnalysisRun:
    run = run_create(campaign_id=campaign.pk, parameters={"n_boot": 20})
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def read(path) -> dict[tuple[str, str], int]:
    return {(q.query_id, q.doc_id): q.relevance for q in ir_measures.read_trec_qrels(str(path))}


def test_qrels_grade_each_unit_by_its_consensus_broad_and_ir_measures_reads_them(judged_campaign, tmp_path):
    run = analyse(judged_campaign)
    path = tmp_path / "gt.qrels"
    call_command("export_ground_truth", judged_campaign.slug, "--format", "qrels", "-o", str(path))
    frame = export.ground_truth_frame(run, export.Filters())
    units = {u.pk: u for u in Unit.objects.filter(campaign=judged_campaign).select_related("query", "candidate")}
    expected = {
        (units[uid].query.external_id, units[uid].candidate.external_id): {"NS": 0, "SS": 1, "VS": 2}[broad]
        for uid, broad in zip(frame["unit_id"], frame["majority_broad"], strict=True)
    }
    assert len(expected) == judged_campaign.units.count() == 15
    assert read(path) == expected
    lines = path.read_text().splitlines()
    assert len(lines) == 15 and all(len(line.split(" ")) == 4 and line.split(" ")[1] == "0" for line in lines)


def test_an_adjudicated_unit_takes_the_adjudicated_value(judged_campaign, organizer, tmp_path):
    unit = Unit.objects.filter(campaign=judged_campaign).select_related("query", "candidate").first()
    analyse(judged_campaign)
    before = read_cli(judged_campaign, tmp_path / "a.qrels")[(unit.query.external_id, unit.candidate.external_id)]
    value = "NS" if before == 2 else "VS"
    adjudication_record(organizer=organizer, unit=unit, value=value, note="settled")
    after = read_cli(judged_campaign, tmp_path / "b.qrels")
    assert after[(unit.query.external_id, unit.candidate.external_id)] == {"NS": 0, "VS": 2}[value]


def read_cli(campaign, path, *args: str) -> dict[tuple[str, str], int]:
    call_command("export_ground_truth", campaign.slug, "--format", "qrels", "-o", str(path), *args)
    return read(path)


def test_thresholds_cut_the_mean_fine_and_other_broad_grades_are_taken(judged_campaign, tmp_path):
    run = analyse(judged_campaign)
    frame = export.ground_truth_frame(run, export.Filters())
    ids = dict(Unit.objects.filter(campaign=judged_campaign).values_list("pk", "candidate__external_id"))
    by_mean = read_cli(judged_campaign, tmp_path / "v.qrels", "--grade", "value", "--thresholds", "3.5,7")
    assert len(by_mean) == len(frame) == 15
    for uid, mean in zip(frame["unit_id"], frame["mean"], strict=True):
        assert by_mean[next(k for k in by_mean if k[1] == ids[uid])] == bisect.bisect_right([3.5, 7.0], mean)
    regraded = read_cli(judged_campaign, tmp_path / "b.qrels", "--broad-grades", "NS=0,SS=0,VS=3")
    default = read_cli(judged_campaign, tmp_path / "d.qrels")
    assert regraded == {k: {0: 0, 1: 0, 2: 3}[g] for k, g in default.items()}


def test_a_numeric_campaign_is_graded_by_its_scale_points_from_the_bottom(db, tmp_path):
    campaign = make_campaign(
        scheme=Scheme.NUMERIC, scheme_params={"min": 1, "max": 5, "step": 1}, graders=2, n_queries=1, n_candidates=4
    )
    scores = iter([1, 1, 2, 3, 5, 4, 4, 4])  # means 1, 2.5, 4.5, 4
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").order_by("unit_id", "pk"):
        record(a.grader, campaign, "score_set", {"value": next(scores)}, unit=a.unit)
    run = analyse(campaign)
    got = read_cli(campaign, tmp_path / "n.qrels")
    assert [got[("q0", f"c0-{i}")] for i in range(4)] == [0, 2, 4, 3]  # 2.5 → 3 − 1, half up
    frame = export.ground_truth_frame(run, export.Filters())
    assert frame["model_score"].notna().all()
    by_model = read_cli(campaign, tmp_path / "m.qrels", "--grade", "model", "--thresholds", "2,4")
    ext = dict(Unit.objects.filter(campaign=campaign).values_list("pk", "candidate__external_id"))
    assert len(by_model) == 4
    for uid, score in zip(frame["unit_id"], frame["model_score"], strict=True):
        assert by_model[("q0", ext[uid])] == bisect.bisect_right([2.0, 4.0], score)
    organizer = make_user()
    role_grant(campaign=campaign, user=organizer, role=Role.ORGANIZER)
    adjudication_record(organizer=organizer, unit=Unit.objects.get(campaign=campaign, external_id="u0-0"), value=5)
    assert read_cli(campaign, tmp_path / "a.qrels")[("q0", "c0-0")] == 4  # the adjudicated 5, the top point


def test_the_model_based_label_grades_when_asked(judged_campaign, tmp_path):
    run = analyse(judged_campaign)
    frame = export.ground_truth_frame(run, export.Filters())
    got = read_cli(judged_campaign, tmp_path / "m.qrels", "--grade", "model")
    assert len(got) == 15
    assert sorted(got.values()) == sorted({"NS": 0, "SS": 1, "VS": 2}[v] for v in frame["model_label"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grade", "value"], "give --thresholds"),
        (["--broad-grades", "NS=0,SS=x,VS=2"], "the grade of SS must be an integer; got 'x'"),
        (["--broad-grades", "NS=0,VS=2"], "missing SS"),
        (["--thresholds", "7,3"], "must increase strictly"),
    ],
)
def test_a_bad_mapping_is_refused_with_what_was_wrong_and_nothing_written(judged_campaign, tmp_path, args, message):
    path = tmp_path / "x.qrels"
    with pytest.raises(CommandError, match=message):
        call_command("export_ground_truth", judged_campaign.slug, "--format", "qrels", "-o", str(path), *args)
    assert not path.exists()


def test_the_help_states_the_mapping(capsys):
    with pytest.raises(SystemExit):
        call_command("export_ground_truth", "--help")
    text = capsys.readouterr().out
    assert "NS -> 0, SS -> 1, VS -> 2" in text and "Adjudicated units take the adjudicated value" in text


def test_the_qrels_download_is_the_default_export_and_is_recorded(client, organizer, judged_campaign, tmp_path):
    analyse(judged_campaign)
    client.force_login(organizer)
    response = client.get(f"/reports/campaigns/{judged_campaign.pk}/download/ground-truth.qrels")
    assert response.status_code == 200 and response["Content-Type"] == qrels.CONTENT_TYPE
    assert f'filename="{judged_campaign.slug}-ground-truth.qrels"' in response["Content-Disposition"]
    path = tmp_path / "cli.qrels"
    call_command("export_ground_truth", judged_campaign.slug, "--format", "qrels", "-o", str(path))
    assert response.content.decode() == path.read_text()
    assert AuditEntry.objects.filter(campaign=judged_campaign, target="ground-truth.qrels").count() == 1
    page = client.get(f"/organize/campaigns/{judged_campaign.pk}/").content.decode()
    assert "ground-truth.qrels" in page and "NS = 0, SS = 1, VS = 2" in page
    assert "ground-truth.qrels" in client.get(f"/reports/campaigns/{judged_campaign.pk}/").content.decode()


def test_a_campaign_without_grades_gets_no_qrels_but_the_reason(client, organizer, db):
    campaign = make_campaign(scheme=Scheme.CATEGORICAL, organizer=organizer, n_queries=1)
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit"):
        record(a.grader, campaign, "label_set", {"value": "ok"}, unit=a.unit)
    analyse(campaign)
    client.force_login(organizer)
    response = client.get(f"/reports/campaigns/{campaign.pk}/download/ground-truth.qrels", follow=True)
    assert response.status_code == 200
    assert "No qrels file: qrels need graded relevance" in response.content.decode()
