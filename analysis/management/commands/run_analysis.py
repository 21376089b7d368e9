"""python manage.py run_analysis CAMPAIGN [--wait] [--n-boot N] [--seed S]"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands._campaign_arg import campaign_from_arg
from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import runs


class Command(BaseCommand):
    help = (
        "Start an analysis run of a campaign (id or slug). Embedded, it runs here and now; with a broker "
        "a worker runs it, and --wait follows its progress until it finishes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("--wait", action="store_true", help="wait for the run to finish, showing progress")
        parser.add_argument("--n-boot", type=int, default=None, help="bootstrap resamples (default 1000)")
        parser.add_argument("--seed", type=int, default=None, help="random seed of the bootstrap intervals")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds --wait waits at most")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        parameters = {"n_boot": options["n_boot"]} if options["n_boot"] else None
        try:
            run = runs.run_create(
                campaign_id=campaign.pk, trigger=RunTrigger.CLI, parameters=parameters, seed=options["seed"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"analysis run #{run.number} of {campaign.slug}")
        run.refresh_from_db()
        if options["wait"] and not run.is_finished:
            run = self._wait(run, options["timeout"])
        self._report(run)

    def _wait(self, run: AnalysisRun, timeout: float) -> AnalysisRun:
        deadline, last = time.monotonic() + timeout, None
        while not run.is_finished:
            if time.monotonic() > deadline:
                raise CommandError(f"run #{run.number} is still {run.status} after {timeout:g} s")
            state = (run.status, run.stage, run.progress)
            if state != last:
                self.stdout.write(f"  {run.progress:3d}%  {run.status}  {run.stage}")
                last = state
            time.sleep(0.5)
            runs.run_sweep_stale()
            runs.runs_execute_due(campaign_id=run.campaign_id)  # embedded: nothing else would run it
            run.refresh_from_db()
        return run

    def _report(self, run: AnalysisRun) -> None:
        if run.status == RunStatus.SUCCEEDED:
            total = (run.timings or {}).get("total", 0)
            self.stdout.write(self.style.SUCCESS(f"succeeded in {total:.2f} s"))
        elif run.status == RunStatus.FAILED:
            raise CommandError(f"run #{run.number} failed: {run.error}")
        else:
            self.stdout.write(f"{run.status}: follow it with GET /api/analyses/{run.pk}/ or --wait")
