"""python manage.py pool_campaign --name NAME --scheme broad_fine|numeric --depth K [--topics T] [--docs D] RUN…"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.text import slugify

from grading.errors import InvalidValue
from grading.models.choices import Scheme
from grading.services.campaign_files import CampaignFileErrors
from grading.services.campaign_io import campaign_import
from grading.services.trec_runs import docs_parse, pool_definition, run_parse, text_read, topics_parse


class Command(BaseCommand):
    help = (
        "Make a draft campaign from TREC run files by depth-K pooling: each topic's pool is the union of "
        "every run's first K documents (by score, highest first, ties as trec_eval breaks them). Topics "
        "become queries, pooled documents candidates, run tags systems with each run's rank of the "
        "document as provenance. Run lines are 'qid Q0 docid rank score tag' separated by any white space; "
        "a bad line is refused naming the file, the line, the field and the value, and nothing is stored. "
        'Texts: --topics \'id<TAB>text\' lines, --docs JSON lines {"id", "text"} or {"id", "url"}; '
        "without them an item's text is its id."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="TREC run files, one run each")
        parser.add_argument("--name", required=True, help="the campaign's name")
        parser.add_argument("--slug", help="the campaign's slug (default: from the name)")
        parser.add_argument("--scheme", choices=[Scheme.BROAD_FINE, Scheme.NUMERIC], default=Scheme.BROAD_FINE)
        parser.add_argument("--scheme-params", default="{}", help='JSON object, e.g. \'{"min": 0, "max": 3}\'')
        parser.add_argument("--depth", type=int, required=True, help="K: each run's first K documents per topic")
        parser.add_argument("--topics", type=Path, help="topic texts: id<TAB>text per line")
        parser.add_argument("--docs", type=Path, help='document texts: JSON lines {"id", "text"} or {"id", "url"}')
        parser.add_argument("--guidelines", type=Path, help="a text file with the guidelines")
        parser.add_argument("--initial-overlap", type=int, default=2)

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["depth"] < 1:
            raise CommandError(f"--depth must be at least 1; got {opts['depth']}", returncode=2)
        try:
            params = json.loads(opts["scheme_params"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--scheme-params is not valid JSON: {exc.msg}", returncode=2) from None
        try:
            runs = [run_parse(text_read(path, name=str(path)), name=str(path)) for path in opts["runs"]]
            topics = (
                topics_parse(text_read(opts["topics"], name=str(opts["topics"])), name=str(opts["topics"]))
                if opts["topics"]
                else None
            )
            docs = (
                docs_parse(text_read(opts["docs"], name=str(opts["docs"])), name=str(opts["docs"]))
                if opts["docs"]
                else None
            )
            campaign = {
                "name": opts["name"],
                "slug": opts["slug"] or slugify(opts["name"]),
                "scheme": opts["scheme"],
                "scheme_params": params,
                "guidelines": _text(opts["guidelines"]) if opts["guidelines"] else "",
                "status": "draft",
                "initial_overlap": opts["initial_overlap"],
            }
            definition = pool_definition(
                campaign=campaign,
                runs=runs,
                depth=opts["depth"],
                topics=topics,
                docs=docs,
                topics_name=str(opts["topics"]),
                docs_name=str(opts["docs"]),
            )
            created = campaign_import(definition=definition, media_dir=None)
        except CampaignFileErrors as exc:
            lines = exc.lines()
            raise CommandError(
                "\n".join([*lines, f"{len(exc.errors) + exc.not_shown} problems. Nothing was created."]), returncode=2
            ) from None
        except InvalidValue as exc:
            raise CommandError(f"{exc.message}. Nothing was created.", returncode=2) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Created draft campaign {created.slug!r} (id {created.pk}) from {len(runs)} runs at depth "
                f"{opts['depth']}: {created.queries.count()} topics, {created.candidates.count()} documents, "
                f"{created.units.count()} units to judge ({sum(r.n_lines for r in runs)} run lines read)."
            )
        )
        if topics is None or docs is None:
            missing = " and ".join(w for w, f in (("topics", topics), ("documents", docs)) if f is None)
            self.stdout.write(f"No texts were given for the {missing}: their text is their id.")


def _text(path: Path) -> str:
    return text_read(path, name=str(path))
