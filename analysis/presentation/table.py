"""A report table: one source for the HTML page and its CSV download."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from functools import cached_property
from html import escape  # Django's escape less its lazy-string wrapper: the same text, a fraction of the cost
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from analysis.presentation.glossary import TERMS, Term


@dataclass
class Table:
    title: str
    columns: list[tuple[str, str]]  # (key, heading)
    rows: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    marked: str = ""  # the key of a column to highlight (the method the ED favours)
    link: str = ""  # the key of a column whose cells link to the row's "url"
    page_rows: list[dict[str, Any]] | None = None  # what the page shows when not every row (the CSV has all)
    explain: dict[str, str] = field(default_factory=dict)  # column key -> glossary term its heading explains
    groups: list[tuple[str, int]] = field(default_factory=list)  # a header row above: (label, columns spanned)
    durations: tuple[str, ...] = ()  # keys of columns in seconds: shown as s / min / h (the CSV keeps seconds)

    @property
    def marked_index(self) -> int:
        return next((i for i, (key, _) in enumerate(self.columns) if key == self.marked), -1)

    @property
    def display_rows(self) -> list[list[tuple[str, str, str]]]:
        """Each cell as (text, CSS classes, link): numbers align right, text left; the marked column
        stands out; the link column points at the row's page."""
        marked = self.marked_index
        rows = self.rows if self.page_rows is None else self.page_rows
        return [
            [
                (
                    format_duration(row.get(key)) if key in self.durations else _display(row.get(key)),
                    _css(row.get(key), i == marked),
                    row.get("url", "") if key == self.link else "",
                )
                for i, (key, _) in enumerate(self.columns)
            ]
            for row in rows
        ]

    @property
    def body_html(self) -> SafeString:
        """The table's body rows as HTML: the page's largest part, written here in one pass rather
        than by a template loop per cell (the same markup, escaped the same way)."""
        parts = []
        for row in self.display_rows:
            parts.append("<tr>")
            for text, css, href in row:
                if href:
                    parts.append(f'<td class="{escape(css)}"><a href="{escape(href)}">{escape(text)}</a></td>')
                else:
                    parts.append(f'<td class="{escape(css)}">{escape(text)}</td>')
            parts.append("</tr>")
        return mark_safe("".join(parts))  # noqa: S308 - every value above is escaped

    @cached_property
    def headings(self) -> list[tuple[str, str]]:
        """Each heading aligned as the cells it heads on the page (numbers right)."""
        shown = self.rows if self.page_rows is None else self.page_rows
        numeric = [all(_is_number(r.get(k)) for r in shown if r.get(k) is not None) for k, _ in self.columns]
        return [
            (heading, _css(0 if numeric[i] else "", i == self.marked_index))
            for i, (_, heading) in enumerate(self.columns)
        ]

    @property
    def heading_cells(self) -> list[tuple[str, str, Term | None]]:
        """(heading, CSS classes, the glossary term that explains it, if any) per column."""
        return [
            (heading, css, TERMS.get(self.explain.get(key, "")))
            for (key, _), (heading, css) in zip(self.columns, self.headings, strict=True)
        ]

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([key for key, _ in self.columns])
        for row in self.rows:
            writer.writerow(["" if row.get(k) is None else _csv_value(row.get(k)) for k, _ in self.columns])
        return out.getvalue()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _css(value: Any, marked: bool) -> str:
    kind = "num" if _is_number(value) or value is None else "text"
    return f"{kind} favoured" if marked else kind


def _csv_value(value: Any) -> Any:
    return " > ".join(map(str, value)) if isinstance(value, list) else value


def format_duration(seconds: Any) -> str:
    """Seconds as a person reads them: "42 s", "3.5 min", "2.1 h"."""
    if not _is_number(seconds) or math.isnan(seconds):
        return _display(seconds)
    if seconds < 90:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _display(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    if isinstance(value, list):
        return " › ".join(map(str, value))
    return str(value)


def method_groups(
    methods: list[str],
    *,
    lead: int,
    correlations: str = "correlations with the graders (−1 to 1)",
    frespa: str = "support (FreSPA, 0 to 1)",
) -> list[tuple[str, int]]:
    """Column groups for ordering-scoring methods: the correlation methods (AC, WCA, RBA: τ or
    Spearman) apart from FreSPA (a support score), after ``lead`` ungrouped columns."""
    n_correlations = len([k for k in methods if k != "FreSPA"])
    groups = [("", lead)] if lead else []
    if n_correlations:
        groups.append((correlations, n_correlations))
    if "FreSPA" in methods:
        groups.append((frespa, 1))
    return groups


def method_terms(methods: list[str]) -> dict[str, str]:
    """Column key -> glossary term for method columns (AC-tau -> ac, FreSPA -> frespa, ...)."""
    return {k: k.split("-")[0].lower() for k in methods}
