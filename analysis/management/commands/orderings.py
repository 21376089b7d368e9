"""``manage.py orderings GOLDS.csv``: the ordering-aggregation report of graders' orderings.

Reads ``query,grader,rank,item`` (and optionally system orderings ``query,system,rank,item``),
prints per query the RBA consensus, agreement between graders, the ED of every scoring method and
the systems' scores. Works on any file; it never touches the database.
"""

from __future__ import annotations

import csv
import json
import re
from typing import Any

import numpy as np
import pandas as pd
from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.metrics.frespa import FrespaParams
from analysis.reports.orderings_report import (
    OrderingsFrameError,
    build_orderings_report,
    format_orderings_table,
)

USAGE_ERROR = 2


def _fail(message: str) -> CommandError:
    return CommandError(message, returncode=USAGE_ERROR)


def read_orderings_csv(path: str) -> pd.DataFrame:
    """The CSV as a frame of strings indexed by file line number ("line"); blank lines are skipped."""
    rows, lines = [], []
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise _fail(f"{path}: the file is empty (expected a header line)")
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise _fail(
                        f"{path}: line {reader.line_num}: expected {len(header)} fields "
                        f"({','.join(header)}), got {len(row)}"
                    )
                rows.append(row)
                lines.append(reader.line_num)
    except FileNotFoundError:
        raise _fail(f"{path}: no such file") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise _fail(f"{path}: not a readable UTF-8 CSV file ({exc})") from None
    return pd.DataFrame(rows, columns=[h.strip() for h in header], index=pd.Index(lines, name="line"))


class Command(BaseCommand):
    help = (
        "Ordering aggregation of a long CSV query,grader,rank,item: RBA consensus, mean pairwise "
        "tau, Kendall's W, evaluation discriminativeness (ED) of AC/WCA/RBA (tau, Spearman) and "
        "FreSPA, optional system scores and noise robustness."
    )
    requires_system_checks: list[str] = []  # no database, no checks: runs on any machine

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("golds", help="CSV with header query,grader,rank,item (rank 1 = first)")
        parser.add_argument("--systems", help="CSV with header query,system,rank,item to score")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--min-sup", type=float, default=0.75, help="FreSPA minimum support share")
        parser.add_argument("--min-len", type=int, default=2, help="FreSPA shortest pattern")
        parser.add_argument("--max-len", type=int, default=None, help="FreSPA longest pattern (default k)")
        parser.add_argument("--w-len", type=float, default=1.0, help="FreSPA length weight")
        parser.add_argument("--w-sup", type=float, default=1.0, help="FreSPA support weight")
        parser.add_argument("--noise", action="store_true", help="add the noise-robustness table")
        parser.add_argument("--seed", type=int, default=0, help="seed of the noise orderings")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            params = FrespaParams(
                options["min_sup"], options["min_len"], options["max_len"], options["w_len"], options["w_sup"]
            )
        except ValueError as exc:
            raise _fail(re.sub(r"`(\w+)`", lambda m: "--" + m[1].replace("_", "-"), str(exc))) from exc
        golds = read_orderings_csv(options["golds"])
        systems = read_orderings_csv(options["systems"]) if options["systems"] else None
        try:
            report = build_orderings_report(
                golds, systems, frespa=params, noise=options["noise"], rng=np.random.default_rng(options["seed"])
            )
        except OrderingsFrameError as exc:
            raise _fail(f"{options['systems'] if exc.who == 'system' else options['golds']}: {exc}") from exc
        except ValueError as exc:
            raise _fail(str(exc)) from exc
        if options["format"] == "json":
            self.stdout.write(json.dumps(report, indent=2, allow_nan=False))
        else:
            self.stdout.write(format_orderings_table(report), ending="")
