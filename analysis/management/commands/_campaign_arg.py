"""Shared by the analysis commands: a campaign named by id or slug, and its latest succeeded analysis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, CommandParser

from analysis import qrels, selectors
from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import Campaign


def campaign_from_arg(value: str) -> Campaign:
    campaign = Campaign.objects.filter(pk=int(value)).first() if value.isdigit() else None
    campaign = campaign or Campaign.objects.filter(slug=value).first()
    if campaign is None:
        raise CommandError(f"no campaign with id or slug {value!r}")
    return campaign


def latest_good_run(campaign: Campaign, *, fresh: bool, say: Callable[[str], None]) -> AnalysisRun:
    """The campaign's latest succeeded analysis; one is run here first if there is none (or `fresh`)."""
    run = None if fresh else selectors.run_latest_good(campaign_id=campaign.pk)
    if run is not None:
        return run
    run = runs.run_create(campaign_id=campaign.pk, trigger=RunTrigger.CLI, enqueue=False)
    say(f"no succeeded analysis yet: running #{run.number} here")
    outcome = run_execute(run_id=run.pk)
    run.refresh_from_db()
    if outcome == RunStatus.RUNNING:
        raise CommandError(
            f"an identical analysis, run #{run.number}, is running elsewhere: export again when it has finished"
        )
    if outcome != RunStatus.SUCCEEDED:
        raise CommandError(f"analysis run #{run.number} failed: {run.error}")
    return run


def add_grade_arguments(parser: CommandParser) -> None:
    """The options of the qrels grade mapping (analysis/qrels.py)."""
    parser.add_argument("--grade", choices=list(qrels.SOURCES), help="qrels: what a grade is read from (below)")
    parser.add_argument("--broad-grades", help="qrels: the grade of each BROAD category (default NS=0,SS=1,VS=2)")
    parser.add_argument("--thresholds", help="qrels: ascending cut points of the mean or model score, e.g. 3.5,7")


def grade_mapping_from_options(campaign: Campaign, options: dict[str, Any]) -> qrels.GradeMapping:
    try:
        return qrels.grade_mapping(
            campaign,
            source=options["grade"],
            broad_grades=qrels.parse_broad_grades(options["broad_grades"]) if options["broad_grades"] else None,
            thresholds=qrels.parse_thresholds(options["thresholds"]) if options["thresholds"] else None,
        )
    except qrels.QrelsError as exc:
        raise CommandError(str(exc)) from None
