"""``manage.py agreement FILE.csv``: the agreement and confusability report of a ratings file.

Works on any long CSV, also ratings collected elsewhere; it never touches the database.
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.metrics.krippendorff import LEVELS
from analysis.reports.agreement_report import SCHEMES, build_agreement_report
from analysis.reports.ratings_csv import RatingsFileError, read_ratings_csv

USAGE_ERROR = 2


def _fail(message: str) -> CommandError:
    return CommandError(message, returncode=USAGE_ERROR)


def _parse_list(text: str | None, option: str) -> list[str] | None:
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise _fail(f"{option}: empty label in {text!r} (expected e.g. NS,SS,VS)")
    return items


def _parse_collapse(text: str | None) -> dict[str, str] | None:
    if text is None:
        return None
    pairs = [item.split("=") for item in text.split(",")]
    if any(len(p) != 2 or not p[0].strip() or not p[1].strip() for p in pairs):
        raise _fail(f"--collapse: expected FROM=TO pairs such as VS=S,SS=S; got {text!r}")
    return {a.strip(): b.strip() for a, b in pairs}


class Command(BaseCommand):
    help = ("Agreement (Fleiss, Cohen, Krippendorff with bootstrap intervals), agreement patterns, "
            "chi-squared tests and per-unit confusability of a long CSV: unit,grader,value "
            "(broad_fine: unit,grader,broad,fine; optional query).")
    requires_system_checks: list[str] = []  # no database, no checks: runs on any machine

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="CSV with header unit,grader,value (or unit,grader,broad,fine)")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--scheme", choices=SCHEMES, default="categorical")
        parser.add_argument("--level", choices=LEVELS, help="report Krippendorff's alpha at this level only")
        parser.add_argument("--categories", help="ordered labels, e.g. NS,SS,VS (default: sorted labels)")
        parser.add_argument("--collapse", help="merge labels, e.g. VS=S,SS=S (broad_fine: this by default)")
        parser.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (0: none)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bootstrap"] < 0:
            raise _fail(f"--bootstrap must be >= 0, got {options['bootstrap']}")
        categories = _parse_list(options["categories"], "--categories")
        collapse = _parse_collapse(options["collapse"])
        scheme = options["scheme"]
        try:
            frame = read_ratings_csv(options["file"], scheme=scheme, categories=categories)
            report = build_agreement_report(
                frame, scheme=scheme, levels=[options["level"]] if options["level"] else LEVELS,
                categories=categories, collapse=collapse, n_boot=options["bootstrap"], seed=options["seed"])
        except (RatingsFileError, ValueError) as exc:
            raise _fail(str(exc)) from exc
        if options["format"] == "json":
            self.stdout.write(json.dumps(report, indent=2, allow_nan=False))
        else:
            self.stdout.write(render_table(report))


def _num(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(block: dict) -> str:
    ci = "" if block["ci_low"] is None else f"  [{_num(block['ci_low'])}, {_num(block['ci_high'])}]"
    return f"{_num(block['value'])}{ci}"


def render_table(report: dict) -> str:
    """The report as plain text for a terminal."""
    lines = [f"{report['n_units']} units, {report['n_graders']} graders, {report['n_judgments']} judgments "
             f"({report['n_units_excluded']} units with < 2 judgments excluded)", ""]
    for key in ("fleiss_kappa", "fleiss_kappa_collapsed"):
        if key in report:
            block = report[key]
            lines.append(f"{key:<28}{_interval(block)}  {block['label']}")
            lines += [f"  {c:<26}{_num(k)}" for c, k in block["per_category"].items()]
    for weights, value in report.get("cohen_kappa", {}).items():
        lines.append(f"cohen_kappa {weights:<16}{_num(value)}")
    for level, block in report["krippendorff_alpha"].items():
        lines.append(f"alpha {level:<22}{_interval(block)}")
    lines.append("")
    for block in report["patterns"].values():
        lines.append(f"patterns ({', '.join(map(str, block['categories']))}):")
        lines += [f"  {row['pattern']:<24}{row['kind']:<9}{row['count']:>7}  {row['percent']:5.1f}%"
                  for row in block["table"]]
    for key in ("chi2_graders", "chi2_queries"):
        if key in report:
            test = report[key]
            lines.append(f"{key:<28}chi2 {_num(test['chi2'])}  df {test['df']}  p {_num(test['p'], 4)}")
    summary = report["confusability"]
    lines.append(f"confusability                mean dif {_num(summary['mean_dif'])}  mean std "
                 f"{_num(summary['mean_std'])}  mean entropy {_num(summary['mean_entropy'])}")
    lines += [f"note: {key}: {reason}" for key, reason in report["notes"].items()]
    return "\n".join(lines)
