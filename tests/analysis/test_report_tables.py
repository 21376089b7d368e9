"""Report tables: a campaign with thousands of queries shows the most disagreeing ones; the CSV has all."""

from analysis.presentation.report_tables import PAGE_QUERIES, most_disagreeing
from analysis.presentation.table import Table


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


def test_the_body_is_written_with_every_cell_escaped_and_the_link_column_linked():
    rows = [
        {"unit": "<b>u1</b>", "score": 0.5, "url": "/units/1/?a=1&b=2"},
        {"unit": 'it\'s "2"', "score": None, "url": "/units/2/"},
    ]
    table = Table("Units", [("unit", "Unit"), ("score", "Score")], rows, link="unit")
    assert str(table.body_html) == (
        '<tr><td class="text"><a href="/units/1/?a=1&amp;b=2">&lt;b&gt;u1&lt;/b&gt;</a></td>'
        '<td class="num">0.5</td></tr>'
        '<tr><td class="text"><a href="/units/2/">it&#x27;s &quot;2&quot;</a></td>'
        '<td class="num">—</td></tr>'
    )


def test_a_heading_is_aligned_as_the_cells_the_page_shows():
    rows = [{"q": "text", "n": 1}] + [{"q": i, "n": i} for i in range(50)]
    table = Table("Per query", [("q", "Query"), ("n", "N")], rows, page_rows=rows[1:])
    assert [css for _, css in table.headings] == ["num", "num"]
    table = Table("Per query", [("q", "Query"), ("n", "N")], rows)
    assert [css for _, css in table.headings] == ["text", "num"]
