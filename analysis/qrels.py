"""A campaign's ground truth as TREC relevance judgments ("qrels"), for trec_eval, ir-measures and ranx.

One line per judged query–document unit, ``qid 0 docid rel``: the query's and the candidate's
external ids (the ids the systems' run files use), the iteration column always 0, and an integer
grade. The grade comes from the same ground truth as the CSV/JSON/Parquet exports (one succeeded
analysis, the same filters) through an explicit :class:`GradeMapping`:

- ``broad`` (BROAD/FINE campaigns, the default): the unit's consensus BROAD category (majority;
  ties toward the mean BROAD, then the lower), graded NS → 0, SS → 1, VS → 2 unless other grades
  are given;
- ``value``: the unit's mean judgment (FINE, or the numeric score) cut by ascending thresholds: the
  grade is the number of thresholds at or below the mean. Numeric campaigns default to this, with
  thresholds halfway between the scale's points (a 1–5 scale: 1.5, 2.5, 3.5, 4.5, so grades 0–4
  are the mean rounded half up to a scale point, counted from the bottom);
- ``model``: the model-based truth of docs/design.md §5.6 instead of the graders' consensus: the
  Dawid–Skene BROAD label through the BROAD grades, or the numeric model score through the thresholds.

An adjudicated unit takes the organizer's value whatever the source: an adjudicated BROAD category
through the BROAD grades, an adjudicated score through the thresholds.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis import export, selectors
from analysis.models import AnalysisRun
from analysis.services.values import value_spec
from grading.models import Campaign
from grading.models.choices import Scheme

SOURCES = ("broad", "value", "model")
DEFAULT_BROAD_GRADES: dict[str, int] = {"NS": 0, "SS": 1, "VS": 2}
CONTENT_TYPE = "text/plain; charset=utf-8"


class QrelsError(ValueError):
    """The campaign's ground truth cannot be written as qrels with this mapping (says why and where)."""


@dataclass(frozen=True)
class GradeMapping:
    """How a unit's ground truth becomes an integer grade (see the module docstring)."""

    scheme: str
    source: str
    broad_grades: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_BROAD_GRADES))
    thresholds: tuple[float, ...] = ()

    def describe(self) -> str:
        """The mapping in words, one rule per line (what the command prints and the page shows)."""
        broad = ", ".join(f"{label} → {grade}" for label, grade in self.broad_grades.items())
        cuts = _cuts_text(self.thresholds)
        if self.source == "broad":
            lines = [f"grade = the unit's consensus BROAD category: {broad}"]
        elif self.source == "value":
            what = "mean FINE" if self.scheme == Scheme.BROAD_FINE else "mean score"
            lines = [f"grade = the number of thresholds at or below the unit's {what}: {cuts}"]
        elif self.scheme == Scheme.BROAD_FINE:
            lines = [f"grade = the unit's model-based (Dawid–Skene) BROAD label: {broad}"]
        else:
            lines = [f"grade = the number of thresholds at or below the unit's model-based score: {cuts}"]
        if self.scheme == Scheme.BROAD_FINE:
            lines.append(f"adjudicated units: the adjudicated BROAD category: {broad}")
        else:
            lines.append(f"adjudicated units: the number of thresholds at or below the adjudicated score: {cuts}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "broad_grades": self.broad_grades, "thresholds": list(self.thresholds)}


def _cuts_text(thresholds: tuple[float, ...]) -> str:
    if not thresholds:
        return "(no thresholds: every unit 0)"
    parts = [f"< {thresholds[0]:g} → 0"]
    parts += [f"≥ {t:g} → {i + 1}" for i, t in enumerate(thresholds)]
    return ", ".join(parts)


def parse_broad_grades(text: str) -> dict[str, int]:
    """``"NS=0,SS=1,VS=2"`` → a grade for each BROAD category (all three must be named)."""
    grades: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        label, sep, grade = part.partition("=")
        label = label.strip().upper()
        if not sep or label not in DEFAULT_BROAD_GRADES:
            raise QrelsError(f"--broad-grades: {part!r} is not CATEGORY=GRADE with CATEGORY one of NS, SS, VS")
        try:
            grades[label] = int(grade.strip())
        except ValueError:
            raise QrelsError(
                f"--broad-grades: the grade of {label} must be an integer; got {grade.strip()!r}"
            ) from None
    missing = [label for label in DEFAULT_BROAD_GRADES if label not in grades]
    if missing:
        raise QrelsError(f"--broad-grades: give a grade for every category; missing {', '.join(missing)}")
    return {label: grades[label] for label in DEFAULT_BROAD_GRADES}


def parse_thresholds(text: str) -> tuple[float, ...]:
    """``"3,7"`` → (3.0, 7.0): strictly increasing finite numbers."""
    values = []
    for part in (p.strip() for p in text.split(",")):
        try:
            value = float(part)
        except ValueError:
            raise QrelsError(f"--thresholds: {part!r} is not a number") from None
        if not math.isfinite(value):
            raise QrelsError(f"--thresholds: {part!r} is not a finite number")
        values.append(value)
    if any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise QrelsError(f"--thresholds must increase strictly; got {text!r}")
    return tuple(values)


def grade_mapping(
    campaign: Campaign,
    *,
    source: str | None = None,
    broad_grades: dict[str, int] | None = None,
    thresholds: tuple[float, ...] | None = None,
) -> GradeMapping:
    """The mapping for this campaign: the scheme's default, changed by what is given."""
    scheme = campaign.scheme
    if scheme not in (Scheme.BROAD_FINE, Scheme.NUMERIC):
        raise QrelsError(
            f"qrels need graded relevance per query and document: BROAD/FINE or numeric campaigns; "
            f"{campaign.slug} is {campaign.get_scheme_display()}"
        )
    if source is not None and source not in SOURCES:
        raise QrelsError(f"--grade must be one of {', '.join(SOURCES)}; got {source!r}")
    if scheme == Scheme.NUMERIC and source == "broad":
        raise QrelsError("--grade broad needs a BROAD/FINE campaign; grade a numeric one by 'value' or 'model'")
    source = source or ("broad" if scheme == Scheme.BROAD_FINE else "value")
    if thresholds is None:
        thresholds = _default_thresholds(campaign) if scheme == Scheme.NUMERIC else ()
        if scheme == Scheme.NUMERIC and thresholds is None:
            raise QrelsError(
                "this numeric scale has more than 11 points: give --thresholds (e.g. 4,7 for grades 0, 1, 2)"
            )
        if scheme == Scheme.BROAD_FINE and source == "value":
            raise QrelsError(
                "--grade value cuts the mean FINE of a BROAD/FINE campaign: give --thresholds (e.g. 3.5,7)"
            )
    return GradeMapping(
        scheme=scheme,
        source=source,
        broad_grades=dict(broad_grades or DEFAULT_BROAD_GRADES),
        thresholds=tuple(thresholds),
    )


def _default_thresholds(campaign: Campaign) -> tuple[float, ...] | None:
    """Halfway between consecutive scale points; None when the scale has no categories (> 11 points)."""
    points = value_spec(campaign).categories
    if not points:
        return None
    return tuple(round((a + b) / 2, 10) for a, b in zip(points, points[1:], strict=False))


def _grade_number(value: float, thresholds: tuple[float, ...]) -> int:
    return bisect.bisect_right(thresholds, value)


def _unit_grades(frame: pd.DataFrame, mapping: GradeMapping) -> list[int | None]:
    """The grade of each row of a ground-truth frame (None: the unit has no value of the source)."""
    if mapping.source == "broad":
        column = "majority_broad"
    elif mapping.source == "value":
        column = "mean"
    else:
        column = "model_label" if mapping.scheme == Scheme.BROAD_FINE else "model_score"
    if column not in frame:
        raise QrelsError(
            "the latest analysis has no model-based truth for this campaign (too few judgments to fit it); "
            "choose --grade broad or value"
        )
    grades: list[int | None] = []
    for value, adjudicated in zip(frame[column].tolist(), frame["adjudicated_value"].tolist(), strict=True):
        if adjudicated is not None:
            value = adjudicated
            by_label = mapping.scheme == Scheme.BROAD_FINE
        else:
            by_label = column in ("majority_broad", "model_label")
        if value is None or (isinstance(value, float) and math.isnan(value)):
            grades.append(None)
        elif by_label:
            grades.append(mapping.broad_grades[str(value)])
        else:
            grades.append(_grade_number(float(value), mapping.thresholds))
    return grades


def _trec_id(value: Any, *, unit: str, what: str) -> str:
    text = "" if value is None else str(value)
    if not text or any(c.isspace() for c in text):
        raise QrelsError(
            f"unit {unit}: the {what} id {text!r} cannot be written in qrels "
            f"({'it is missing' if not text else 'it contains white space'})"
        )
    return text


@dataclass
class QrelsCount:
    """What was written and what was left out."""

    written: int = 0
    without_value: int = 0


def qrels_lines(
    run: AnalysisRun, filters: export.Filters, mapping: GradeMapping, *, count: QrelsCount | None = None
) -> Iterator[str]:
    """The qrels text, a chunk of units at a time. Units without a value of the mapping's source
    (e.g. judged on FINE only) are left out and counted."""
    count = count if count is not None else QrelsCount()
    external = selectors.candidate_external_ids(campaign_id=run.campaign_id)
    for frame in export.ground_truth_chunks(run, filters):
        if frame.empty:
            continue
        lines = []
        for unit, query, candidate, grade in zip(
            frame["unit"].tolist(),
            frame["query"].tolist(),
            frame["candidate"].tolist(),
            _unit_grades(frame, mapping),
            strict=True,
        ):
            if grade is None:
                count.without_value += 1
                continue
            qid = _trec_id(query, unit=unit, what="query")
            docid = _trec_id(external.get(candidate), unit=unit, what="candidate")
            lines.append(f"{qid} 0 {docid} {grade}\n")
        count.written += len(lines)
        yield "".join(lines)


def qrels_text(run: AnalysisRun, filters: export.Filters, mapping: GradeMapping) -> tuple[str, QrelsCount]:
    count = QrelsCount()
    text = "".join(qrels_lines(run, filters, mapping, count=count))
    return text, count


CONFUSABILITY_COLUMNS = ["topic", "doc", "n", "dif", "std", "entropy"]


def qrels_confusability(run: AnalysisRun, filters: export.Filters, mapping: GradeMapping) -> pd.DataFrame:
    """The confusability (§5.3: n, dif, std, entropy of the unit's judgments) of each unit the qrels
    hold, keyed by the qrels' topic and document ids (``topic``, ``doc``)."""
    external = selectors.candidate_external_ids(campaign_id=run.campaign_id)
    parts = []
    for frame in export.ground_truth_chunks(run, filters):
        if frame.empty:
            continue
        graded = [grade is not None for grade in _unit_grades(frame, mapping)]
        kept = frame.loc[graded, ["query", "candidate", "n", "dif", "std", "entropy"]]
        kept = kept.assign(candidate=kept["candidate"].map(external))
        parts.append(kept.rename(columns={"query": "topic", "candidate": "doc"}))
    if not parts:
        return pd.DataFrame(columns=CONFUSABILITY_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out["topic"], out["doc"] = out["topic"].astype(str), out["doc"].astype(str)
    return out[CONFUSABILITY_COLUMNS]
