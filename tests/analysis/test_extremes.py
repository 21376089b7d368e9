"""The most and least confusable units are chosen by the run (``sections.agreement.extremes``), by
the rule an ORDER BY over the stored per-unit rows followed when they were rows (by the measure,
ties by unit id), so the report reads none of a run's per-unit results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse

from analysis import unit_blocks
from analysis.models import AnalysisRun, RunStatus, UnitBlock
from analysis.services import runs
from analysis.services.execute import run_execute
from analysis.services.sections.agreement import extremes
from grading.models.choices import Role
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, make_user

PARAMS = {"n_boot": 50, "confidence": 0.95, "fine_tolerance": 0.5}
FIELDS = ["unit", "n", "mean", "dif", "std", "entropy", "n_ns", "n_ss", "n_vs"]


def _units(std, n=None, unit=None) -> pd.DataFrame:
    size = len(std)
    return pd.DataFrame(
        {
            "unit": unit if unit is not None else np.arange(100, 100 + size),
            "n": n if n is not None else [3] * size,
            "mean": np.linspace(1, 9, size),
            "dif": np.ones(size),
            "std": std,
            "entropy": np.zeros(size),
        }
    )


def test_the_most_and_least_go_by_std_with_ties_by_unit_and_skip_the_unrated():
    std = [0.5, 2.0, np.nan, 2.0, 0.0, 0.5, 9.0, 0.0]
    n = [3, 3, 3, 3, 3, 3, 1, 2]  # the 9.0 is one judgment's: not rated
    out = extremes(_units(std, n, unit=[7, 3, 5, 1, 8, 2, 4, 6]), limit=3)
    assert out["measure"] == "std"
    assert [r["unit"] for r in out["most"]] == [1, 3, 2]  # 2.0, 2.0 (by unit), then 0.5 of unit 2
    assert [r["unit"] for r in out["least"]] == [6, 8, 2]  # 0.0, 0.0, then 0.5 of unit 2 before 7
    assert out["most"][0] == {
        "unit": 1,
        "n": 3,
        "mean": pytest.approx(1 + 8 * 3 / 7),
        "dif": 1.0,
        "std": 2.0,
        "entropy": 0.0,
    }
    assert all(type(r["unit"]) is int and type(r["std"]) is float for r in out["most"] + out["least"])


def test_every_tie_of_the_last_place_is_a_candidate():
    std = np.zeros(50)
    std[[3, 30]] = 1.0
    out = extremes(_units(std, unit=np.arange(50)[::-1].copy()), limit=4)
    assert [r["unit"] for r in out["most"]] == [19, 46, 0, 1]
    assert [r["unit"] for r in out["least"]] == [0, 1, 2, 3]


def test_names_as_units_and_a_missing_figure_as_none():
    units = _units([1.0, 3.0, 2.0], unit=["b", "c", "a"]).assign(entropy=[np.nan, 1.0, 0.5])
    out = extremes(units, limit=2)
    assert [r["unit"] for r in out["most"]] == ["c", "a"]
    assert out["least"][0] == {"unit": "b", "n": 3, "mean": 1.0, "dif": 1.0, "std": 1.0, "entropy": None}
    assert extremes(_units([np.nan, np.nan]), limit=2) == {"measure": "std", "most": [], "least": []}


def _ordered(run: AnalysisRun, order: str, limit: int) -> list[dict]:
    """The stored units ordered by std (``order``: "std" or "-std"), ties by unit id: the rule the
    report followed when it asked the database."""
    units = unit_blocks.RunUnits(run.pk).frame(FIELDS)
    units = units[(units["n"] >= 2) & units["std"].notna()].copy()
    units["key"] = -units["std"] if order.startswith("-") else units["std"]
    units = units.sort_values(["key", "unit"], kind="stable").head(limit)
    units = units[FIELDS].astype(object).where(units[FIELDS].notna(), None)
    return [{k: v.item() if hasattr(v, "item") else v for k, v in r.items()} for r in units.to_dict("records")]


@pytest.fixture
def run(db):
    organizer = make_user("olga")
    campaign = make_campaign(n_queries=5, n_candidates=6, graders=5, overlap=3, organizer=organizer)
    judge_broad_fine(campaign, seed=5)
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean(PARAMS), seed=3)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    return run


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_run_chooses_what_the_database_orders_first(run):
    chosen = run.result["confusability"]["extremes"]
    assert unit_blocks.RunUnits(run.pk).stored == 30
    assert chosen["most"] == _ordered(run, "-std", 10)
    assert chosen["least"] == _ordered(run, "std", 10)
    assert run.page_result["confusability"]["extremes"] == chosen


@pytest.mark.django_db
def test_the_report_shows_the_chosen_units_by_their_names_linked_to_their_pages(client, run):
    client.force_login(run.campaign.roles.get(role=Role.ORGANIZER).user)
    page = client.get(reverse("analysis:report", args=[run.campaign_id])).content.decode()
    for row in run.result["confusability"]["extremes"]["most"][:3]:
        unit = run.campaign.units.get(pk=row["unit"])
        link = reverse("analysis:unit", args=[run.campaign_id, unit.pk])
        assert f'href="{link}">{unit.external_id}<' in page


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_report_page_reads_no_per_unit_row(client, run):
    """The tables come from the result: the page costs the same at 2,000,000 units as at 30, and the
    per-unit rows need no index on a measure (so none has to be kept when they are stored)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(run.campaign.roles.get(role=Role.ORGANIZER).user)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("analysis:report", args=[run.campaign_id])).status_code == 200
    assert queries.captured_queries
    assert not [q["sql"] for q in queries.captured_queries if UnitBlock._meta.db_table in q["sql"]]


@pytest.mark.django_db
def test_the_tables_csv_keeps_its_columns_and_names_the_units(run):
    from analysis.presentation.report_tables import report_tables

    tables = report_tables(run, show_names=False)
    lines = tables["most_confusable"].csv().splitlines()
    assert lines[0] == "unit__external_id,n,mean,dif,std,entropy,majority_broad,n_ns,n_ss,n_vs"
    first = run.result["confusability"]["extremes"]["most"][0]
    assert lines[1].split(",")[0] == run.campaign.units.get(pk=first["unit"]).external_id
    assert len(lines) == 11 and len(tables["least_confusable"].csv().splitlines()) == 11
