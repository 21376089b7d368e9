"""Every malformed campaign file ends in one message naming file, row, field and value, exit
status 2, and nothing stored; never a traceback. The cases are tallied in JSON_CASES and CSV_CASES."""

import copy
import json
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.grading.test_import_campaign import EXAMPLES
from tests.grading.test_import_campaign import counts as item_counts

ROOT = EXAMPLES.parent
pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


def counts() -> tuple[int, ...]:
    return (*item_counts(), get_user_model().objects.count())


def good() -> dict:
    return json.loads((EXAMPLES / "campaign.json").read_text())


def mutate(path: str, value) -> dict:
    """The example with the value at a dotted path (list indexes as numbers) replaced."""
    d = copy.deepcopy(good())
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    target = d
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return d


def numeric_scale(**params) -> dict:
    """The example as a numeric campaign with these scale parameters."""
    d = mutate("campaign.scheme_params", params)
    d["campaign"]["scheme"] = "numeric"
    return d


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# (name, definition or raw text, where, field, value shown in the message)
JSON_CASES = [
    ("list where a name is expected", mutate("campaign.name", ["a", "b"]), "campaign", "name", '["a", "b"]'),
    ("name longer than its column", mutate("campaign.name", "n" * 201), "campaign", "name", "nnnn"),
    ("slug like ../x", mutate("campaign.slug", "../x"), "campaign", "slug", "../x"),
    ("user name like <script>", mutate("graders", ["<script>alert(1)</script>"]), "graders[0]", "username", "<script>"),
    (
        "provenance naming a missing query",
        mutate("candidates.0.provenance.0.query", "q-missing"),
        "candidates[0].provenance[0]",
        "query",
        "q-missing",
    ),
    (
        "candidate listing a missing query",
        mutate("candidates.1.queries", ["q-missing"]),
        "candidates[1].queries[0]",
        "query",
        "q-missing",
    ),
    (
        "list where a system name is expected",
        mutate("candidates.0.provenance.0.system", ["system-a"]),
        "candidates[0].provenance[0]",
        "system",
        '["system-a"]',
    ),
    (
        "object where a query id is expected",
        mutate("candidates.0.provenance.0.query", {"id": "q1"}),
        "candidates[0].provenance[0]",
        "query",
        '{"id": "q1"}',
    ),
    ("overlap beyond any column", mutate("campaign.initial_overlap", 10**30), "campaign", "initial_overlap", "1000"),
    ("budget beyond any column", mutate("campaign.budget", 2**40), "campaign", "budget", str(2**40)),
    (
        "rank beyond any column",
        mutate("candidates.0.provenance.0.rank", 2**40),
        "candidates[0].provenance[0]",
        "rank",
        str(2**40),
    ),
    ("NUL in a text", mutate("campaign.description", "a\x00b"), "campaign", "description", "a\\\\u0000b"),
    ("lone surrogate in a name", None, "campaign", "name", "\\ud800"),
    ("NaN in scheme parameters", None, "campaign", "scheme_params.fine_bands", "nan"),
    (
        "NUL in policy parameters",
        mutate("campaign.policy_params", {"k": "a\x00"}),
        "campaign",
        "policy_params.k",
        "u0000",
    ),
    ("candidate id longer than its column", mutate("candidates.0.id", "c" * 101), "candidates[0]", "id", "cccc"),
    ("system name longer than its column", mutate("systems.0.name", "s" * 101), "systems[0]", "name", "ssss"),
    ("user name longer than its column", mutate("organizers", ["u" * 151]), "organizers[0]", "username", "uuuu"),
    (
        "media URL longer than its column",
        mutate("queries.0.media_url", "https://" + "x" * 500),
        "queries[0]",
        "media_url",
        "https://",
    ),
    ("list where a kind is expected", mutate("candidates.0.kind", ["audio"]), "candidates[0]", "kind", '["audio"]'),
    ("object where a status is expected", mutate("campaign.status", {"open": True}), "campaign", "status", "open"),
    ("media path holding a NUL", mutate("candidates.0.media", "media/\x00.wav"), "candidates[0]", "media", "media/"),
    ("a forged row marker", mutate("candidates.0._where", ["line", 3]), "candidates[0].provenance[0]", "system", None),
    ("list where a title is expected", mutate("queries.0.title", [1]), "queries[0]", "title", "[1]"),
    ("JSON nested too deeply", None, "whole file", "(json)", None),
    ("unknown scheme", mutate("campaign.scheme", "stars"), "campaign", "scheme", "stars"),
    ("a list of numbers as guidelines", mutate("campaign.guidelines", [1, 2]), "campaign", "guidelines", "[1, 2]"),
    (
        "a numeric scale of more than 1,000 points",
        numeric_scale(min=0, max=1, step=1e-300),
        "campaign",
        "scheme_params.step",
        "1e-300",
    ),
]


def raw_text(name: str, definition) -> str | bytes:
    if name == "lone surrogate in a name":
        return json.dumps(mutate("campaign.name", "BAD")).replace("BAD", "\\ud800")
    if name == "NaN in scheme parameters":
        return json.dumps(mutate("campaign.scheme_params", {"fine_bands": "BAD"})).replace('"BAD"', "NaN")
    if name == "JSON nested too deeply":
        return json.dumps(mutate("campaign.policy_params", {"x": "BAD"})).replace('"BAD"', nested(100_000))
    if name == "a forged row marker":
        d = mutate("candidates.0._where", ["line", 3])
        d["candidates"][0]["provenance"][0]["system"] = "system-z"
        return json.dumps(d)
    return json.dumps(definition)


def refused(args: list[str], **options) -> str:
    before = counts()
    with pytest.raises(CommandError) as err:
        call_command("import_campaign", *args, **options)
    assert err.value.returncode == 2
    assert counts() == before
    return str(err.value)


@pytest.mark.parametrize("name,definition,where,field,value", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_a_malformed_json_file_is_refused_naming_file_row_field_and_value(
    example, name, definition, where, field, value
):
    path = example / "broken.json"
    path.write_text(raw_text(name, definition), encoding="utf-8", errors="surrogatepass")
    message = refused([str(path)])
    assert message.startswith(f"{path}: {where}, field {field!r}"), message
    if value is not None:
        assert value in message, message
    assert "Nothing was imported" in message


CSV_HEADER = "query,query_title,query_kind,query_media,candidate,candidate_kind,candidate_media,system,rank\n"
CSV_ROW = "q1,A major triad,audio,media/query-1.wav,c-a,audio,media/cand-a.wav,system-a,1\n"
CSV_CASES = [
    ("non-UTF-8 file", (CSV_HEADER + CSV_ROW.replace("A major", "Dur\xe9e")).encode("latin-1"), "line 2", "(encoding)"),
    ("NUL byte in a CSV", (CSV_HEADER + CSV_ROW.replace("A major", "A\x00major")).encode(), "line 2", "title"),
    (
        "cell larger than the CSV reader takes",
        (CSV_HEADER + CSV_ROW.replace("A major", "x" * 200_000)).encode(),
        "line 2",
        "(csv)",
    ),
    ("row with more fields than the header", (CSV_HEADER + CSV_ROW.strip() + ",extra\n").encode(), "line 2", "(row)"),
    ("slug like ../x in a CSV", (CSV_HEADER + CSV_ROW).encode(), "campaign", "slug"),
    (
        "candidate id longer than its column in a CSV",
        (CSV_HEADER + CSV_ROW.replace("c-a", "c" * 101)).encode(),
        "line 2",
        "id",
    ),
]


@pytest.mark.parametrize("name,content,where,field", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_a_malformed_csv_file_is_refused_naming_file_row_and_field(example, name, content, where, field):
    path = example / "broken.csv"
    path.write_bytes(content)
    slug = "../x" if "slug" in name else "csv"
    message = refused([str(path)], name="CSV", slug=slug)
    assert message.startswith(f"{path}: {where}, field {field!r}"), message


def test_a_missing_guidelines_file_is_named(example):
    message = refused([str(example / "items.csv")], name="CSV", slug="csv", guidelines=example / "nope.txt")
    assert str(example / "nope.txt") in message and "cannot be read" in message


def test_a_guidelines_file_that_is_not_utf8_is_named(example):
    (example / "g.txt").write_bytes("Écoutez".encode("latin-1"))
    message = refused([str(example / "items.csv")], name="CSV", slug="csv", guidelines=example / "g.txt")
    assert str(example / "g.txt") in message and "line 1, field '(encoding)'" in message


def test_file_size_and_item_counts_are_limited_and_configurable(example, settings):
    settings.IMPORT_MAX_BYTES = 1024
    message = refused([str(example / "campaign.json")])
    assert "field '(size)'" in message and "IMPORT_MAX_BYTES" in message
    settings.IMPORT_MAX_BYTES = 10**6
    settings.IMPORT_MAX_ITEMS = 2
    message = refused([str(example / "campaign.json")])
    assert "top level, field 'candidates', value 3" in message and "IMPORT_MAX_ITEMS" in message
    message = refused([str(example / "items.csv")], name="CSV", slug="csv")
    assert "line 4, field '(rows)'" in message


def test_the_tally_covers_at_least_the_eighteen_reported_malformations():
    assert len(JSON_CASES) + len(CSV_CASES) + 3 >= 18


@pytest.mark.django_db(transaction=True)
def test_from_the_command_line_the_exit_status_is_2_and_there_is_no_traceback(example, tmp_path):
    import os

    path = example / "broken.json"
    path.write_text(json.dumps(mutate("campaign.slug", "../x")))
    env = {**os.environ, "DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "import_campaign", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "field 'slug', value '../x'" in done.stderr
