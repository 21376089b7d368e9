import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def test_it_prints_one_row_per_policy_and_aggregation_with_the_baseline():
    out = StringIO()
    call_command(
        "simulate_allocation", "--units", "300", "--format", "json", "--budget", "900", "--seeds", "2", stdout=out
    )
    rows = {(r["policy"], r["aggregation"]): r for r in json.loads(out.getvalue())}
    policies = {"fixed", "consensus", "confusability", "query_deviation", "uncertainty", "uncertainty@1", "fixed@max"}
    assert set(rows) == {(p, a) for p in policies for a in ("majority", "dawid_skene")}
    assert rows["fixed", "majority"]["judgments"] == 600 and rows["consensus", "majority"]["judgments"] <= 900
    assert (
        rows["uncertainty", "dawid_skene"]["judgments"] <= 900
        and rows["fixed@max", "majority"]["share_of_baseline"] == 1
    )
    assert rows["fixed@max", "majority"]["accuracy"] >= rows["fixed", "majority"]["accuracy"]
    assert all(r["seeds"] == 2 for r in rows.values())


def test_a_single_accuracy_means_every_grader_has_it():
    out = StringIO()
    call_command(
        "simulate_allocation", "--units", "200", "--accuracy", "0.7", "--format", "json", "--seeds", "1", stdout=out
    )
    rows = {(r["policy"], r["aggregation"]): r for r in json.loads(out.getvalue())}
    assert len(rows) == 14 and 0.6 < rows["fixed@max", "majority"]["accuracy"] < 0.95


def test_bad_accuracies_exit_with_status_2():
    with pytest.raises(CommandError, match="--accuracy") as err:
        call_command("simulate_allocation", "--accuracy", "high,low")
    assert err.value.returncode == 2
