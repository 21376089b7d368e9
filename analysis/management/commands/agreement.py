"""``manage.py agreement FILE.csv``: the agreement and confusability report of a ratings file.

Works on any long CSV, also ratings collected elsewhere; it never touches the database. The report is
built by the same function as an analysis run's agreement sections, with the same keys and seeding.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.commands._agreement_report import SCHEMES, build_agreement_report
from analysis.management.commands._ratings_csv import RatingsFileError, read_ratings_csv
from analysis.metrics.krippendorff import LEVELS

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
    help = (
        "Agreement (Fleiss, Cohen, Krippendorff with bootstrap intervals), agreement patterns, "
        "chi-squared tests and per-unit confusability of a long CSV: unit,grader,value "
        "(broad_fine: unit,grader,broad,fine; optional query), or a crowd file: crowd-kit's "
        "worker,task,label (recognised by its header) or any three columns named by --columns."
    )
    requires_system_checks: list[str] = []  # no database, no checks: runs on any machine

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="CSV with header unit,grader,value (or unit,grader,broad,fine)")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--scheme", choices=SCHEMES, default="categorical")
        parser.add_argument(
            "--level",
            choices=LEVELS,
            help="Krippendorff's alpha at this level (default: "
            "ordinal with --categories, else nominal; interval for numbers and FINE)",
        )
        parser.add_argument(
            "--columns",
            metavar="WORKER,TASK,LABEL",
            help="a crowd file: its grader, unit and value columns, e.g. ASSIGNMENT:worker_id,INPUT:item,OUTPUT:result "
            "(default for a header worker,task,label: those)",
        )
        parser.add_argument("--categories", help="ordered labels, e.g. NS,SS,VS (default: sorted labels)")
        parser.add_argument("--collapse", help="merge labels, e.g. VS=S,SS=S (broad_fine: this by default)")
        parser.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (0: none)")
        parser.add_argument("--confidence", type=float, default=0.95, help="level of the intervals (0.5-0.999)")
        parser.add_argument("--seed", type=int, default=0, help="seeds the intervals as an analysis run's seed does")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bootstrap"] < 0:
            raise _fail(f"--bootstrap must be >= 0, got {options['bootstrap']}")
        if not 0.5 <= options["confidence"] <= 0.999:
            raise _fail(f"--confidence must lie in [0.5, 0.999], got {options['confidence']}")
        categories = _parse_list(options["categories"], "--categories")
        columns = _parse_list(options["columns"], "--columns")
        collapse = _parse_collapse(options["collapse"])
        scheme = options["scheme"]
        try:
            frame = read_ratings_csv(options["file"], scheme=scheme, categories=categories, columns=columns)
            report = build_agreement_report(
                frame,
                scheme=scheme,
                level=options["level"],
                categories=categories,
                collapse=collapse,
                n_boot=options["bootstrap"],
                confidence=options["confidence"],
                seed=options["seed"],
            )
        except (RatingsFileError, ValueError) as exc:
            raise _fail(str(exc)) from exc
        if options["format"] == "json":
            self.stdout.write(json.dumps(report, indent=2, allow_nan=False))
        else:
            self.stdout.write(render_table(report))


def _num(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(block: dict) -> str:
    ci = "" if block.get("ci_low") is None else f"  [{_num(block['ci_low'])}, {_num(block['ci_high'])}]"
    note = f"  ({block['reason']})" if block.get("reason") else ""
    return f"{_num(block['value'])}{ci}{note}"


def render_table(report: dict) -> str:
    """The report as plain text for a terminal."""
    agreement = report["agreement"]
    percent = f"{report['parameters']['confidence']:.0%}"
    lines = [
        f"{report['n_units']} units, {report['n_graders']} graders, {report['n_judgments']} judgments "
        f"({agreement.get('units_excluded', 0)} units with < 2 judgments excluded); "
        f"{percent} bootstrap intervals, {report['parameters']['n_boot']} resamples",
        "",
    ]
    for level in agreement["levels"]:
        lines.append(f"fleiss_kappa {level['name']:<15}{_interval(level['kappa'])}  {level['kappa']['label']}")
        lines += [f"  {row['category']:<26}{_num(row['kappa'])}" for row in level["per_category"]]
    for weights in ("unweighted", "linear", "quadratic"):
        if agreement.get("cohen"):
            lines.append(f"cohen_kappa {weights:<16}{_num(agreement['cohen'][weights])}")
    if agreement.get("alpha"):
        alpha = agreement["alpha"]
        lines.append(f"{'alpha ' + alpha['level'] + ' (' + alpha['scale'] + ')':<27} {_interval(alpha)}")
    lines.append("")
    for level in agreement["levels"]:
        lines.append(f"patterns ({', '.join(map(str, level['categories']))}):")
        lines += [
            f"  {row['pattern']:<24}{row['kind']:<9}{row['count']:>7}  {row['percent']:5.1f}%"
            for row in level["patterns"]
        ]
    for key in ("chi2_graders", "chi2_queries"):
        if agreement.get(key):
            test = agreement[key]
            lines.append(f"{key:<28}chi2 {_num(test['chi2'])}  df {test['df']}  p {_num(test['p'], 4)}")
    summary = report["confusability"].get("summary")
    if summary:
        lines.append(
            f"confusability                mean dif {_num(summary['mean_dif'])}  mean std "
            f"{_num(summary['mean_std'])}  mean entropy {_num(summary['mean_entropy'])}"
        )
    return "\n".join(lines)
