"""The report's plots are drawn once per stored run and process, not on every view."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from analysis.presentation import report_tables


def test_a_runs_plots_are_drawn_once_and_again_only_for_another_version(monkeypatch):
    drawn = []
    monkeypatch.setattr(report_tables, "report_plots", lambda result: drawn.append(result) or {"n": len(drawn)})
    monkeypatch.setattr(report_tables, "_plots_kept", type(report_tables._plots_kept)())
    run = SimpleNamespace(pk=7, finished_at=datetime(2026, 1, 1, tzinfo=UTC), result={"a": 1})
    first = report_tables.report_plots_of_run(run)
    assert report_tables.report_plots_of_run(run) is first and len(drawn) == 1
    report_tables.report_plots_of_run(run, variant=("evaluation", 3))  # another evaluation laid over it
    rerun = SimpleNamespace(pk=7, finished_at=datetime(2026, 1, 2, tzinfo=UTC), result={"a": 2})
    report_tables.report_plots_of_run(rerun)
    assert len(drawn) == 3


def test_no_more_than_a_few_runs_plots_are_kept(monkeypatch):
    monkeypatch.setattr(report_tables, "report_plots", lambda result: {})
    monkeypatch.setattr(report_tables, "_plots_kept", type(report_tables._plots_kept)())
    for pk in range(report_tables.PLOTS_KEPT + 5):
        report_tables.report_plots_of_run(SimpleNamespace(pk=pk, finished_at=None, result={}))
    assert len(report_tables._plots_kept) == report_tables.PLOTS_KEPT
