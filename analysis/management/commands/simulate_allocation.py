from __future__ import annotations

import json
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.metrics.allocation import POLICIES, compare_policies_long, simulate_judgments


def _accuracies(text: str, n_graders: int) -> np.ndarray:
    try:
        values = np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise CommandError(f"--accuracy must be comma-separated probabilities, got {text!r}", returncode=2) from None
    # One value: every grader has it.
    return np.full(n_graders, values[0]) if values.size == 1 else values


class Command(BaseCommand):
    help = (
        "Compare allocation policies by simulation with known truth: per policy and aggregation (majority vote, "
        "Dawid–Skene), judgments spent and accuracy of the aggregated labels, averaged over several seeds "
        "(docs/design.md §5.6). Needs no database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--units", type=int, default=2000)
        parser.add_argument("--queries", type=int, default=20, help="units are spread evenly over this many queries")
        parser.add_argument("--categories", type=int, default=3)
        parser.add_argument(
            "--accuracy",
            default="0.9,0.8,0.7,0.65,0.6,0.5",
            help="each grader's chance of the true label; a single value: every grader has it",
        )
        parser.add_argument("--graders", type=int, default=6, help="number of graders when --accuracy is one value")
        parser.add_argument("--initial-overlap", type=int, default=2)
        parser.add_argument("--max-overlap", type=int, default=5)
        parser.add_argument("--budget", type=int, help="total judgments allowed (default: no limit)")
        parser.add_argument(
            "--tolerance",
            type=float,
            default=0.2,
            help="query_deviation: allowed deviation of a query's disagreement rate",
        )
        parser.add_argument("--seed", type=int, default=0, help="first seed")
        parser.add_argument(
            "--seeds", type=int, default=5, help="simulated campaigns to average over (seeds seed, seed+1, …)"
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not 1 <= opts["seeds"] <= 100:
            raise CommandError(f"--seeds must be in 1..100, got {opts['seeds']}", returncode=2)
        accuracy = _accuracies(opts["accuracy"], max(opts["graders"], opts["max_overlap"]))
        try:
            sims = []
            for seed in range(opts["seed"], opts["seed"] + opts["seeds"]):
                rng = np.random.default_rng(seed)
                truth = rng.integers(0, opts["categories"], opts["units"])
                queries = np.arange(opts["units"]) % max(1, opts["queries"])
                sims.append(
                    simulate_judgments(
                        truth,
                        accuracy,
                        max_overlap=opts["max_overlap"],
                        n_categories=opts["categories"],
                        rng=rng,
                        queries=queries,
                    )
                )
            table = compare_policies_long(
                sims,
                initial_overlap=opts["initial_overlap"],
                max_overlap=opts["max_overlap"],
                budget=opts["budget"],
                tolerance=opts["tolerance"],
                policies=POLICIES,
            )
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(table.to_dict(orient="records"), indent=2))
        else:
            self.stdout.write(table.round(4).to_string(index=False))
