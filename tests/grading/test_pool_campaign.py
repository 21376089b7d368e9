"""Pools from TREC runs: tolerant reading of the usual variants, line-numbered refusals, depth-K pooling
with the runs as systems and their ranks as provenance, a draft campaign through the importer."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from grading.models import Campaign, CandidateProvenance, Unit
from grading.services.campaign_file_errors import CampaignFileError
from grading.services.trec_runs import pool, run_parse

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
