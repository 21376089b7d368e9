"""`manage.py agreement` and an analysis run build the agreement sections with one function: a
campaign's judgments exported to a file give the command every figure of the app's result."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from analysis.management.commands._judgments_csv import agreement_arguments
from analysis.services import runs
from analysis.services.report import report_compute
from grading.models import Assignment
from grading.models.choices import Scheme
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, record

pytestmark = pytest.mark.django_db
SHARED = ("agreement", "confusability", "fine_within_broad")


def _same(cli: Any, app: Any, where: str = "") -> int:
    """Assert equal structure and figures; returns how many numbers were compared."""
    if isinstance(app, dict):
        assert isinstance(cli, dict) and set(cli) == set(app), (where, sorted(cli), sorted(app))
        return sum(_same(cli[k], app[k], f"{where}.{k}") for k in app)
    if isinstance(app, list):
        assert isinstance(cli, list) and len(cli) == len(app), where
        return sum(_same(c, a, f"{where}[{i}]") for i, (c, a) in enumerate(zip(cli, app, strict=True)))
    if isinstance(app, float) and math.isnan(app):
        assert cli is None or (isinstance(cli, float) and math.isnan(cli)), (where, cli)  # JSON has no NaN
        return 0
    if isinstance(app, float) and not isinstance(app, bool):
        assert isinstance(cli, int | float) and math.isclose(cli, app, rel_tol=1e-12, abs_tol=1e-12), (where, cli, app)
        return 1
    assert cli == app, (where, cli, app)
    return int(isinstance(app, int) and not isinstance(app, bool))


def _cli_report(campaign, tmp_path: Path, *, n_boot: int, seed: int) -> dict[str, Any]:
    path = tmp_path / "judgments.csv"
    call_command("export_judgments", str(campaign.pk), "--output", str(path), stderr=io.StringIO())
    out = io.StringIO()
    call_command(
        "agreement",
        str(path),
        *agreement_arguments(campaign),
        "--bootstrap",
        str(n_boot),
        "--seed",
        str(seed),
        "--format",
        "json",
        stdout=out,
    )
    return json.loads(out.getvalue())


def _app_result(campaign, *, n_boot: int, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    result, units = report_compute(
        campaign_id=campaign.pk, parameters=runs.parameters_clean({"n_boot": n_boot}), seed=seed
    )
    return result, json.loads(json.dumps(units.to_dict("records"), default=float))


def _judge_scores(campaign) -> None:
    for i, a in enumerate(Assignment.objects.filter(campaign=campaign).select_related("grader").order_by("pk")):
        record(a.grader, campaign, "score_set", {"value": (a.unit_id * 3 + i % 3) % 6}, unit=a.unit)


def _judge_labels(campaign) -> None:
    labels = campaign.scheme_params["labels"]
    for i, a in enumerate(Assignment.objects.filter(campaign=campaign).select_related("grader").order_by("pk")):
        record(a.grader, campaign, "label_set", {"value": labels[(a.unit_id + i % 2) % len(labels)]}, unit=a.unit)


@pytest.mark.parametrize(
    "scheme, judge",
    [(Scheme.BROAD_FINE, judge_broad_fine), (Scheme.NUMERIC, _judge_scores), (Scheme.CATEGORICAL, _judge_labels)],
)
def test_the_command_on_exported_judgments_gives_every_figure_of_the_app(tmp_path, scheme, judge):
    campaign = make_campaign(scheme=scheme, n_queries=4, n_candidates=5, graders=3)
    judge(campaign)
    app, app_units = _app_result(campaign, n_boot=200, seed=20260401)
    cli = _cli_report(campaign, tmp_path, n_boot=200, seed=20260401)

    assert app["agreement"]["levels"] and app["agreement"]["alpha"]["ci_low"] is not None  # intervals to compare
    compared = sum(_same(cli[section], app[section], section) for section in SHARED)
    compared += _same(cli["units"], app_units, "units")
    assert compared > 100
    assert cli["n_judgments"] == Assignment.objects.filter(campaign=campaign).count()


def test_two_graders_get_the_same_cohen_kappas_from_both(tmp_path):
    campaign = make_campaign(scheme=Scheme.CATEGORICAL, n_queries=3, n_candidates=6, graders=2)
    _judge_labels(campaign)
    app, _ = _app_result(campaign, n_boot=50, seed=1)
    cli = _cli_report(campaign, tmp_path, n_boot=50, seed=1)
    assert set(app["agreement"]["cohen"]) >= {"unweighted", "linear", "quadratic"}
    assert app["agreement"]["cohen"]["unweighted"] is not None
    assert cli["agreement"]["cohen"] == app["agreement"]["cohen"]
