from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.text import slugify

from grading.errors import InvalidValue
from grading.services.campaign_file_errors import CampaignFileErrors
from grading.services.campaign_files import read_text_file
from grading.services.labelstudio import labelstudio_import, labelstudio_plan, tasks_from_json


class Command(BaseCommand):
    help = (
        "Import a Label Studio JSON export (a list of tasks with 'choices' or 'rating' annotations, or for "
        "broad_fine both a 'choices' result, the BROAD, and a 'number' or 'rating' result, the FINE) as a "
        "campaign: each task a unit (data.text, or an audio, image or video URL; data.query if present), each "
        "annotation recorded as an imported judgment of a pseudonymous grader standing for its completed_by "
        "(event session 'labelstudio:<annotation id>', payload.source 'labelstudio'); cancelled annotations "
        "are skips. All or nothing: every problem is listed, naming the task, annotation and field."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="Label Studio's JSON export")
        parser.add_argument("--name", required=True)
        parser.add_argument("--slug", help="default: from the name")
        parser.add_argument(
            "--scheme",
            choices=["categorical", "numeric", "broad_fine"],
            required=True,
            help="categorical reads 'choices' results, numeric 'rating' results, broad_fine a 'choices' result "
            "(NS, SS, VS or their names) and a 'number' or 'rating' result (FINE, 0–10) in each annotation",
        )
        parser.add_argument(
            "--scheme-params",
            default="",
            help="JSON object; default: the labels in order of appearance, or a 1–5 scale widened to the ratings found",
        )
        parser.add_argument("--from-name", help="the control to read when a task has several of the type")
        parser.add_argument(
            "--fine-from-name",
            help="broad_fine: the FINE control to read when a task has several number or rating results",
        )
        parser.add_argument("--item-field", help="the data key holding the item (default: text, audio, image, video)")
        parser.add_argument("--guidelines", type=Path, help="a text file with the guidelines")
        parser.add_argument(
            "--status",
            default="closed",
            choices=["draft", "open", "closed"],
            help="the campaign's status after the import (default closed)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        path: Path = opts["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file", returncode=2)
        try:
            params = json.loads(opts["scheme_params"]) if opts["scheme_params"] else None
        except json.JSONDecodeError as exc:
            raise CommandError(f"--scheme-params is not valid JSON: {exc.msg}", returncode=2) from None
        try:
            guidelines = read_text_file(opts["guidelines"]) if opts["guidelines"] else ""
            plan = labelstudio_plan(
                tasks_from_json(path),
                name=opts["name"],
                slug=opts["slug"] or slugify(opts["name"])[:80],
                scheme=opts["scheme"],
                scheme_params=params,
                from_name=opts["from_name"],
                fine_from_name=opts["fine_from_name"],
                item_field=opts["item_field"],
                guidelines=guidelines,
            )
            campaign = labelstudio_import(plan=plan, status=opts["status"])
        except CampaignFileErrors as exc:
            lines = [f"{path}: {line}" for line in exc.lines()]
            raise CommandError(
                "\n".join([*lines, f"{len(exc.errors) + exc.not_shown} problems. Nothing was imported."]), returncode=2
            ) from None
        except InvalidValue as exc:
            raise CommandError(f"{path}: {exc.message}. Nothing was imported.", returncode=2) from None
        n = len(plan["annotations"])
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported campaign {campaign.slug!r} (id {campaign.pk}, {campaign.status}) from Label Studio: "
                f"{campaign.units.count()} units, {len(plan['definition']['graders'])} graders, "
                f"{n} annotations recorded as imported judgments."
            )
        )
