"""The participants of a crowd study (docs/design.md §2, "Join links"): who came through the
campaign's join links, how much they did, how long they were active and how reliable they were.

Active time is the report's engagement measure (`analysis.metrics.engagement`, docs/design.md
§5.2): from the event log, each gap between a participant's consecutive events on units counts up
to 5 minutes (a longer idle gap adds no more than that) and nothing counts while the page was hidden.
Gold accuracy and repeat agreement are the report's hidden-unit scores (§5.6) for schemes with
categories (BROAD, labels, verdicts). `qualified` is the outcome of the link's qualification
(grading.services.qualification): true passed, false screened out, empty without a rule or before
the decision.
"""

from __future__ import annotations

import csv
import io
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pandas as pd

from analysis import metrics as m
from analysis import selectors
from analysis.services.sections.hidden_units import gold_scores, repeat_scores
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.payloads import VALUE_FIELD

COLUMNS = (
    "external_id",
    "platform",
    "study_id",
    "session_id",
    "pseudonym",
    "link",
    "joined_at",
    "units_assigned",
    "units_rated",
    "active_seconds",
    "gold_accuracy",
    "repeat_agreement",
    "qualified",
    "completed_at",
    "excluded",
    "excluded_reason",
    "excluded_at",
    "pay",
    "currency",
)


def participants_report(*, campaign: Campaign) -> list[dict[str, Any]]:
    """One row per participant, with the fields of COLUMNS (None where a figure does not apply:
    no gold units or repeats answered, a numeric scale, or an ordering campaign's active time)."""
    rows = selectors.participants_rows(campaign_id=campaign.pk)
    if not rows:
        return []
    graders = [r["user_id"] for r in rows]
    active = _active_seconds(campaign, graders)
    gold, repeats = _reliability(campaign)
    out = []
    for r in rows:
        grader = r["user_id"]
        out.append(
            {
                "external_id": r["external_id"],
                "platform": r["platform"],
                "study_id": r["study_id"],
                "session_id": r["session_id"],
                "pseudonym": r["pseudonym"],
                "link": r["link_id"],
                "joined_at": r["created_at"],
                "units_assigned": r["units_assigned"],
                "units_rated": r["units_rated"],
                "active_seconds": active.get(grader, 0.0) if active is not None else None,
                "gold_accuracy": gold.get(grader),
                "repeat_agreement": repeats.get(grader),
                "qualified": _qualified(r),
                "completed_at": r["completed_at"],
                "excluded": r["excluded_at"] is not None,
                "excluded_reason": r["excluded_reason"],
                "excluded_at": r["excluded_at"],
                "pay": _pay(r, active.get(grader, 0.0) if active is not None else None),
                "currency": r["link__currency"],
            }
        )
    return out


def _qualified(row: dict[str, Any]) -> bool | None:
    """The link's qualification: True passed, False screened out, None no rule or not decided yet."""
    if row["screened_out_at"] is not None:
        return False
    return True if row["qualified_at"] is not None else None


def _pay(row: dict[str, Any], active_seconds: float | None) -> str | None:
    """The link's rates applied: per unit rated plus per hour of active time, to the cent (as text,
    so that JSON and CSV say exactly the same amount); None when the link sets no rate."""
    per_unit, per_hour = row["link__pay_per_unit"], row["link__pay_per_hour"]
    if per_unit is None and per_hour is None:
        return None
    total = Decimal(0)
    if per_unit is not None:
        total += per_unit * row["units_rated"]
    if per_hour is not None and active_seconds:
        total += per_hour * Decimal(str(active_seconds)) / Decimal(3600)
    return str(total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _active_seconds(campaign: Campaign, graders: list[int]) -> dict[int, float] | None:
    if campaign.scheme == Scheme.ORDERING:
        return None  # orderings' events are about queries: engagement measures time on units
    events = selectors.unit_events_frame(campaign_id=campaign.pk)
    events = events[events["grader"].isin(graders)]
    if events.empty:
        return {}
    per = m.engagement(events[["grader", "unit", "ts", "type"]])
    return {int(g): round(float(s), 1) for g, s in per["seconds"].groupby(level="grader").sum().items()}


def _reliability(campaign: Campaign) -> tuple[dict[int, float], dict[int, float]]:
    """Per grader: the share of gold units answered as the gold answer, and of hidden repeats
    answered as the first time (categorical answers; a numeric scale has neither)."""
    field = VALUE_FIELD.get(campaign.scheme)
    if field is None or campaign.scheme == Scheme.NUMERIC:
        return {}, {}
    gold_frame = selectors.gold_judgments_frame(campaign_id=campaign.pk, field=field)
    gold = _by_grader(gold_scores(gold_frame, numeric=False), "accuracy") if not gold_frame.empty else {}
    pairs = selectors.repeat_pairs_frame(campaign_id=campaign.pk, fields=[field])
    repeats = {}
    if not pairs.empty:
        pairs = pairs.rename(columns={f"first_{field}": "first", f"again_{field}": "again"})
        repeats = _by_grader(repeat_scores(pairs, numeric=False), "identical")
    return gold, repeats


def _by_grader(scores: pd.DataFrame, column: str) -> dict[int, float]:
    return {int(g): round(float(v), 4) for g, v in zip(scores["grader"], scores[column], strict=True)}


def participants_csv(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV, one column per field of COLUMNS (empty where a figure does not apply)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row[k]) for k in COLUMNS})
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    """A cell as written: a date in ISO 8601, nothing for None, and text that a spreadsheet would
    take for a formula (starting with = + - @) behind an apostrophe (ids come from the platforms)."""
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value
    return value
