from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.models import RunTrigger
from analysis.services.uploads import run_after_upload
from grading.errors import InvalidValue
from grading.models import Campaign
from grading.services.system_outputs import system_orderings_import, system_orderings_rows_from_csv


class Command(BaseCommand):
    help = (
        "Import systems' orderings of an ordering campaign's queries from a CSV `query,system,rank,item` "
        "(query and item are external ids; rank 1 = first). All or nothing: a malformed file stores nothing "
        "and the error names the line, field and value (exit status 2). A system imported again has its "
        "orderings replaced. Then an analysis run is started so the report scores them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="campaign slug or id")
        parser.add_argument("file", type=Path, help="SYSTEMS.csv with header query,system,rank,item")
        parser.add_argument("--no-analysis", action="store_true", help="do not start an analysis run afterwards")

    def handle(self, *args: Any, **opts: Any) -> None:
        campaign = self._campaign(opts["campaign"])
        path: Path = opts["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file", returncode=2)
        try:
            done = self.import_file(campaign, path.read_bytes())
        except InvalidValue as exc:
            raise CommandError(f"{path}: {exc.message}. Nothing was imported.", returncode=2) from None
        self.stdout.write(self.style.SUCCESS(done))
        if not opts["no_analysis"]:
            run = run_after_upload(campaign_id=campaign.pk, trigger=RunTrigger.CLI, user=None)
            run.refresh_from_db()
            self.stdout.write(f"Analysis run #{run.number}: {run.get_status_display().lower()}.")

    def import_file(self, campaign: Campaign, data: bytes) -> str:
        """Import the file (all or nothing; InvalidValue names the problem); returns what was done."""
        summary = system_orderings_import(campaign=campaign, rows=system_orderings_rows_from_csv(data))
        return (
            f"Imported {summary.orderings} orderings of {summary.queries} queries for system(s) "
            f"{', '.join(summary.systems)} into {campaign.slug!r} ({summary.replaced} earlier orderings replaced)."
        )

    def _campaign(self, key: str) -> Campaign:
        campaign = Campaign.objects.filter(slug=key).first()
        if campaign is None and key.isdigit():
            campaign = Campaign.objects.filter(pk=int(key)).first()
        if campaign is None:
            raise CommandError(f"no campaign with slug or id {key!r}", returncode=2)
        return campaign
