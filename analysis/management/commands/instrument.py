"""python manage.py instrument RATINGS.csv [--second R2.csv] [--pairs PAIRS.csv] [--systems SYSTEMS.csv]"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands._ratings_csv import read_ratings_csv, read_table_csv
from analysis.metrics.instrument import (
    precision,
    repeatability,
    reproducibility,
    resolution,
    system_comparison,
)
from analysis.reports.serialize import jsonable


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return jsonable(frame.reset_index().to_dict(orient="records"))


class Command(BaseCommand):
    help = (
        "The campaign as a measuring instrument (docs/design.md §5.5): precision and repeatability of a numeric "
        "ratings CSV (unit,grader,value); with --second, reproducibility; with --pairs, resolution; with "
        "--systems, whether the campaign tells the systems apart. Needs no database."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ratings", type=Path)
        parser.add_argument("--second", type=Path, help="a second campaign over the same units (unit,grader,value)")
        parser.add_argument(
            "--pairs", type=Path, help="pairwise verdicts: unit_a,unit_b,grader,verdict (A, B or equal)"
        )
        parser.add_argument("--systems", type=Path, help="system scores: system,unit,score")
        parser.add_argument("--method", choices=["pearson", "spearman"], default="pearson")
        parser.add_argument("--target", type=float, default=0.95, help="agreement the resolution must reach")
        parser.add_argument("--format", choices=["json", "table"], default="json")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            report = self._report(opts)
        except ValueError as exc:  # RatingsFileError included: the message names the line and field
            raise CommandError(str(exc), returncode=2) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(jsonable(report), indent=2))
        else:
            self._table(report)

    def _report(self, opts: dict[str, Any]) -> dict[str, Any]:
        ratings = self._ratings(opts["ratings"])
        prec = precision(ratings)
        report: dict[str, Any] = {
            "precision": {
                "mean_std": prec["mean_std"],
                "std_std": prec["std_std"],
                "band_67": list(prec["band"]),
                "n_units": len(prec["units"]),
                "n_excluded": prec["n_excluded"],
                "units": _records(prec["units"].rename_axis("unit")),
            },
            "repeatability": {"krippendorff_alpha_interval": repeatability(ratings)},
        }
        if opts["second"]:
            rep = reproducibility(ratings, self._ratings(opts["second"]))
            report["reproducibility"] = {
                **{k: v for k, v in rep.items() if not k.startswith("moved")},
                "moved_mean": _records(rep["moved_mean"].rename_axis("unit")),
                "moved_std": _records(rep["moved_std"].rename_axis("unit")),
            }
        if opts["pairs"]:
            pairs = read_table_csv(opts["pairs"], ("unit_a", "unit_b", "grader", "verdict"))
            res = resolution(ratings, pairs, target=opts["target"])
            report["resolution"] = {
                "resolution": res["resolution"],
                "target": opts["target"],
                "n_pairs": res["n_pairs"],
                "curve": _records(res["curve"].set_index("threshold")),
            }
        if opts["systems"]:
            outputs = read_table_csv(opts["systems"], ("system", "unit", "score"), numeric=("score",))
            comparison = system_comparison(ratings, outputs, method=opts["method"])
            report["systems"] = {
                "method": opts["method"],
                "per_system": _records(comparison.per_system.rename_axis("system")),
                "tests": jsonable(comparison.tests.to_dict(orient="records")),
            }
        return report

    def _ratings(self, path: Path) -> pd.DataFrame:
        frame = read_ratings_csv(path, scheme="numeric")
        return frame.assign(value=pd.to_numeric(frame["value"]))

    def _table(self, report: dict[str, Any]) -> None:
        p = report["precision"]
        self.stdout.write(
            f"precision: mean std {p['mean_std']:.4g} (std {p['std_std']:.4g}); middle 67% of unit stds "
            f"in [{p['band_67'][0]:.4g}, {p['band_67'][1]:.4g}]; {p['n_units']} units, {p['n_excluded']} with one "
            "judgment"
        )
        self.stdout.write(
            "repeatability: Krippendorff's alpha (interval) "
            f"{report['repeatability']['krippendorff_alpha_interval']:.4g}"
        )
        if "reproducibility" in report:
            r = report["reproducibility"]
            self.stdout.write(
                f"reproducibility: Spearman of means {r['spearman_means']:.4g}, Pearson of stds "
                f"{r['pearson_stds']:.4g}, "
                f"alpha {r['alpha_first']:.4g} / {r['alpha_second']:.4g} over {r['n_units']} units"
            )
        if "resolution" in report:
            self.stdout.write(
                f"resolution: {report['resolution']['resolution']} (smallest mean difference with "
                f"≥ {report['resolution']['target']:.0%} agreement, {report['resolution']['n_pairs']} pairs)"
            )
        for test in report.get("systems", {}).get("tests", []):
            self.stdout.write(
                f"{test['system_a']} vs {test['system_b']}: t = {test['t']:.3g}, p = {test['p']:.3g}: {test['verdict']}"
            )
