"""The report names the confidence level the run used, not a fixed 95%."""

import pytest

from analysis.models import AnalysisRun
from analysis.presentation.report_tables import report_plots, report_tables
from analysis.services import runs
from analysis.services.execute import run_execute

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("confidence, shown", [(0.9, "90%"), (0.95, "95%")])
def test_titles_and_alt_text_state_the_runs_confidence_level(judged_campaign, confidence, shown):
    run = AnalysisRun.objects.create(
        campaign=judged_campaign, seed=5, parameters=runs.parameters_clean({"n_boot": 50, "confidence": confidence})
    )
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.result["agreement"]["confidence"] == confidence
    assert report_tables(run, show_names=False)["agreement"].title == f"Agreement with {shown} bootstrap intervals"
    plot = report_plots(run.result)["agreement"]
    assert f"Agreement with {shown} intervals" in plot and f"Estimates with {shown} intervals:" in plot
    other = "95%" if shown == "90%" else "90%"
    assert other not in plot
