"""python manage.py export_ground_truth CAMPAIGN --format csv|json|parquet|qrels|hf [--output F] [filters] [grades]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis import export, hf_dataset, qrels
from analysis.management.commands._campaign_arg import (
    add_grade_arguments,
    campaign_from_arg,
    grade_mapping_from_options,
    latest_good_run,
)
from analysis.models import AnalysisRun

QRELS_HELP = """
--format qrels writes TREC relevance judgments, one line per judged unit: "qid 0 docid rel", the
query's and the candidate's external ids and an integer grade, no comments (trec_eval, ir-measures
and ranx read it). The grade:
  --grade broad  (BROAD/FINE default) the unit's consensus BROAD category, NS -> 0, SS -> 1, VS -> 2
                 (other grades with --broad-grades NS=0,SS=1,VS=3);
  --grade value  (numeric default) the number of --thresholds at or below the unit's mean (FINE or
                 score): --thresholds 3.5,7 gives 0 below 3.5, 1 from 3.5, 2 from 7. Numeric campaigns
                 default to thresholds halfway between the scale's points (1-5: 1.5,2.5,3.5,4.5);
  --grade model  the model-based truth: the Dawid-Skene BROAD label through the BROAD grades, or the
                 numeric model score through the thresholds.
Adjudicated units take the adjudicated value (a BROAD category through the BROAD grades, a score
through the thresholds). Units without a value of the chosen source are left out; the mapping and
the counts are printed on standard error.

--format hf -o DIR writes a folder the Hugging Face datasets library loads as it is
(load_dataset(DIR), and load_dataset(DIR, "judgments")): data/ground_truth.parquet (the Parquet
export, with the filters above), data/judgments.parquet (one row per grader and unit, graders by
pseudonym, comments left out) and README.md, a dataset card generated from the same analysis run
(how the data was collected, agreement with intervals, the instrument card, the fields) whose
licence the organizer fills in.
"""


class Command(BaseCommand):
    help = (
        "Write a campaign's ground truth (one row per unit plus a metadata block) from its latest\n"
        "succeeded analysis; runs one here first if there is none. See docs/analysis.md for the formats.\n" + QRELS_HELP
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the lines of QRELS_HELP
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("--format", choices=[*export.FORMATS, "qrels", "hf"], default="csv")
        parser.add_argument(
            "--output", "-o", help="file to write (default: standard output; parquet needs a file, hf a folder)"
        )
        parser.add_argument("--min-judgments", type=int, default=1, help="leave out units with fewer judgments")
        parser.add_argument(
            "--max-confusability", type=float, default=None, help="leave out units whose --measure is above this"
        )
        parser.add_argument("--measure", choices=list(export.MEASURES), default="std")
        parser.add_argument("--fresh", action="store_true", help="run a new analysis first")
        add_grade_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        try:
            filters = export.Filters(
                min_judgments=options["min_judgments"],
                max_confusability=options["max_confusability"],
                measure=options["measure"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        mapping = grade_mapping_from_options(campaign, options) if options["format"] == "qrels" else None
        if options["format"] == "hf" and not options["output"]:
            raise CommandError("--format hf writes a folder: give --output DIR")
        if options["format"] == "hf" and Path(options["output"]).is_file():
            raise CommandError(f"--output {options['output']} is a file: --format hf writes a folder")
        run = latest_good_run(campaign, fresh=options["fresh"], say=self.stderr.write)
        if options["format"] == "hf":
            counts = hf_dataset.hf_dataset_write(run, filters, Path(options["output"]))
            self.stderr.write(
                f"wrote {options['output']}: {counts['ground_truth']} units, {counts['judgments']} judgments "
                f"and the dataset card, from analysis run #{run.number}; fill in its licence in README.md"
            )
            return
        if mapping is not None:
            self._qrels(run, filters, mapping, options["output"])
            return
        body = export.ground_truth_bytes(run, filters, options["format"])
        if options["output"]:
            Path(options["output"]).write_bytes(body)
            self.stderr.write(f"wrote {options['output']} from analysis run #{run.number}")
        elif options["format"] == "parquet":
            raise CommandError("parquet is binary: give --output FILE")
        else:
            sys.stdout.buffer.write(body)

    def _qrels(
        self, run: AnalysisRun, filters: export.Filters, mapping: qrels.GradeMapping, output: str | None
    ) -> None:
        try:
            text, count = qrels.qrels_text(run, filters, mapping)
        except qrels.QrelsError as exc:
            raise CommandError(str(exc)) from None
        if output:
            Path(output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        left_out = f"; left out {count.without_value} without a value to grade" if count.without_value else ""
        self.stderr.write(
            f"{count.written} qrels lines from analysis run #{run.number}{left_out}\n{mapping.describe()}"
        )
