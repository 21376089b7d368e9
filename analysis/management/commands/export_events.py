"""python manage.py export_events CAMPAIGN [--format csv|jsonl] [--output F]: the raw event log, streamed."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from analysis import export
from analysis.management.commands._campaign_arg import campaign_from_arg


class Command(BaseCommand):
    help = "Write a campaign's raw event log, oldest first, without holding it in memory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("--format", choices=list(export.EVENT_FORMATS), default="csv")
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        out = open(options["output"], "w", encoding="utf-8", newline="") if options["output"] else sys.stdout
        try:
            for chunk in export.events_stream(campaign.pk, options["format"]):
                out.write(chunk)
        finally:
            if out is not sys.stdout:
                out.close()
