"""python manage.py run_due_analyses [--every SECONDS]"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from analysis.services import runs


class Command(BaseCommand):
    help = (
        "Sweep analysis runs whose worker went silent, then (embedded, without a broker) execute the "
        "queued runs that are due. With a broker the Celery worker and beat do this instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every", type=float, default=0, help="repeat every this many seconds until interrupted (default: once)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        while True:
            outcome = runs.run_sweep_stale()
            executed = runs.runs_execute_due()
            self.stdout.write(
                f"requeued {len(outcome.requeued)}, failed {len(outcome.failed)}, "
                f"resent {len(outcome.resent)}, executed {executed}"
            )
            if options["every"] <= 0:
                return
            time.sleep(options["every"])
