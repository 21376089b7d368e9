"""Report tables: a campaign with thousands of queries shows the most disagreeing ones; the CSV has all."""

import pytest
from django.utils import timezone

from analysis import selectors
from analysis.models import AnalysisRun, RunStatus
from analysis.presentation.report_tables import PAGE_QUERIES, most_disagreeing, report_tables
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


@pytest.mark.django_db
@pytest.mark.both_backends
def test_the_page_reads_only_the_queries_it_shows_and_the_same_ones_on_either_database(judged_campaign):
    """The report page's read of the latest run holds the PAGE_QUERIES most disagreeing queries (ties
    and missing figures in the result's order, as `most_disagreeing`) and how many there are; every
    other section as stored. The CSV reads the whole result."""
    pcts = [None, 10.0, 10.0, 0.0, *[float(i % 7) for i in range(60)], 10.0]
    queries = [{"query": i, "label": f"q{i}", "disagreement_pct": p} for i, p in enumerate(pcts)]
    result = {"overview": {"units": 3}, "queries": queries, "agreement": {"levels": []}}
    run = AnalysisRun.objects.create(
        campaign=judged_campaign, status=RunStatus.SUCCEEDED, result=result, finished_at=timezone.now()
    )
    page = selectors.run_latest_good_for_page(campaign_id=judged_campaign.pk, page_queries=PAGE_QUERIES)
    assert page.pk == run.pk
    assert page.result == {**result, "queries": most_disagreeing(queries), "queries_total": len(queries)}
    assert [q["label"] for q in page.result["queries"][:3]] == ["q1", "q2", "q64"]
    table = report_tables(page, show_names=False)["queries"]
    assert table.note.startswith(f"The {PAGE_QUERIES} of {len(queries)} queries")
    assert selectors.run_latest_good(campaign_id=judged_campaign.pk).result["queries"] == queries


@pytest.mark.django_db
def test_a_result_without_per_query_figures_is_read_as_stored(judged_campaign):
    result = {"overview": {"units": 3}, "orderings": {"queries": []}}
    AnalysisRun.objects.create(
        campaign=judged_campaign, status=RunStatus.SUCCEEDED, result=result, finished_at=timezone.now()
    )
    page = selectors.run_latest_good_for_page(campaign_id=judged_campaign.pk, page_queries=PAGE_QUERIES)
    assert page.result == result


@pytest.mark.django_db
def test_a_runs_tables_are_written_once_per_process_and_a_renamed_account_shows_at_once(judged_campaign, monkeypatch):
    """The report page keeps a stored run's tables as HTML; what they depend on besides the run (the
    systems evaluation laid over it, the user names an admin sees) is part of the key."""
    from django.contrib.auth import get_user_model

    from analysis.presentation import report_tables as module
    from analysis.services import runs
    from analysis.services.execute import run_execute

    run = AnalysisRun.objects.create(campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=3)
    assert run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    made = []
    real = module.report_tables
    monkeypatch.setattr(module, "report_tables", lambda *a, **k: made.append(1) or real(*a, **k))

    first = module.report_tables_rendered(run, show_names=True)
    again = module.report_tables_rendered(run, show_names=True)
    assert again is first and len(made) == 1
    assert 'id="table-graders"' in first.html["graders"]
    assert first.html["graders"].count("<tr>") == 1 + len(first.tables["graders"].rows)

    grader = get_user_model().objects.get(pk=run.result["graders"][0]["grader"])
    grader.username = "renamed-grader"
    grader.save()
    renamed = module.report_tables_rendered(run, show_names=True)
    assert len(made) == 2 and "renamed-grader" in renamed.html["graders"]
    assert "renamed-grader" not in module.report_tables_rendered(run, show_names=False).html["graders"]
    assert module.report_tables_rendered(run, show_names=True, variant=("evaluation", 1)) is not renamed


@pytest.mark.django_db
@pytest.mark.both_backends
def test_a_run_stores_the_pages_cut_of_its_result_and_the_page_reads_that_alone(judged_campaign):
    """A run stored by the service keeps the page's cut (page_result): the page reads it in one
    query, and it holds what cutting the whole result gives."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from analysis.services import runs
    from analysis.services.execute import run_execute

    run = AnalysisRun.objects.create(campaign=judged_campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=4)
    assert run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.page_result == selectors.page_result_of(run.result)
    assert run.page_result["queries_total"] == len(run.result["queries"])
    with CaptureQueriesContext(connection) as queries:
        page = selectors.run_latest_good_for_page(campaign_id=judged_campaign.pk, page_queries=PAGE_QUERIES)
    assert len(queries) == 1 and "jsonb_array_elements" not in queries[0]["sql"]
    assert page.result == run.page_result
