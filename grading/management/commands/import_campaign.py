from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.errors import InvalidValue
from grading.services.campaign_files import (
    CampaignFileErrors,
    definition_from_csv,
    definition_from_json,
    read_text_file,
)
from grading.services.campaign_io import campaign_import


class Command(BaseCommand):
    help = (
        "Import a campaign from a JSON definition, or from a CSV of items plus options. "
        "All or nothing: a malformed file stores nothing, and every problem found is listed, one per line, "
        "naming the row, field and value."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="campaign.json, or items.csv")
        parser.add_argument("--media", type=Path, help="folder holding the media files (default: the file's folder)")
        g = parser.add_argument_group("CSV only: the campaign's settings")
        g.add_argument("--name")
        g.add_argument("--slug")
        g.add_argument("--scheme", default="broad_fine")
        g.add_argument("--scheme-params", default="{}", help='JSON object, e.g. \'{"min": 1, "max": 5, "step": 1}\'')
        g.add_argument("--guidelines", type=Path, help="a text file with the guidelines")
        g.add_argument("--status", default="draft")
        g.add_argument("--initial-overlap", type=int, default=2)
        g.add_argument("--max-overlap", type=int, default=5)
        g.add_argument("--policy", default="fixed")

    def handle(self, *args: Any, **opts: Any) -> None:
        path: Path = opts["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file", returncode=2)
        media = opts["media"] or path.parent
        try:
            definition = (
                definition_from_json(path)
                if path.suffix.lower() == ".json"
                else definition_from_csv(path, self._csv_campaign(opts))
            )
            campaign = campaign_import(definition=definition, media_dir=media)
        except CampaignFileErrors as exc:  # every problem on a line of its own, each naming the file
            lines = [f"{path}: {line}" for line in exc.lines()]
            raise CommandError(
                "\n".join([*lines, f"{len(exc.errors) + exc.not_shown} problems. Nothing was imported."]), returncode=2
            ) from None
        except InvalidValue as exc:
            raise CommandError(f"{path}: {exc.message}. Nothing was imported.", returncode=2) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported campaign {campaign.slug!r} (id {campaign.pk}): {campaign.queries.count()} queries, "
                f"{campaign.candidates.count()} candidates, {campaign.units.count()} units, "
                f"{campaign.assignments.count()} assignments."
            )
        )

    def _csv_campaign(self, opts: dict[str, Any]) -> dict[str, Any]:
        if not opts["name"] or not opts["slug"]:
            raise CommandError("a CSV import needs --name and --slug", returncode=2)
        try:
            params = json.loads(opts["scheme_params"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--scheme-params is not valid JSON: {exc.msg}", returncode=2) from None
        guidelines = ""
        if opts["guidelines"]:
            try:
                guidelines = read_text_file(opts["guidelines"])
            except InvalidValue as exc:
                raise CommandError(
                    f"{opts['guidelines']} (--guidelines): {exc.message}. Nothing was imported.", returncode=2
                ) from None
        return {
            "name": opts["name"],
            "slug": opts["slug"],
            "scheme": opts["scheme"],
            "scheme_params": params,
            "guidelines": guidelines,
            "status": opts["status"],
            "initial_overlap": opts["initial_overlap"],
            "max_overlap": opts["max_overlap"],
            "policy": opts["policy"],
        }
