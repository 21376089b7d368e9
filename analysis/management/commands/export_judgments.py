"""python manage.py export_judgments CAMPAIGN [--format ratings|crowdkit] [--output F]: the CSV `agreement` reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands._campaign_arg import campaign_from_arg
from analysis.management.commands._judgments_csv import (
    agreement_arguments,
    crowdkit_agreement_arguments,
    judgments_crowdkit_csv,
    judgments_ratings_csv,
)


class Command(BaseCommand):
    help = (
        "Write a campaign's current judgments as a long CSV (unit,grader,query,value or "
        "unit,grader,query,broad,fine), the input of `manage.py agreement`; --format crowdkit writes "
        "worker,task,label (the BROAD category of a BROAD/FINE campaign), which crowd-kit reads as it is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("--output", "-o", type=Path, help="file to write (default: standard output)")
        parser.add_argument("--format", choices=["ratings", "crowdkit"], default="ratings")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        try:
            crowd = options["format"] == "crowdkit"
            text = judgments_crowdkit_csv(campaign) if crowd else judgments_ratings_csv(campaign)
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if options["output"]:
            options["output"].write_text(text, encoding="utf-8")
            arguments = (crowdkit_agreement_arguments if crowd else agreement_arguments)(campaign)
            self.stderr.write(
                f"wrote {options['output']}; its report: python manage.py agreement "
                f"{options['output']} {' '.join(arguments)}"
            )
        else:
            self.stdout.write(text, ending="")
