from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands._campaign_arg import campaign_from_arg
from grading.services.tally import tally_check


class Command(BaseCommand):
    help = (
        "Compare each grader's counted judgments and events (GraderTally, kept by database triggers) with "
        "the tables, and with --fix put right the rows that differ. Only writes made with triggers set aside "
        "(session_replication_role = replica, a data-only restore with --disable-triggers) leave them wrong. "
        "Exits with 1 when a row differs and --fix was not given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", help="slug or id (default: every campaign)")
        parser.add_argument("--fix", action="store_true", help="rewrite the rows that differ")

    def handle(self, *args: Any, **opts: Any) -> None:
        campaign_id = None
        if ref := opts["campaign"]:
            try:
                campaign_id = campaign_from_arg(ref).pk
            except CommandError as exc:  # exit status 1 says that rows differ
                raise CommandError(str(exc), returncode=2) from None
        differences = tally_check(campaign_id=campaign_id, fix=opts["fix"])
        for difference in differences:
            self.stdout.write(str(difference))
        if not differences:
            self.stdout.write("Every grader's counts agree with the tables.")
        elif opts["fix"]:
            self.stdout.write(f"Put right {len(differences)} row(s).")
        else:
            raise CommandError(f"{len(differences)} row(s) differ from the tables: run again with --fix", returncode=1)
