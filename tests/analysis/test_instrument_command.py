"""manage.py instrument: the §5.5 report of rating files, with no database."""

import json
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis.metrics.instrument import precision, repeatability

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(*args: str) -> dict:
    out = StringIO()
    call_command("instrument", *args, stdout=out)
    return json.loads(out.getvalue())


def test_it_reports_every_section_and_matches_the_library():
    report = run(
        str(EXAMPLES / "instrument_ratings.csv"),
        "--second",
        str(EXAMPLES / "instrument_ratings.csv"),
        "--pairs",
        str(EXAMPLES / "instrument_pairs.csv"),
        "--systems",
        str(EXAMPLES / "instrument_systems.csv"),
    )
    assert set(report) == {"precision", "repeatability", "reproducibility", "resolution", "systems"}
    ratings = pd.read_csv(EXAMPLES / "instrument_ratings.csv")
    assert report["precision"]["mean_std"] == pytest.approx(precision(ratings)["mean_std"], abs=1e-12)
    assert report["repeatability"]["krippendorff_alpha_interval"] == pytest.approx(repeatability(ratings), abs=1e-12)
    assert report["reproducibility"]["spearman_means"] == pytest.approx(1.0)
    assert 0 <= report["resolution"]["resolution"] <= 10
    assert report["systems"]["tests"][0]["verdict"] == "distinguishable"


def test_a_malformed_systems_file_names_the_line_and_field(tmp_path):
    bad = tmp_path / "systems.csv"
    bad.write_text("system,unit,score\ngood,u00,1.5\ngood,u01,high\n")
    with pytest.raises(CommandError, match=r"line 3, field 'score': 'high' is not a number") as err:
        run(str(EXAMPLES / "instrument_ratings.csv"), "--systems", str(bad))
    assert err.value.returncode == 2


def test_a_missing_pairs_column_is_named(tmp_path):
    bad = tmp_path / "pairs.csv"
    bad.write_text("unit_a,unit_b,verdict\nu00,u01,A\n")
    with pytest.raises(CommandError, match="lacks field 'grader'"):
        run(str(EXAMPLES / "instrument_ratings.csv"), "--pairs", str(bad))
