"""System scores per unit for rating campaigns, to be evaluated against the graders' ground truth.

Two file shapes, one row per (system, unit): ``unit,system,score`` (the unit's external id) or
``query,candidate,system,score`` (external ids of the query and the candidate that make the unit). An
import is all or nothing: the first problem raises SystemScoresError naming the line (or JSON row),
the field and the value, and nothing is stored. Importing a system again replaces all of its scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.models import Campaign, SystemOutput, Unit
from grading.models.choices import Scheme
from grading.services.audit import audit_record
from grading.services.system_outputs import (
    NAME_MAX,
    SystemOrderingsError,
    csv_line,
    csv_rows,
    systems_get_or_create,
)

BY_UNIT = ("unit", "system", "score")
BY_PAIR = ("query", "candidate", "system", "score")
RATING_SCHEMES = (Scheme.BROAD_FINE, Scheme.NUMERIC)


class SystemScoresError(SystemOrderingsError):
    """A malformed system-scores file. ``where`` is "line 4" (CSV) or "rows[3]" (JSON)."""


@dataclass(frozen=True)
class SystemScoresSummary:
    systems: list[str]
    units: int
    scores: int
    replaced: int
    created_systems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "systems": self.systems,
            "units": self.units,
            "scores": self.scores,
            "replaced": self.replaced,
            "created_systems": self.created_systems,
        }


def system_scores_rows_from_csv(data: bytes | str) -> list[dict[str, str]]:
    """The rows of a ``unit,system,score`` or ``query,candidate,system,score`` CSV file (UTF-8)."""
    return csv_rows(data, headers=[BY_UNIT, BY_PAIR], error=SystemScoresError)


def _text(row: Mapping[str, Any], column: str, where: str) -> str:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise SystemScoresError(where, column, "" if value is None else value, "empty value")
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise SystemScoresError(where, column, value, "expected text")
    return str(value).strip()


def _score(row: Mapping[str, Any], where: str) -> float:
    raw = row.get("score")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError, AttributeError):
        raise SystemScoresError(where, "score", "" if raw is None else raw, "a score is a number, e.g. 7.5") from None
    if isinstance(raw, bool) or not math.isfinite(value):
        raise SystemScoresError(where, "score", raw, "a score is a finite number, e.g. 7.5")
    return value


class _Units:
    """The campaign's units by external id and by (query, candidate) external ids."""

    def __init__(self, campaign: Campaign) -> None:
        rows = Unit.objects.filter(campaign=campaign).values_list(
            "pk", "external_id", "query__external_id", "candidate__external_id"
        )
        self.by_id = {ext: pk for pk, ext, _, _ in rows}
        self.by_pair = {(q, c): pk for pk, _, q, c in rows if q is not None}
        self.queries = {q for q, _ in self.by_pair}

    def find(self, row: Mapping[str, Any], where: str) -> int:
        if "unit" in row:
            ext = _text(row, "unit", where)
            if ext not in self.by_id:
                raise SystemScoresError(where, "unit", ext, "no unit of this campaign has this external id")
            return self.by_id[ext]
        query, candidate = _text(row, "query", where), _text(row, "candidate", where)
        if query not in self.queries:
            raise SystemScoresError(where, "query", query, "no query of this campaign has this external id")
        if (query, candidate) not in self.by_pair:
            raise SystemScoresError(where, "candidate", candidate, f"not a candidate of query {query!r}")
        return self.by_pair[(query, candidate)]


def system_scores_check(
    *, campaign: Campaign, rows: Sequence[Mapping[str, Any]], where: Callable[[int], str] = csv_line
) -> dict[tuple[str, int], float]:
    """Validate the rows; returns ``{(system, unit id): score}``."""
    if campaign.scheme not in RATING_SCHEMES:
        raise SystemScoresError(
            "the campaign",
            "scheme",
            str(campaign.scheme),
            "per-unit system scores belong to BROAD/FINE and numeric campaigns",
        )
    if not rows:
        raise SystemScoresError(where(0), "(row)", "", "the file has no rows")
    units = _Units(campaign)
    scores: dict[tuple[str, int], float] = {}
    for index, row in enumerate(rows):
        place = where(index)
        if not isinstance(row, Mapping):
            raise SystemScoresError(place, "(row)", row, "a row is an object with keys unit, system, score")
        system = _text(row, "system", place)
        if len(system) > NAME_MAX:
            raise SystemScoresError(place, "system", system, f"a system name has at most {NAME_MAX} characters")
        unit = units.find(row, place)
        if (system, unit) in scores:
            raise SystemScoresError(place, "system", system, "this system already has a score for this unit")
        scores[(system, unit)] = _score(row, place)
    return scores


def system_scores_import(
    *,
    campaign: Campaign,
    rows: Sequence[Mapping[str, Any]],
    where: Callable[[int], str] = csv_line,
    actor: AbstractBaseUser | None = None,
) -> SystemScoresSummary:
    """Store systems' per-unit scores; all or nothing.

    Each system named in the rows gets exactly the scores given (its earlier per-unit scores are
    replaced); a System row is created for a new name. Recorded in the audit trail as `actor`'s
    (None: a command).
    """
    scores = system_scores_check(campaign=campaign, rows=rows, where=where)
    names = sorted({system for system, _ in scores})
    with transaction.atomic():
        systems, created = systems_get_or_create(campaign=campaign, names=names)
        replaced, _ = SystemOutput.objects.filter(system__in=systems.values(), unit__isnull=False).delete()
        SystemOutput.objects.bulk_create(
            [SystemOutput(system=systems[s], unit_id=u, score=v) for (s, u), v in sorted(scores.items())]
        )
        summary = SystemScoresSummary(
            systems=names,
            units=len({u for _, u in scores}),
            scores=len(scores),
            replaced=replaced,
            created_systems=created,
        )
        audit_record(
            actor=actor,
            campaign=campaign,
            action="systems.scores_uploaded",
            target=", ".join(names),
            after={"systems": names, "units": summary.units, "scores": summary.scores, "replaced": replaced},
        )
    return summary
