"""The `agreement` management command: its sections, the table, file errors with exit status 2, no DB."""

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from analysis.management.commands._agreement_report import build_agreement_report
from analysis.metrics import fleiss_kappa, krippendorff_alpha, long_to_counts, long_to_wide

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run(*args: str) -> str:
    out = StringIO()
    call_command("agreement", *map(str, args), stdout=out)
    return out.getvalue()


def run_json(*args: str) -> dict:
    return json.loads(run(*args, "--format", "json"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text(text)
    return path


def test_it_reports_the_sections_of_an_analysis_run_for_categorical_ratings():
    report = run_json(
        EXAMPLES / "ratings.csv", "--categories", "NS,SS,VS", "--collapse", "VS=S,SS=S", "--bootstrap", "200"
    )
    assert set(report) == {
        "scheme",
        "seed",
        "parameters",
        "n_units",
        "n_graders",
        "n_judgments",
        "agreement",
        "confusability",
        "fine_within_broad",
        "model",
        "units",
    }
    assert len(report["model"]["dawid_skene"]["graders"]) == report["n_graders"] > 0  # graders by their names
    assert len(report["units"]) == 24  # every unit of examples/ratings.csv
    assert all(u["model_label"] in (0, 1, 2) for u in report["units"])  # the Dawid–Skene label per unit
    agreement = report["agreement"]
    assert [level["name"] for level in agreement["levels"]] == ["3 levels", "2 levels"]
    assert set(agreement["levels"][0]["kappa"]) == {"value", "ci_low", "ci_high", "reason", "label"}
    assert agreement["alpha"]["level"] == "ordinal"  # --categories orders the labels
    assert set(agreement["chi2_graders"]) >= {"chi2", "df", "p"}
    assert set(report["confusability"]["summary"]) >= {"mean_dif", "mean_std", "mean_entropy"}
    assert len(report["units"]) == 24
    assert set(report["units"][0]) >= {"unit", "query", "n", "mean", "median", "majority", "dif", "std", "entropy"}
    assert agreement["cohen"] is None  # five graders
    assert report["fine_within_broad"] is None


def test_its_numbers_are_those_of_the_library():
    frame = pd.read_csv(EXAMPLES / "ratings.csv")
    report = run_json(EXAMPLES / "ratings.csv", "--categories", "NS,SS,VS", "--bootstrap", "0")
    counts, _, _ = long_to_counts(frame, ["NS", "SS", "VS"])
    kappa = report["agreement"]["levels"][0]["kappa"]
    assert kappa["value"] == pytest.approx(fleiss_kappa(counts), abs=1e-12)
    assert kappa["ci_low"] is None
    positions = frame.assign(value=frame["value"].map({"NS": 1, "SS": 2, "VS": 3}))
    wide, _, _ = long_to_wide(positions)
    assert report["agreement"]["alpha"]["value"] == pytest.approx(krippendorff_alpha(wide, "ordinal"))
    assert report["n_judgments"] == len(frame) and report["n_units"] == frame["unit"].nunique()


def test_two_graders_get_cohen_kappas(tmp_path):
    report = run_json(EXAMPLES / "ratings_numeric.csv", "--scheme", "numeric", "--bootstrap", "50")
    assert set(report["agreement"]["cohen"]) >= {"unweighted", "linear", "quadratic"}
    assert report["n_graders"] == 2


def test_broad_fine_reports_both_levels_and_fine_within_broad():
    report = run_json(
        EXAMPLES / "ratings_broad_fine.csv",
        "--scheme",
        "broad_fine",
        "--level",
        "interval",
        "--bootstrap",
        "50",
        "--seed",
        "3",
    )
    levels = report["agreement"]["levels"]
    assert [level["categories"] for level in levels] == [["NS", "SS", "VS"], ["NS", "S"]]
    assert (report["agreement"]["alpha"]["level"], report["agreement"]["alpha"]["scale"]) == ("interval", "FINE")
    assert [row["broad"] for row in report["fine_within_broad"]] == ["NS", "SS", "VS"]


def test_the_bootstrap_is_seeded_and_the_confidence_level_is_reported():
    args = (EXAMPLES / "ratings.csv", "--bootstrap", "100", "--seed", "7")
    first = run_json(*args)["agreement"]
    assert first == run_json(*args)["agreement"]
    assert first["confidence"] == 0.95
    narrow = run_json(*args, "--confidence", "0.5")["agreement"]["levels"][0]["kappa"]
    assert (
        narrow["ci_high"] - narrow["ci_low"]
        < first["levels"][0]["kappa"]["ci_high"] - first["levels"][0]["kappa"]["ci_low"]
    )


def test_the_table_format_is_readable():
    text = run(EXAMPLES / "ratings.csv", "--bootstrap", "50", "--collapse", "VS=S,SS=S")
    assert "fleiss_kappa 3 levels" in text and "VS,VS,VS" in text and "chi2_graders" in text
    assert "95% bootstrap intervals" in text


def test_identical_judgments_give_null_with_a_reason(tmp_path):
    report = run_json(write(tmp_path, "unit,grader,value\nu1,a,NS\nu1,b,NS\nu2,a,NS\nu2,b,NS\n"))
    kappa = report["agreement"]["levels"][0]["kappa"]
    assert kappa["value"] is None
    assert "identical" in kappa["reason"]


@pytest.mark.parametrize(
    "text, args, message",
    [
        (
            "unit,grader,value\nu1,a,NS\nu1,b,XX\n",
            ["--categories", "NS,SS,VS"],
            r"line 3, field 'value': 'XX' is not one of NS,SS,VS",
        ),
        ("unit,grader,value\nu1,a,NS\nu1,,SS\n", [], "line 3, field 'grader': empty"),
        ("unit,grader,value\nu1,a,1\nu1,b,x\n", ["--scheme", "numeric"], "line 3, field 'value': 'x' is not a number"),
        ("unit,grader,value\nu1,a,NS\nu1,b,SS,4\n", [], "line 3"),
        ("unit,grader\nu1,a\n", [], "line 1 \\(header\\) lacks field 'value'"),
        ("unit,grader,value\nu1,a,NS\nu1,a,SS\n", [], "line 3.*second judgment of unit 'u1' by grader 'a'"),
        ("unit,grader,broad,fine\nu1,a,NS,11\n", ["--scheme", "broad_fine"], "line 2, field 'fine': 11 is outside"),
        ("", [], "empty"),
        ("unit,grader,value\nu1,a,NS\n", ["--collapse", "VS"], "--collapse: expected FROM=TO"),
        ("unit,grader,value\nu1,a,1\n", ["--scheme", "numeric", "--categories", "1,x"], "must be numbers; got 'x'"),
        ("unit,grader,value\nu1,a,NS\n", ["--confidence", "0.2"], r"--confidence must lie in \[0.5, 0.999\]"),
    ],
)
def test_a_malformed_file_names_line_and_field_with_status_2(tmp_path, text, args, message):
    with pytest.raises(CommandError, match=message) as error:
        run(write(tmp_path, text), *args)
    assert error.value.returncode == 2


def test_a_missing_file_is_status_2(tmp_path):
    with pytest.raises(CommandError, match="no such file") as error:
        run(tmp_path / "nope.csv")
    assert error.value.returncode == 2


def test_it_runs_without_a_database(tmp_path):
    # An unreachable database: the command must still work, and exit 2 on a bad file.
    env = {**os.environ, "DEBUG": "true", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "SECRET_KEY": "x" * 50}
    command = [
        sys.executable,
        "manage.py",
        "agreement",
        str(EXAMPLES / "ratings.csv"),
        "--format",
        "json",
        "--bootstrap",
        "20",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_units"] == 24
    bad = write(tmp_path, "unit,grader,value\nu1,a,NS\nu1,,SS\n")
    done = subprocess.run(command[:3] + [str(bad)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "line 3, field 'grader'" in done.stderr


def test_the_report_builder_takes_a_frame_directly():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(30), 3),
            "grader": np.tile(["a", "b", "c"], 30),
            "value": rng.choice(["NS", "SS", "VS"], 90),
        }
    )
    report = build_agreement_report(frame, categories=["NS", "SS", "VS"], n_boot=50, seed=1)
    json.dumps(report, allow_nan=False)
    assert report["agreement"]["levels"][0]["kappa"]["ci_low"] is not None
    with pytest.raises(ValueError, match="`scheme` must be one of"):
        build_agreement_report(frame, scheme="likert")
    with pytest.raises(ValueError, match="`level` must be one of"):
        build_agreement_report(frame, level="cardinal")
