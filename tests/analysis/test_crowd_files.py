"""Crowd files in and out: `agreement` reads crowd-kit's worker,task,label (and any three columns named
by --columns, e.g. a Toloka export) as it reads our ratings CSV; `export_judgments --format crowdkit`
writes a file crowd-kit's own aggregators read, with the same agreement as our ratings export."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from crowdkit.aggregation import MajorityVote
from django.core.management import CommandError, call_command

from grading.models import Assignment, Judgment
from grading.models.choices import Scheme
from tests.factories import make_campaign, record

RATINGS = "unit,grader,value\nu1,g1,a\nu1,g2,a\nu1,g3,b\nu2,g1,b\nu2,g2,b\nu2,g3,b\nu3,g1,a\nu3,g2,b\nu3,g3,a\n"


def agreement(path, *args: str) -> dict:
    out = io.StringIO()
    call_command("agreement", str(path), "--format", "json", "--bootstrap", "50", "--seed", "2", *args, stdout=out)
    return json.loads(out.getvalue())


def crowd(text: str, names: tuple[str, str, str]) -> str:
    """The ratings as a crowd file with columns worker, task, label named `names` (and shuffled)."""
    frame = pd.read_csv(io.StringIO(text))
    out = pd.DataFrame({names[1]: frame["unit"], "extra": "x", names[2]: frame["value"], names[0]: frame["grader"]})
    return out.to_csv(index=False)


def test_a_crowdkit_file_is_read_by_its_header_as_our_ratings_file_is(tmp_path):
    ours, theirs = tmp_path / "ours.csv", tmp_path / "crowd.csv"
    ours.write_text(RATINGS)
    theirs.write_text(crowd(RATINGS, ("worker", "task", "label")))
    expected = agreement(ours)
    assert expected["n_judgments"] == 9
    assert agreement(theirs) == expected


def test_any_three_columns_are_read_with_columns_and_errors_use_the_files_names(tmp_path):
    names = ("ASSIGNMENT:worker_id", "INPUT:item", "OUTPUT:result")
    ours, theirs = tmp_path / "ours.csv", tmp_path / "toloka.csv"
    ours.write_text(RATINGS)
    theirs.write_text(crowd(RATINGS, names))
    assert agreement(theirs, "--columns", ",".join(names)) == agreement(ours)
    bad = tmp_path / "bad.csv"
    bad.write_text(crowd(RATINGS, names).replace("u2,x,b,g2", "u2,x,,g2"))
    with pytest.raises(CommandError, match=r"line 6, field 'OUTPUT:result': empty"):
        agreement(bad, "--columns", ",".join(names))
    twice = tmp_path / "twice.csv"
    twice.write_text(crowd(RATINGS + "u1,g1,b\n", names))
    with pytest.raises(CommandError, match=r"line 11, fields 'INPUT:item','ASSIGNMENT:worker_id': second judgment"):
        agreement(twice, "--columns", ",".join(names))
    with pytest.raises(
        CommandError, match=r"lacks field 'INPUT:item'; expected ASSIGNMENT:worker_id,INPUT:item,OUTPUT:result"
    ):
        agreement(ours, "--columns", ",".join(names))


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", [Scheme.CATEGORICAL, Scheme.BROAD_FINE])
def test_export_judgments_crowdkit_is_read_by_crowdkit_and_gives_our_agreement(tmp_path, scheme):
    campaign = make_campaign(scheme=scheme, n_queries=2, n_candidates=4, graders=3)
    labels = ["bad", "ok", "good"] if scheme == Scheme.CATEGORICAL else ["NS", "SS", "VS"]
    for i, a in enumerate(Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").order_by("pk")):
        label = labels[(a.unit_id + (i % 4 == 0)) % 3]
        if scheme == Scheme.CATEGORICAL:
            record(a.grader, campaign, "label_set", {"value": label}, unit=a.unit)
        else:
            record(a.grader, campaign, "broad_set", {"value": label}, unit=a.unit, seq=1)
            record(a.grader, campaign, "fine_set", {"value": 5.0}, unit=a.unit, seq=2)
    path = tmp_path / "crowd.csv"
    err = io.StringIO()
    call_command("export_judgments", campaign.slug, "--format", "crowdkit", "-o", str(path), stderr=err)
    frame = pd.read_csv(path)
    assert list(frame.columns) == ["worker", "task", "label"] and len(frame) == Judgment.objects.count() == 24
    truth = MajorityVote().fit_predict(frame)  # crowd-kit's own reader: a DataFrame of worker, task, label
    assert len(truth) == 8 and set(truth) <= set(labels)
    arguments = err.getvalue().split(f"agreement {path} ", 1)[1].split()
    ratings = tmp_path / "ratings.csv"
    call_command("export_judgments", campaign.slug, "-o", str(ratings), stderr=io.StringIO())
    if scheme == Scheme.CATEGORICAL:
        ours = agreement(ratings, "--scheme", "categorical", "--categories", "bad,ok,good", "--level", "ordinal")
    else:
        plain = pd.read_csv(ratings).rename(columns={"broad": "value"})[["unit", "grader", "value"]]
        plain.to_csv(ratings, index=False)
        ours = agreement(ratings, "--scheme", "categorical", "--categories", "NS,SS,VS", "--level", "ordinal")
    got = agreement(path, *arguments)["agreement"]
    assert got.pop("chi2_queries") is None  # a crowd file names no query
    ours["agreement"].pop("chi2_queries")
    assert got == ours["agreement"]
