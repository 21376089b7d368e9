from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from grading.errors import InvalidValue
from grading.management.commands.import_system_orderings import Command as OrderingsCommand
from grading.services.system_scores import system_scores_import, system_scores_rows_from_csv


class Command(OrderingsCommand):  # the same campaign lookup and options
    help = (
        "Import systems' per-unit scores into a BROAD/FINE or numeric campaign from a CSV `unit,system,score` "
        "(the unit's external id) or `query,candidate,system,score` (external ids). All or nothing: a "
        "malformed file stores nothing and the error names the line, field and value (exit status 2). A "
        "system imported again has its scores replaced. Then an analysis run is started so the report "
        "evaluates them against the ground truth."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="campaign slug or id")
        parser.add_argument("file", type=Path, help="SCORES.csv with header unit,system,score or query,candidate,system,score")
        parser.add_argument("--no-analysis", action="store_true", help="do not start an analysis run afterwards")

    def handle(self, *args: Any, **opts: Any) -> None:
        campaign = self._campaign(opts["campaign"])
        path: Path = opts["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file", returncode=2)
        try:
            summary = system_scores_import(campaign=campaign, rows=system_scores_rows_from_csv(path.read_bytes()))
        except InvalidValue as exc:
            raise CommandError(f"{path}: {exc.message}. Nothing was imported.", returncode=2) from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {summary.scores} scores of {summary.units} units for system(s) {', '.join(summary.systems)} "
            f"into {campaign.slug!r} ({summary.replaced} earlier scores replaced)."))
        if not opts["no_analysis"]:
            from analysis.models import RunTrigger
            from analysis.services.uploads import run_after_upload

            run = run_after_upload(campaign_id=campaign.pk, trigger=RunTrigger.CLI, user=None)
            run.refresh_from_db()
            self.stdout.write(f"Analysis run #{run.pk}: {run.get_status_display().lower()}.")
