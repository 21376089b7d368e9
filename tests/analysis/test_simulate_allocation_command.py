import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def test_it_prints_one_row_per_policy_and_the_ceiling():
    out = StringIO()
    call_command("simulate_allocation", "--units", "300", "--format", "json", "--budget", "900", stdout=out)
    rows = {r["policy"]: r for r in json.loads(out.getvalue())}
    assert set(rows) == {"fixed", "consensus", "confusability", "query_deviation", "fixed@max"}
    assert rows["fixed"]["judgments"] == 600 and rows["consensus"]["judgments"] <= 900
    assert rows["fixed@max"]["accuracy"] >= rows["fixed"]["accuracy"]


def test_bad_accuracies_exit_with_status_2():
    with pytest.raises(CommandError, match="--accuracy") as err:
        call_command("simulate_allocation", "--accuracy", "high,low")
    assert err.value.returncode == 2
