"""A refused campaign file lists every problem of its independent entries (rows, queries, candidates,
units, people) at once, on the command line and on the New campaign page; a problem with the file as
a whole still stops at once. Nothing is stored either way."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Campaign
from grading.services.campaign_file_errors import MAX_REPORTED, CampaignFileError, CampaignFileErrors
from grading.services.campaign_files import definition_check
from tests.grading.test_import_campaign import EXAMPLES, counts, example  # noqa: F401 - fixture
from tests.grading.test_organizer_create import creator, media_zip  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db
ROW = "q1,A major triad,audio,media/query-1.wav,{cand},audio,{media},system-a,{rank}\n"
# Three independent bad rows: a rank that is no number, a row without a candidate id (both found
# while reading the CSV), and a media file that does not exist (found when the values are checked).
THREE_BAD_ROWS = (
    ROW.format(cand="c-d", media="media/cand-a.wav", rank="x")
    + ROW.format(cand="", media="media/cand-a.wav", rank="1")
    + ROW.format(cand="c-e", media="media/missing.wav", rank="1")
)
THREE_PROBLEMS = [
    "line 6, field 'rank', value 'x'",
    "line 7, field 'candidate', value ''",
    "line 8, field 'media', value 'media/missing.wav'",
]


def refused(*args, **options) -> list[str]:
    before = counts()
    with pytest.raises(CommandError) as err:
        call_command("import_campaign", *args, **options)
    assert err.value.returncode == 2
    assert counts() == before
    return str(err.value).splitlines()


def test_three_bad_csv_rows_are_three_lines_of_the_command_output(example):  # noqa: F811
    path = example / "bad.csv"
    path.write_text((example / "items.csv").read_text() + THREE_BAD_ROWS)
    lines = refused(str(path), name="CSV", slug="csv")
    assert len(lines) == 4, lines
    for line, problem in zip(lines, THREE_PROBLEMS, strict=False):
        assert line.startswith(f"{path}: {problem}"), line
    assert lines[-1] == "3 problems. Nothing was imported."


def test_problems_of_the_campaign_come_first_then_the_rows_in_line_order(example):  # noqa: F811
    path = example / "bad.csv"
    path.write_text((example / "items.csv").read_text() + THREE_BAD_ROWS)
    lines = refused(str(path), name="CSV", slug="../x")
    assert [line.split(": ", 2)[1] for line in lines[:4]] == [
        "campaign, field 'slug', value '../x'",
        *(p.split(": ")[0] for p in THREE_PROBLEMS),
    ]


def bad_candidates(definition: dict) -> dict:
    definition["candidates"][0]["provenance"][0]["system"] = "system-z"
    definition["candidates"][1]["media"] = "media/missing.wav"
    definition["candidates"].append({**definition["candidates"][2]})
    definition["graders"] = ["<b>"]
    return definition


def test_every_bad_entry_of_a_json_file_is_named(example):  # noqa: F811
    path = example / "bad.json"
    path.write_text(json.dumps(bad_candidates(json.loads((example / "campaign.json").read_text()))))
    lines = refused(str(path))
    assert [line.removeprefix(f"{path}: ").split(": ")[0] for line in lines[:-1]] == [
        "candidates[0].provenance[0], field 'system', value 'system-z'",
        "candidates[1], field 'media', value 'media/missing.wav'",
        "candidates[3], field 'id', value 'c-c'",
        "graders[0], field 'username', value '<b>'",
    ]
    assert lines[-1] == "4 problems. Nothing was imported."


def test_a_broken_entry_is_reported_once_not_again_where_it_is_named():
    definition = json.loads((EXAMPLES / "campaign.json").read_text())
    definition["queries"][0]["title"] = ["not", "text"]
    definition["systems"][0]["description"] = 5
    with pytest.raises(CampaignFileError) as err:
        definition_check(definition, EXAMPLES)
    problems = getattr(err.value, "errors", [err.value])
    assert [e.where for e in problems] == ["systems[0]", "queries[0]"]  # the candidates naming them pass


@pytest.mark.parametrize(
    "text,where",
    [
        ('{"format": "evalutron.campaign/9", "campaign": 1, "candidates": 2}', "top level, field 'format'"),
        ('{"campaign": {"name": oops}, "candidates": [1, 2]}', "line 1, field '(json)'"),
    ],
)
def test_a_problem_with_the_whole_file_is_reported_alone(example, text, where):  # noqa: F811
    path = example / "bad.json"
    path.write_text(text)
    lines = refused(str(path))
    assert len(lines) == 1 and lines[0].startswith(f"{path}: {where}"), lines
    assert lines[0].endswith("Nothing was imported.")


def test_a_bad_csv_header_is_reported_alone(example):  # noqa: F811
    path = example / "bad.csv"
    path.write_text("query,candidat\n" + ",\n" * 3)
    lines = refused(str(path), name="CSV", slug="csv")
    assert len(lines) == 1 and lines[0].startswith(f"{path}: line 1, field '(header)', value 'candidat'")


def test_past_the_cap_the_rest_are_counted_not_listed(example):  # noqa: F811
    path = example / "bad.csv"
    path.write_text("candidate,candidate_text,rank\n" + "".join(f"c{i},text,x\n" for i in range(MAX_REPORTED + 20)))
    lines = refused(str(path), name="CSV", slug="csv")
    assert len(lines) == MAX_REPORTED + 2
    assert lines[MAX_REPORTED - 1].startswith(f"{path}: line {MAX_REPORTED + 1}, field 'rank'")
    assert "20 more problems not listed" in lines[-2]
    assert lines[-1] == f"{MAX_REPORTED + 20} problems. Nothing was imported."


def test_the_summary_is_the_first_problem_and_a_count():
    errors = CampaignFileErrors([CampaignFileError(f"line {n}", "rank", "x", "bad") for n in (2, 3, 4)])
    assert (errors.where, errors.field, errors.value) == ("line 2", "rank", "x")
    assert errors.message == "line 2, field 'rank', value 'x': bad (and 2 more problems)"
    assert isinstance(errors, CampaignFileError) and len(errors.errors) == 3


def test_the_page_lists_every_bad_row_next_to_the_form(client, creator):  # noqa: F811
    bad = (EXAMPLES / "items.csv").read_text() + THREE_BAD_ROWS
    response = client.post(
        "/organize/new/",
        {
            "source": "form",
            "name": "CSV",
            "slug": "csv",
            "scheme": "broad_fine",
            "initial_overlap": 2,
            "max_overlap": 3,
            "policy": "fixed",
            "items": SimpleUploadedFile("items.csv", bad.encode()),
            "media": media_zip(),
        },
    )
    assert response.status_code == 400
    errors = response.context["errors"]
    assert len(errors) == 3
    for error, problem in zip(errors, THREE_PROBLEMS, strict=True):
        assert error.startswith(problem), error
    html = response.content.decode()
    assert "3 problems. Nothing was stored." in html and html.count("<li>line ") == 3
    assert html.index('id="form-errors"') > html.index('id="by-form"')
    assert "media/missing.wav&#x27;: no such file in the media zip" in html  # not a folder of the server
    assert Campaign.objects.count() == 0


def test_a_form_that_does_not_validate_is_summed_up_in_the_same_list(client, creator):  # noqa: F811
    response = client.post(
        "/organize/new/",
        {"source": "form", "scheme": "broad_fine", "initial_overlap": 2, "max_overlap": 1, "policy": "fixed"},
    )
    assert response.status_code == 400
    errors = response.context["errors"]
    assert len(errors) >= 1 and errors[0].startswith("Name: ")
    html = response.content.decode()
    assert html.index('id="form-errors"') > html.index('id="by-form"') and "Each line names" not in html
    assert 'action="/organize/new/#form-errors"' in html


def test_a_csv_s_problems_come_in_the_order_of_its_lines(example):  # noqa: F811
    path = example / "bad.csv"
    path.write_text(
        "query,query_text,candidate,candidate_text\nq1,Q,c1,T\nq2,Q,c2,\nq3,Q,c3,x\n".replace("q3,", "q" * 101 + ",")
    )
    lines = refused(str(path), name="CSV", slug="csv")
    assert [line.removeprefix(f"{path}: ").split(",")[0] for line in lines[:2]] == ["line 3", "line 4"], lines
