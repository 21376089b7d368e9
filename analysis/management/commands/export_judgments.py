"""python manage.py export_judgments CAMPAIGN [--output F]: the ratings CSV `agreement` reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands._campaign_arg import campaign_from_arg
from analysis.management.commands._judgments_csv import agreement_arguments, judgments_ratings_csv


class Command(BaseCommand):
    help = (
        "Write a campaign's current judgments as a long CSV (unit,grader,query,value or "
        "unit,grader,query,broad,fine), the input of `manage.py agreement`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("--output", "-o", type=Path, help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        try:
            text = judgments_ratings_csv(campaign)
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if options["output"]:
            options["output"].write_text(text, encoding="utf-8")
            self.stderr.write(
                f"wrote {options['output']}; its report: python manage.py agreement "
                f"{options['output']} {' '.join(agreement_arguments(campaign))}"
            )
        else:
            self.stdout.write(text, ending="")
