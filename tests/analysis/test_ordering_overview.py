"""The ordering report's overview counts the graders who ordered and their orderings."""

from __future__ import annotations

import pytest

from analysis import selectors
from grading.models import Ordering

pytestmark = pytest.mark.django_db


def test_the_overview_counts_the_graders_and_orderings_of_an_ordering_campaign(ordering_campaign):
    orderings = Ordering.objects.filter(campaign=ordering_campaign)
    assert orderings.count() > 0
    overview = selectors.campaign_overview(campaign_id=ordering_campaign.pk)
    assert overview["orderings"] == orderings.count()
    assert overview["active_graders"] == orderings.values("grader_id").distinct().count() > 0
    assert overview["queries_ordered"] == orderings.values("query_id").distinct().count()
    assert "judgments" not in overview  # orderings are not per-unit judgments


def test_the_ordering_tables_keep_frespa_in_its_own_column_group():
    from analysis.presentation.report_tables import _system_tables

    methods = ["AC-tau", "AC-sp", "WCA-tau", "WCA-sp", "RBA-tau", "RBA-sp", "FreSPA"]
    orderings = {"systems": [{"system": "s", "queries": 1, "scores": dict.fromkeys(methods, 0.5)}], "queries": []}
    table = _system_tables(orderings, methods, {k: k for k in methods}, "AC-tau")["systems"]
    assert table.groups == [("", 2), ("correlations with the graders (−1 to 1)", 6), ("support (FreSPA, 0 to 1)", 1)]
    assert sum(span for _, span in table.groups) == len(table.columns)
    assert table.columns[-1][0] == "FreSPA"
    assert [t.key for _, _, t in table.heading_cells if t] == ["ac", "ac", "wca", "wca", "rba", "rba", "frespa"]
