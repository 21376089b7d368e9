"""python manage.py instrument RATINGS.csv [--second R2.csv] [--pairs PAIRS.csv] [--systems SYSTEMS.csv]"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.metrics.instrument import (
    precision,
    repeatability,
    reproducibility,
    resolution,
    system_comparison,
)
from analysis.reports.ratings_csv import RatingsFileError, read_ratings_csv


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return _clean(frame.reset_index().to_dict(orient="records"))


def read_table(path: Path, columns: tuple[str, ...], numeric: tuple[str, ...] = ()) -> pd.DataFrame:
    """A small CSV with the given columns; errors name the file, line and field."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file", returncode=2) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path}: {str(exc).strip() or 'empty file'}", returncode=2) from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise CommandError(f"{path}: line 1 (header) lacks field {missing[0]!r}; expected {','.join(columns)}", returncode=2)
    frame = frame[list(columns)]
    for column in columns:
        empty = (frame[column].str.strip() == "").to_numpy()
        if empty.any():
            raise CommandError(f"{path}: line {int(np.argmax(empty)) + 2}, field {column!r}: empty", returncode=2)
    for column in numeric:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna().to_numpy() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            line = int(np.argmax(bad))
            raise CommandError(f"{path}: line {line + 2}, field {column!r}: {frame[column].iloc[line]!r} is not a number",
                               returncode=2)
        frame[column] = values.astype(float)
    return frame


class Command(BaseCommand):
    help = ("The campaign as a measuring instrument (DESIGN.md §5.5): precision and repeatability of a numeric "
            "ratings CSV (unit,grader,value); with --second, reproducibility; with --pairs, resolution; with "
            "--systems, whether the campaign tells the systems apart. Needs no database.")
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ratings", type=Path)
        parser.add_argument("--second", type=Path, help="a second campaign over the same units (unit,grader,value)")
        parser.add_argument("--pairs", type=Path, help="pairwise verdicts: unit_a,unit_b,grader,verdict (A, B or equal)")
        parser.add_argument("--systems", type=Path, help="system scores: system,unit,score")
        parser.add_argument("--method", choices=["pearson", "spearman"], default="pearson")
        parser.add_argument("--target", type=float, default=0.95, help="agreement the resolution must reach")
        parser.add_argument("--format", choices=["json", "table"], default="json")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            report = self._report(opts)
        except RatingsFileError as exc:
            raise CommandError(str(exc), returncode=2) from None
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(_clean(report), indent=2))
        else:
            self._table(report)

    def _report(self, opts: dict[str, Any]) -> dict[str, Any]:
        ratings = self._ratings(opts["ratings"])
        prec = precision(ratings)
        report: dict[str, Any] = {
            "precision": {"mean_std": prec["mean_std"], "std_std": prec["std_std"], "band_67": list(prec["band"]),
                          "n_units": len(prec["units"]), "n_excluded": prec["n_excluded"],
                          "units": _records(prec["units"].rename_axis("unit"))},
            "repeatability": {"krippendorff_alpha_interval": repeatability(ratings)},
        }
        if opts["second"]:
            rep = reproducibility(ratings, self._ratings(opts["second"]))
            report["reproducibility"] = {**{k: v for k, v in rep.items() if not k.startswith("moved")},
                                         "moved_mean": _records(rep["moved_mean"].rename_axis("unit")),
                                         "moved_std": _records(rep["moved_std"].rename_axis("unit"))}
        if opts["pairs"]:
            pairs = read_table(opts["pairs"], ("unit_a", "unit_b", "grader", "verdict"))
            res = resolution(ratings, pairs, target=opts["target"])
            report["resolution"] = {"resolution": res["resolution"], "target": opts["target"], "n_pairs": res["n_pairs"],
                                    "curve": _records(res["curve"].set_index("threshold"))}
        if opts["systems"]:
            outputs = read_table(opts["systems"], ("system", "unit", "score"), numeric=("score",))
            comparison = system_comparison(ratings, outputs, method=opts["method"])
            report["systems"] = {"method": opts["method"], "per_system": _records(comparison.per_system.rename_axis("system")),
                                 "tests": _clean(comparison.tests.to_dict(orient="records"))}
        return report

    def _ratings(self, path: Path) -> pd.DataFrame:
        frame = read_ratings_csv(path, scheme="numeric")
        return frame.assign(value=pd.to_numeric(frame["value"]))

    def _table(self, report: dict[str, Any]) -> None:
        p = report["precision"]
        self.stdout.write(f"precision: mean std {p['mean_std']:.4g} (std {p['std_std']:.4g}); middle 67% of unit stds "
                          f"in [{p['band_67'][0]:.4g}, {p['band_67'][1]:.4g}]; {p['n_units']} units, {p['n_excluded']} with one judgment")
        self.stdout.write(f"repeatability: Krippendorff's alpha (interval) {report['repeatability']['krippendorff_alpha_interval']:.4g}")
        if "reproducibility" in report:
            r = report["reproducibility"]
            self.stdout.write(f"reproducibility: Spearman of means {r['spearman_means']:.4g}, Pearson of stds {r['pearson_stds']:.4g}, "
                              f"alpha {r['alpha_first']:.4g} / {r['alpha_second']:.4g} over {r['n_units']} units")
        if "resolution" in report:
            self.stdout.write(f"resolution: {report['resolution']['resolution']} (smallest mean difference with "
                              f"≥ {report['resolution']['target']:.0%} agreement, {report['resolution']['n_pairs']} pairs)")
        for test in report.get("systems", {}).get("tests", []):
            self.stdout.write(f"{test['system_a']} vs {test['system_b']}: t = {test['t']:.3g}, p = {test['p']:.3g}: {test['verdict']}")
