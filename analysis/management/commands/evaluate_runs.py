"""python manage.py evaluate_runs CAMPAIGN RUN… --measures "nDCG@10 P@5 AP RBP(p=0.8)" --format json|table"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import ir_measures
import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis import export, qrels
from analysis.management.commands._campaign_arg import (
    add_grade_arguments,
    campaign_from_arg,
    grade_mapping_from_options,
    latest_good_run,
)
from analysis.run_evaluation import (
    CONFUSABILITY_MEASURES,
    DEFAULT_CONFUSABILITY,
    DEFAULT_MEASURES,
    UNJUDGED,
    EvaluationError,
    evaluation_table,
    measures_parse,
    runs_evaluate,
)
from grading.errors import InvalidValue
from grading.services.campaign_files import CampaignFileError, CampaignFileErrors, read_text_file
from grading.services.trec_runs import run_parse


class Command(BaseCommand):
    help = (
        "Score TREC run files against a campaign's ground truth with ir-measures: the campaign's qrels "
        "export (the same grade options as export_ground_truth --format qrels) against each run, per "
        "measure the mean over topics with a seeded percentile bootstrap interval over topics and the "
        "per-topic values, Friedman and Nemenyi across the runs (3 runs or more), and the judged "
        "fraction of each run's first k documents. Unjudged documents count as non-relevant unless "
        "--unjudged condense. RBP without rel= is computed as RBP(rel=1). JSON: "
        '{"runs": [{"run", "measures": {NAME: {"mean", "ci_low", "ci_high", "per_topic"}}, "judged_at_k"}], '
        '"friedman": {NAME: ...}, "nemenyi": {NAME: ...}}. Each measure of each run also has "confusability" '
        "(docs/design.md §5.8): a topic's confusability is the mean --confusability of the judged units "
        "(judged twice or more) among the documents the measure reads (the first k for a measure with a "
        "cutoff); per run the measure's mean over those topics beside the units' mean confusability, the "
        "mean per tertile band of topic confusability, the mean over the topics at or below --threshold "
        "(default: the median), and the mean weighted by 1 - normalised confusability."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign")
        parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="TREC run files, one run each")
        parser.add_argument(
            "--measures", default=DEFAULT_MEASURES, help=f"ir-measures names (default {DEFAULT_MEASURES!r})"
        )
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--unjudged", choices=list(UNJUDGED), default="nonrelevant")
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples over topics")
        parser.add_argument("--confidence", type=float, default=0.95)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--fresh", action="store_true", help="run a new analysis first")
        parser.add_argument(
            "--confusability",
            choices=list(CONFUSABILITY_MEASURES),
            default=DEFAULT_CONFUSABILITY,
            help="a unit's confusability (docs/design.md §5.3): std, entropy or range (= dif) of its judgments",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            default=None,
            help="low-confusability topics: confusability at or below this (default: the median over the run's topics)",
        )
        add_grade_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_from_arg(options["campaign"])
        if options["threshold"] is not None and not options["threshold"] >= 0:
            raise CommandError(f"--threshold must be a number ≥ 0; got {options['threshold']}")
        if options["bootstrap"] < 1 or not 0 < options["confidence"] < 1:
            raise CommandError(
                f"--bootstrap must be at least 1 and --confidence between 0 and 1; "
                f"got {options['bootstrap']} and {options['confidence']}"
            )
        try:
            measures = measures_parse(options["measures"])
        except EvaluationError as exc:
            raise CommandError(str(exc)) from None
        mapping = grade_mapping_from_options(campaign, options)
        try:
            runs = [run_parse(read_text_file(path), name=str(path)) for path in options["runs"]]
        except CampaignFileErrors as exc:
            raise CommandError("\n".join(exc.lines())) from None
        except CampaignFileError as exc:
            raise CommandError(exc.message) from None
        except InvalidValue as exc:
            raise CommandError(exc.message) from None
        run = latest_good_run(campaign, fresh=options["fresh"], say=self.stderr.write)
        try:
            text, _ = qrels.qrels_text(run, export.Filters(), mapping)
            judged = list(ir_measures.read_trec_qrels(io.StringIO(text)))
            result = runs_evaluate(
                judged,
                runs,
                measures,
                unjudged=options["unjudged"],
                rng=np.random.default_rng(options["seed"]),
                n_boot=options["bootstrap"],
                confidence=options["confidence"],
                confusability=qrels.qrels_confusability(run, export.Filters(), mapping),
                confusability_measure=options["confusability"],
                threshold=options["threshold"],
            )
        except (qrels.QrelsError, EvaluationError) as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"ground truth of analysis run #{run.number}: {len(judged)} judged units\n{mapping.describe()}"
        )
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(evaluation_table(result, confidence=options["confidence"], unjudged=options["unjudged"]))
