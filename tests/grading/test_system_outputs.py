"""Importing systems' orderings: all or nothing, errors naming line, field and value, re-import replaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Candidate, System, SystemOutput
from grading.models.choices import Scheme
from grading.services.system_outputs import (
    SystemOrderingsError,
    json_row,
    system_orderings_import,
    system_orderings_rows_from_csv,
)
from tests.factories import make_campaign

pytestmark = [pytest.mark.django_db]

GOOD = """query,system,rank,item
q0,alpha,1,c0-2
q0,alpha,2,c0-0
q0,alpha,3,c0-1
q1,alpha,1,c1-0
q1,alpha,2,c1-1
q1,alpha,3,c1-2
q0,beta,3,c0-2
q0,beta,2,c0-1
q0,beta,1,c0-0
"""


@pytest.fixture
def campaign():
    return make_campaign(scheme=Scheme.ORDERING, n_queries=2, n_candidates=3, graders=2)


def public(campaign, *external_ids: str) -> list[str]:
    ids = dict(Candidate.objects.filter(campaign=campaign).values_list("external_id", "public_id"))
    return [ids[e] for e in external_ids]


def run_import(campaign, text: str):
    return system_orderings_import(campaign=campaign, rows=system_orderings_rows_from_csv(text.encode()))


def test_a_good_file_stores_each_systems_ordering_as_candidate_public_ids(campaign):
    summary = run_import(campaign, GOOD)
    assert summary.systems == ["alpha", "beta"] and summary.orderings == 3 and summary.queries == 2
    alpha_q0 = SystemOutput.objects.get(system__name="alpha", query__external_id="q0")
    assert alpha_q0.ordering == public(campaign, "c0-2", "c0-0", "c0-1") and alpha_q0.unit is None
    beta_q0 = SystemOutput.objects.get(system__name="beta", query__external_id="q0")
    assert beta_q0.ordering == public(campaign, "c0-0", "c0-1", "c0-2")  # rows in any order, sorted by rank
    assert set(System.objects.filter(campaign=campaign).values_list("name", flat=True)) == {"system-a", "alpha", "beta"}


def test_uploading_a_system_again_replaces_all_its_orderings(campaign):
    run_import(campaign, GOOD)
    summary = run_import(campaign, "query,system,rank,item\nq1,alpha,1,c1-2\nq1,alpha,2,c1-1\nq1,alpha,3,c1-0\n")
    assert summary.replaced == 2 and summary.created_systems == []
    alpha = SystemOutput.objects.filter(system__name="alpha")
    assert [(o.query.external_id, o.ordering) for o in alpha] == [("q1", public(campaign, "c1-2", "c1-1", "c1-0"))]
    assert SystemOutput.objects.filter(system__name="beta").count() == 1  # other systems stay


def test_json_rows_with_integer_ranks_are_accepted_and_named_by_index(campaign):
    rows = [{"query": "q0", "system": "s", "rank": r, "item": f"c0-{r - 1}"} for r in (1, 2, 3)]
    assert system_orderings_import(campaign=campaign, rows=rows, where=json_row).orderings == 1
    rows[2]["item"] = "nope"
    with pytest.raises(SystemOrderingsError, match=r"rows\[2\], field 'item', value 'nope'"):
        system_orderings_import(campaign=campaign, rows=rows, where=json_row)


BAD = [
    ("unknown query", GOOD.replace("q1,alpha,1,c1-0", "q9,alpha,1,c1-0"), "line 5, field 'query', value 'q9'"),
    ("unknown item", GOOD.replace("q0,alpha,3,c0-1", "q0,alpha,3,zzz"), "line 4, field 'item', value 'zzz'"),
    (
        "item of another query",
        GOOD.replace("q0,alpha,3,c0-1", "q0,alpha,3,c1-1"),
        "line 4, field 'item', value 'c1-1': not a candidate of query 'q0'",
    ),
    ("duplicate rank", GOOD.replace("q0,alpha,2,c0-0", "q0,alpha,1,c0-0"), "line 3, field 'rank', value 1"),
    ("duplicate item", GOOD.replace("q0,alpha,3,c0-1", "q0,alpha,3,c0-2"), "line 4, field 'item', value 'c0-2'"),
    ("bad rank", GOOD.replace("q0,beta,2,c0-1", "q0,beta,two,c0-1"), "line 9, field 'rank', value 'two'"),
    ("rank zero", GOOD.replace("q0,beta,2,c0-1", "q0,beta,0,c0-1"), "line 9, field 'rank', value '0'"),
    ("rank beyond k", GOOD.replace("q0,beta,2,c0-1", "q0,beta,4,c0-1"), "line 9, field 'rank', value '4'"),
    (
        "not a permutation",
        GOOD.replace("q1,alpha,3,c1-2\n", ""),
        "line 5, field 'item', value 'c1-2': system 'alpha' does not rank",
    ),
    ("empty system", GOOD.replace("q0,beta,1,c0-0", "q0,,1,c0-0"), "line 10, field 'system', value ''"),
    (
        "missing column",
        GOOD.replace("query,system,rank,item", "query,system,position,item"),
        "line 1, field 'rank', value 'query,system,position,item'",
    ),
    ("extra field", GOOD.replace("q0,beta,1,c0-0", "q0,beta,1,c0-0,x"), "line 10, field '(row)', value 'x'"),
]


@pytest.mark.parametrize(("text", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_malformed_file_names_line_field_and_value_and_stores_nothing(campaign, text, message):
    run_import(campaign, "query,system,rank,item\nq0,beta,1,c0-1\nq0,beta,2,c0-0\nq0,beta,3,c0-2\n")
    before = list(SystemOutput.objects.values_list("system__name", "query_id", "ordering"))
    with pytest.raises(SystemOrderingsError) as caught:
        run_import(campaign, text)
    assert message in caught.value.message
    assert list(SystemOutput.objects.values_list("system__name", "query_id", "ordering")) == before
    assert not System.objects.filter(campaign=campaign, name="alpha").exists()


def test_a_rating_campaign_takes_no_system_orderings():
    campaign = make_campaign(scheme=Scheme.BROAD_FINE, n_queries=2, n_candidates=3)
    with pytest.raises(SystemOrderingsError, match="field 'scheme', value 'broad_fine'"):
        run_import(campaign, GOOD)


def test_the_cli_imports_and_exits_with_status_2_on_a_malformed_file(campaign, tmp_path: Path, capsys):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(GOOD)
    bad.write_text(GOOD.replace("q0,alpha,3,c0-1", "q0,alpha,3,zzz"))
    call_command("import_system_orderings", campaign.slug, str(good), "--no-analysis")
    assert "Imported 3 orderings of 2 queries" in capsys.readouterr().out
    with pytest.raises(CommandError) as caught:
        call_command("import_system_orderings", campaign.slug, str(bad))
    assert caught.value.returncode == 2
    assert "line 4, field 'item', value 'zzz'" in str(caught.value) and "Nothing was imported" in str(caught.value)
    assert SystemOutput.objects.count() == 3
