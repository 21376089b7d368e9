"""python manage.py export_ground_truth CAMPAIGN --format csv|json|parquet [--output F] [filters]"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis import export, selectors
from analysis.management.commands._campaign_arg import campaign_from_arg
from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import runs
from analysis.services.execute import run_execute


class Command(BaseCommand):
    help = (
        "Write a campaign's ground truth (one row per unit plus a metadata block) from its latest "
        "succeeded analysis; runs one here first if there is none. See docs/analysis.md for the formats."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("--format", choices=list(export.FORMATS), default="csv")
        parser.add_argument("--output", "-o", help="file to write (default: standard output; parquet needs a file)")
        parser.add_argument("--min-judgments", type=int, default=1, help="leave out units with fewer judgments")
        parser.add_argument(
            "--max-confusability", type=float, default=None, help="leave out units whose --measure is above this"
        )
        parser.add_argument("--measure", choices=list(export.MEASURES), default="std")
        parser.add_argument("--fresh", action="store_true", help="run a new analysis first")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        try:
            filters = export.Filters(
                min_judgments=options["min_judgments"],
                max_confusability=options["max_confusability"],
                measure=options["measure"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        run = None if options["fresh"] else selectors.run_latest_good(campaign_id=campaign.pk)
        run = run or self._analyse(campaign.pk)
        body = export.ground_truth_bytes(run, filters, options["format"])
        if options["output"]:
            Path(options["output"]).write_bytes(body)
            self.stderr.write(f"wrote {options['output']} from analysis run #{run.number}")
        elif options["format"] == "parquet":
            raise CommandError("parquet is binary: give --output FILE")
        else:
            sys.stdout.buffer.write(body)

    def _analyse(self, campaign_id: int) -> AnalysisRun:
        run = runs.run_create(campaign_id=campaign_id, trigger=RunTrigger.CLI, enqueue=False)
        self.stderr.write(f"no succeeded analysis yet: running #{run.number} here")
        outcome = run_execute(run_id=run.pk)
        run.refresh_from_db()
        if outcome == RunStatus.RUNNING:
            raise CommandError(
                f"an identical analysis, run #{run.number}, is running elsewhere: export again when it has finished"
            )
        if outcome != RunStatus.SUCCEEDED:
            raise CommandError(f"analysis run #{run.number} failed: {run.error}")
        return run
