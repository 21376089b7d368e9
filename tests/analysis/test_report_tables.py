"""Report tables: a campaign with thousands of queries shows the most disagreeing ones; the CSV has all."""

from analysis.presentation.table import Table
from analysis.services.tables import PAGE_QUERIES, most_disagreeing


def test_the_page_shows_the_most_disagreeing_queries_and_the_csv_all_of_them():
    queries = [{"label": f"q{i}", "disagreement_pct": float(i % 97)} for i in range(500)]
    shown = most_disagreeing(queries)
    assert len(shown) == PAGE_QUERIES
    assert [q["disagreement_pct"] for q in shown] == sorted((q["disagreement_pct"] for q in queries), reverse=True)[
        :PAGE_QUERIES
    ]
    table = Table("Per query", [("label", "Query"), ("disagreement_pct", "%")], queries, page_rows=shown)
    assert len(table.display_rows) == PAGE_QUERIES
    assert table.csv().count("\n") == 1 + len(queries)
