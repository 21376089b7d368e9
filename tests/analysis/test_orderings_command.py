"""``manage.py orderings``: JSON and table reports, FreSPA options, noise, malformed input (exit 2).

No test here asks for the database: pytest-django would fail any that touched it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from analysis.metrics.orderings import METHODS

ROOT = Path(__file__).resolve().parents[2]
GOLDS = ROOT / "examples" / "orderings.csv"
SYSTEMS = ROOT / "examples" / "orderings_systems.csv"


def _run(*args: str) -> str:
    out = StringIO()
    call_command("orderings", *args, stdout=out)
    return out.getvalue()


def _write(tmp_path: Path, text: str, name: str = "golds.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _fails(*args: str) -> str:
    with pytest.raises(CommandError) as info:
        _run(*args)
    assert info.value.returncode == 2
    return str(info.value)


def test_it_prints_the_json_report_with_systems() -> None:
    report = json.loads(_run(str(GOLDS), "--systems", str(SYSTEMS), "--format", "json"))
    assert [q["query"] for q in report["queries"]] == ["q1", "q2", "q3"]
    q1 = report["queries"][0]
    assert (q1["k"], q1["n_graders"]) == (6, 4)
    assert len(q1["consensus"]) == 6 and 0 < q1["mean_tau"] <= 1
    assert list(q1["ed"]) == list(METHODS) == list(report["ed"])
    assert [s["system"] for s in q1["systems"]] == ["sysA", "sysB", "sysC"]
    reference, reverse = q1["systems"][0]["scores"], q1["systems"][1]["scores"]
    assert all(reference[m] > reverse[m] for m in METHODS)
    assert report["best_method"] in METHODS
    assert "noise" not in report


def test_a_small_hand_checked_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "query,grader,rank,item\n"
        + "".join(f"q,{g},{r},{i}\n" for g, order in (("a", "ABCD"), ("b", "ACDB")) for r, i in enumerate(order, 1)),
    )
    report = json.loads(_run(path, "--format", "json"))
    query = report["queries"][0]
    assert query["mean_tau"] == pytest.approx(1 / 3)
    assert query["ed"]["AC-tau"] == pytest.approx(2 / 3)
    assert query["consensus"] == ["A", "C", "B", "D"]  # rank sums A 2, B 6, C 5, D 7


def test_it_passes_frespa_parameters_and_adds_noise() -> None:
    report = json.loads(
        _run(
            str(GOLDS), "--format", "json", "--min-sup", "1", "--w-len", "0", "--max-len", "3", "--noise", "--seed", "4"
        )
    )
    assert report["params"] == {"min_sup": 1.0, "min_len": 2, "max_len": 3, "w_len": 0.0, "w_sup": 1.0}
    assert [row["ratio"] for row in report["noise"]] == [0, 0.25, 0.5, 0.75, 1]
    assert report["noise"][0]["ed"] == report["ed"]
    again = json.loads(
        _run(
            str(GOLDS), "--format", "json", "--min-sup", "1", "--w-len", "0", "--max-len", "3", "--noise", "--seed", "4"
        )
    )
    assert again == report


def test_it_prints_tables() -> None:
    text = _run(str(GOLDS), "--systems", str(SYSTEMS))
    for heading in ("Queries", "ED by method", "System scores", "blues_02 > blues_01"):
        assert heading in text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("query,grader,item\nq,a,A\n", r"line 1: missing column\(s\) \['rank'\]"),
        ("query,grader,rank,item\nq,a,1,A\nq,a,two,B\n", "line 3: rank 'two' is not a positive integer"),
        ("query,grader,rank,item\nq,a,1,A\nq,a,2,\n", "line 3: empty `item`"),
        ("query,grader,rank,item\nq,a,1,A\nq,a,2,A\n", "line 3: grader 'a' gives item 'A' twice in query 'q'"),
        ("query,grader,rank,item\nq,a,1,A\nq,a,1,B\n", "line 3: grader 'a' gives rank 1 twice"),
        ("query,grader,rank,item\nq,a,1,A\nq,a,3,B\n", r"line 2: ranks of grader 'a' in query 'q' are not 1..k"),
        (
            "query,grader,rank,item\nq,a,1,A\nq,a,2,B\nq,b,1,A\nq,b,2,C\n",
            r"line 4: grader 'b' in query 'q' ranks items \['A', 'C'\] but grader 'a' ranks \['A', 'B'\]",
        ),
        ("query,grader,rank,item\nq,a,1,A\n", "line 2: query 'q' has fewer than 2 items"),
        ("query,grader,rank,item\n\nq,a,1,A\nq,a,2,A\n", "line 4: grader 'a' gives item 'A' twice"),
        ("query,grader,rank,item\nq,a,1,A,extra\n", "line 2: expected 4 fields"),
        ("", "the file is empty"),
    ],
)
def test_it_names_the_line_and_problem_of_malformed_golds(tmp_path: Path, body: str, message: str) -> None:
    message_text = _fails(_write(tmp_path, body))
    assert "golds.csv" in message_text
    assert re.search(message, message_text), message_text


def test_it_names_the_line_of_a_bad_systems_file(tmp_path: Path) -> None:
    systems = _write(tmp_path, "query,system,rank,item\nq1,s,1,x\nq1,s,2,y\n", "systems.csv")
    text = _fails(str(GOLDS), "--systems", systems)
    assert "systems.csv: line 2: system 's' in query 'q1' ranks items ['x', 'y']" in text
    unknown = _write(tmp_path, "query,system,rank,item\nzz,s,1,x\nzz,s,2,y\n", "unknown.csv")
    assert "unknown.csv: line 2: query 'zz' has no gold orderings" in _fails(str(GOLDS), "--systems", unknown)


def test_it_rejects_bad_options_and_missing_files(tmp_path: Path) -> None:
    assert "--min-sup must lie in [0, 1], got 1.5" in _fails(str(GOLDS), "--min-sup", "1.5")
    assert "--max-len must be an integer >= min_len (3)" in _fails(str(GOLDS), "--min-len", "3", "--max-len", "2")
    assert "no such file" in _fails(str(tmp_path / "nope.csv"))


def test_it_exits_with_status_2_from_the_command_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "query,grader,rank,item\nq,a,1,A\nq,a,1,B\n")
    done = subprocess.run(
        [sys.executable, "manage.py", "orderings", path, "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DEBUG": "true"},
        timeout=60,
    )
    assert done.returncode == 2
    assert "line 3: grader 'a' gives rank 1 twice" in done.stderr
