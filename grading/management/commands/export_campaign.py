from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.models import Campaign
from grading.services.campaign_io import campaign_export


class Command(BaseCommand):
    help = "Export a campaign's definition (campaign.json + media/) so that import_campaign reproduces it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="slug or id")
        parser.add_argument("--output", type=Path, required=True, help="folder to write into")

    def handle(self, *args: Any, **opts: Any) -> None:
        ref = opts["campaign"]
        campaign = Campaign.objects.filter(slug=ref).first() or (
            Campaign.objects.filter(pk=ref).first() if ref.isdigit() else None
        )
        if campaign is None:
            raise CommandError(f"no campaign with slug or id {ref!r}", returncode=2)
        target = campaign_export(campaign=campaign, directory=opts["output"])
        self.stdout.write(self.style.SUCCESS(f"Wrote {target}"))
