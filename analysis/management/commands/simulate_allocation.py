from __future__ import annotations

import json
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.metrics.allocation import POLICIES, compare_policies, simulate_judgments


def _accuracies(text: str) -> np.ndarray:
    try:
        values = np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise CommandError(f"--accuracy must be comma-separated probabilities, got {text!r}", returncode=2) from None
    return values


class Command(BaseCommand):
    help = (
        "Compare allocation policies by simulation with known truth: judgments spent against the accuracy "
        "of the majority labels (docs/design.md §5.6). Needs no database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--units", type=int, default=2000)
        parser.add_argument("--queries", type=int, default=20, help="units are spread evenly over this many queries")
        parser.add_argument("--categories", type=int, default=3)
        parser.add_argument("--accuracy", default="0.9,0.8,0.7,0.65,0.6,0.5", help="each grader's chance of the true label")
        parser.add_argument("--initial-overlap", type=int, default=2)
        parser.add_argument("--max-overlap", type=int, default=5)
        parser.add_argument("--budget", type=int, help="total judgments allowed (default: no limit)")
        parser.add_argument("--tolerance", type=float, default=0.2, help="query_deviation: allowed deviation of a query's disagreement rate")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args: Any, **opts: Any) -> None:
        rng = np.random.default_rng(opts["seed"])
        try:
            truth = rng.integers(0, opts["categories"], opts["units"])
            queries = np.arange(opts["units"]) % max(1, opts["queries"])
            sim = simulate_judgments(truth, _accuracies(opts["accuracy"]), max_overlap=opts["max_overlap"],
                                     n_categories=opts["categories"], rng=rng, queries=queries)
            table = compare_policies(sim, initial_overlap=opts["initial_overlap"], max_overlap=opts["max_overlap"],
                                     budget=opts["budget"], tolerance=opts["tolerance"], policies=POLICIES)
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(table.reset_index().to_dict(orient="records"), indent=2))
        else:
            self.stdout.write(table[["judgments", "per_unit", "accuracy", "unanimous", "accuracy_per_1000"]].round(4).to_string())
