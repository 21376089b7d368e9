from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.errors import InvalidValue
from grading.models import Campaign
from grading.services.campaign_io import campaign_export
from grading.services.labelstudio import labelstudio_export, labelstudio_incomplete


class Command(BaseCommand):
    help = (
        "Export a campaign's definition (campaign.json + media/) so that import_campaign reproduces it; "
        "--format labelstudio writes Label Studio tasks with the judgments as annotations (tasks.json) and a "
        "matching labeling configuration (label_config.xml), which import_labelstudio reads back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="slug or id")
        parser.add_argument("--output", "-o", type=Path, required=True, help="folder to write into")
        parser.add_argument("--format", choices=["evalutron", "labelstudio"], default="evalutron")

    def handle(self, *args: Any, **opts: Any) -> None:
        ref = opts["campaign"]
        campaign = Campaign.objects.filter(slug=ref).first() or (
            Campaign.objects.filter(pk=ref).first() if ref.isdigit() else None
        )
        if campaign is None:
            raise CommandError(f"no campaign with slug or id {ref!r}", returncode=2)
        if opts["format"] == "labelstudio":
            try:
                target = labelstudio_export(campaign=campaign, directory=opts["output"])
                left_out = labelstudio_incomplete(campaign)
                if left_out:
                    self.stderr.write(
                        f"{left_out} BROAD/FINE judgment(s) with only a BROAD or only a FINE were left out: "
                        "a Label Studio annotation of this campaign holds both"
                    )
            except InvalidValue as exc:
                raise CommandError(exc.message, returncode=2) from None
        else:
            target = campaign_export(campaign=campaign, directory=opts["output"])
        self.stdout.write(self.style.SUCCESS(f"Wrote {target}"))
