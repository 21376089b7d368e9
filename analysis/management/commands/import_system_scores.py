from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandParser

from analysis.management.commands.import_system_orderings import Command as OrderingsCommand
from grading.models import Campaign
from grading.services.system_scores import system_scores_import, system_scores_rows_from_csv


class Command(OrderingsCommand):  # the same campaign lookup, checks, messages and analysis run
    help = (
        "Import systems' per-unit scores into a BROAD/FINE or numeric campaign from a CSV `unit,system,score` "
        "(the unit's external id) or `query,candidate,system,score` (external ids). All or nothing: a "
        "malformed file stores nothing and the error names the line, field and value (exit status 2). A "
        "system imported again has its scores replaced. Then an analysis run is started so the report "
        "evaluates them against the ground truth."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="campaign slug or id")
        parser.add_argument(
            "file", type=Path, help="SCORES.csv: header unit,system,score or query,candidate,system,score"
        )
        parser.add_argument("--no-analysis", action="store_true", help="do not start an analysis run afterwards")

    def import_file(self, campaign: Campaign, data: bytes) -> str:
        summary = system_scores_import(campaign=campaign, rows=system_scores_rows_from_csv(data))
        return (
            f"Imported {summary.scores} scores of {summary.units} units for system(s) {', '.join(summary.systems)} "
            f"into {campaign.slug!r} ({summary.replaced} earlier scores replaced)."
        )
