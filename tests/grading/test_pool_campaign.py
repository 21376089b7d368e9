"""Pools from TREC runs: tolerant reading of the usual variants, line-numbered refusals, depth-K pooling
with the runs as systems and their ranks as provenance, a draft campaign through the importer."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from grading.models import Campaign, CandidateProvenance, SystemOutput, Unit
from grading.services.campaign_file_errors import CampaignFileError
from grading.services.trec_runs import pool, run_parse
from tests.factories import make_user

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trec"


def test_a_run_is_read_through_tabs_extra_spaces_blank_lines_and_a_bom_in_trec_eval_order():
    text = "\ufeffq1\tQ0\td1\t1\t2.5\tmine\r\n\n  q1  0 d2 2   3.0 mine\nq1 Q0 d3 3 3.0 mine\nq2 Q0 d1 0 1 mine\n"
    run = run_parse(text, name="r.txt")
    assert run.tag == "mine" and run.n_lines == 4
    # by score, highest first; equal scores by document id in reverse, as trec_eval orders them
    assert [d for d, _ in run.topics["q1"]] == ["d3", "d2", "d1"]
    assert run.topics["q2"] == [("d1", 1.0)]


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ("q1 Q0 d1 1 2.5", "(line)", "q1 Q0 d1 1 2.5"),
        ("q1 Q0 d1 first 2.5 mine", "rank", "first"),
        ("q1 Q0 d1 1 high mine", "score", "high"),
        ("q1 Q0 d1 1 nan mine", "score", "nan"),
        ("q1 Q0 d9 1 2.0 other", "tag", "other"),
        ("q1 Q0 d0 1 2.0 mine", "docid", "d0"),
    ],
)
def test_a_bad_run_line_is_refused_naming_file_line_field_and_value(line, field, value):
    text = f"q1 Q0 d0 1 3.0 mine\n\n{line}\n"
    with pytest.raises(CampaignFileError) as caught:
        run_parse(text, name="runs/a.txt")
    assert caught.value.where == "runs/a.txt line 3" and caught.value.field == field
    assert str(caught.value).startswith(f"runs/a.txt line 3, field {field!r}, value {value!r}: ")


def test_every_bad_line_is_listed_and_an_empty_file_is_refused():
    with pytest.raises(CampaignFileError) as caught:
        run_parse("q1 Q0 d1 x 1 m\nq1 Q0 d2 2 y m\n", name="a.txt")
    assert [e.where for e in caught.value.all_errors()] == ["a.txt line 1", "a.txt line 2"]
    with pytest.raises(CampaignFileError, match="holds no lines"):
        run_parse("\n\n", name="a.txt")


def test_the_pool_is_the_union_of_each_runs_first_k_documents_per_topic():
    a = run_parse("q1 Q0 d1 1 9 a\nq1 Q0 d2 2 8 a\nq1 Q0 d3 3 7 a\nq2 Q0 d4 1 1 a\n", name="a")
    b = run_parse("q1 Q0 d3 1 9 b\nq1 Q0 d5 2 8 b\nq1 Q0 d1 3 7 b\n", name="b")
    pooled = pool([a, b], 2)
    assert pooled == {"q1": {"d1": {"a": 1}, "d2": {"a": 2}, "d3": {"b": 1}, "d5": {"b": 2}}, "q2": {"d4": {"a": 1}}}
    assert pool([a, b], 3)["q1"]["d1"] == {"a": 1, "b": 3}


@pytest.mark.django_db
def test_pool_campaign_makes_a_draft_campaign_of_the_example_runs(capsys):
    runs = [str(EXAMPLES / f"run_{x}.txt") for x in "abc"]
    call_command(
        "pool_campaign",
        "--name",
        "TREC example",
        "--scheme",
        "broad_fine",
        "--depth",
        "3",
        "--topics",
        str(EXAMPLES / "topics.tsv"),
        "--docs",
        str(EXAMPLES / "docs.jsonl"),
        *runs,
    )
    campaign = Campaign.objects.get(slug="trec-example")
    assert campaign.status == "draft" and campaign.scheme == "broad_fine"
    assert sorted(campaign.systems.values_list("name", flat=True)) == ["bm25", "dense", "random"]
    assert list(campaign.queries.values_list("external_id", "text")) == [
        ("t1", "solo piano pieces for a rainy evening"),
        ("t2", "upbeat brass band music for a street parade"),
        ("t3", "folk songs sung in close harmony"),
    ]
    expected = {
        (qid, doc)
        for path in runs
        for qid, docs in run_parse(Path(path).read_text(), name=path).topics.items()
        for doc, _ in docs[:3]
    }
    assert set(Unit.objects.filter(campaign=campaign).values_list("query__external_id", "candidate__external_id")) == (
        expected
    )
    assert campaign.candidates.get(external_id="d03").text == "Debussy, Clair de lune, solo piano"
    provenance = CandidateProvenance.objects.filter(candidate__campaign=campaign, query__external_id="t1")
    assert provenance.count() == 9
    assert provenance.get(system__name="dense", candidate__external_id="d01").rank == 3
    assert len(expected) == 16 and "3 topics, 13 documents, 16 units" in capsys.readouterr().out
    # each run's score of every pooled pair it retrieved, at any depth, is its per-unit system score
    scores = {
        (qid, doc, run.tag): score
        for path in runs
        for run in [run_parse(Path(path).read_text(), name=path)]
        for qid, docs in run.topics.items()
        for doc, score in docs
        if (qid, doc) in expected
    }
    outputs = SystemOutput.objects.filter(system__campaign=campaign).values_list(
        "unit__query__external_id", "unit__candidate__external_id", "system__name", "score"
    )
    assert len(scores) > 16 and {(q, c, s): v for q, c, s, v in outputs} == scores


@pytest.mark.django_db
def test_a_bad_run_file_creates_nothing_and_names_the_file_line_field_and_value(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("t1 Q0 d01 1 1.0 x\nt1 Q0 d02 2 1,5 x\n")
    with pytest.raises(CommandError) as caught:
        call_command("pool_campaign", "--name", "Bad", "--depth", "2", str(EXAMPLES / "run_a.txt"), str(bad))
    assert f"{bad} line 2, field 'score', value '1,5': the score must be a number" in str(caught.value)
    assert "Nothing was created" in str(caught.value)
    assert not Campaign.objects.exists()


@pytest.mark.django_db
def test_a_pooled_document_missing_from_the_docs_file_and_a_shared_tag_are_refused(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d01", "text": "one"}\n{"id": "d02", "url": "https://example.org/d02"}\n')
    with pytest.raises(CommandError, match=r"field 'id', value 'd04': a pooled document has no line in the docs file"):
        call_command("pool_campaign", "--name", "P", "--depth", "3", "--docs", str(docs), str(EXAMPLES / "run_a.txt"))
    copy = tmp_path / "again.txt"
    copy.write_text((EXAMPLES / "run_a.txt").read_text())
    with pytest.raises(CommandError, match="has the same tag: each run is one system"):
        call_command("pool_campaign", "--name", "P", "--depth", "3", str(EXAMPLES / "run_a.txt"), str(copy))
    bad_docs = tmp_path / "bad.jsonl"
    bad_docs.write_text('{"id": "d01", "text": "one"}\n{"id": "d02"}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl line 2, field 'text', value None: a document needs"):
        call_command("pool_campaign", "--name", "P", "--depth", "1", "--docs", str(bad_docs), str(copy))
    assert not Campaign.objects.exists()


def _upload(path: Path, name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes(), content_type="text/plain")


def _runs_form(**extra) -> dict:
    return {
        "source": "runs",
        "runs-name": "Pooled on the page",
        "runs-scheme": "broad_fine",
        "runs-initial_overlap": "2",
        "runs-depth": "3",
        "runs-runs": [_upload(EXAMPLES / f"run_{x}.txt") for x in "abc"],
        "runs-topics": _upload(EXAMPLES / "topics.tsv"),
        "runs-docs": _upload(EXAMPLES / "docs.jsonl"),
        **extra,
    }


@pytest.mark.django_db
def test_several_run_files_on_the_new_campaign_page_are_previewed_then_pooled_as_the_command_pools(client, tmp_path):
    creator = make_user("creator", is_staff=True)
    client.force_login(creator)
    page = client.get("/organize/new/").content.decode()
    assert "From TREC runs (pooling)" in page and 'name="runs-runs"' in page and "multiple" in page
    response = client.post("/organize/new/", _runs_form())
    assert response.status_code == 200 and not Campaign.objects.exists()
    preview = response.context["preview"]
    assert preview.counts["units"] == 16 and preview.counts["systems"] == 3 and preview.counts["queries"] == 3
    response = client.post("/organize/new/confirm/", {"token": preview.token, "action": "confirm"})
    campaign = Campaign.objects.get(slug="pooled-on-the-page")
    assert response.status_code == 302 and campaign.status == "draft"
    call_command(
        "pool_campaign",
        "--name",
        "By the command",
        "--depth",
        "3",
        "--topics",
        str(EXAMPLES / "topics.tsv"),
        "--docs",
        str(EXAMPLES / "docs.jsonl"),
        *[str(EXAMPLES / f"run_{x}.txt") for x in "abc"],
        stdout=io.StringIO(),
    )
    by_command = Campaign.objects.get(slug="by-the-command")

    def shape(c):
        rows = CandidateProvenance.objects.filter(candidate__campaign=c)
        return sorted(rows.values_list("query__external_id", "candidate__external_id", "system__name", "rank"))

    assert len(shape(campaign)) == 27 and shape(campaign) == shape(by_command)
    scores = lambda c: sorted(SystemOutput.objects.filter(system__campaign=c).values_list("unit__external_id", "score"))  # noqa: E731
    assert len(scores(campaign)) > 16 and scores(campaign) == scores(by_command)


@pytest.mark.django_db
def test_a_bad_run_file_on_the_page_is_listed_beside_the_runs_form_with_file_line_field_and_value(client):
    client.force_login(make_user("creator", is_staff=True))
    bad = SimpleUploadedFile("mine.txt", b"t1 Q0 d01 1 9 mine\nt1 Q0 d02 2 9 mine extra\n", content_type="text/plain")
    response = client.post("/organize/new/", _runs_form(**{"runs-runs": [_upload(EXAMPLES / "run_a.txt"), bad]}))
    assert response.status_code == 400 and not Campaign.objects.exists()
    html = response.content.decode()
    section = html[html.index('id="by-runs"') :]
    assert "There is a problem" in section
    assert "mine.txt line 2, field &#x27;(line)&#x27;" in section and "found 7" in section
    response = client.post("/organize/new/", _runs_form(**{"runs-depth": "0"}))
    assert response.status_code == 400 and "Pool depth (K)" in response.content.decode()
