"""What each event type carries, checked against the campaign's scheme (docs/design.md §2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from grading import schemes
from grading.errors import InvalidValue
from grading.models import Campaign, Candidate, Judgment, Query
from grading.models.choices import ORGANIZER_EVENTS, SERVER_EVENTS, Broad, EventType, Scheme

# Event type -> the Judgment field it sets.
JUDGMENT_FIELD = {
    EventType.BROAD_SET: "broad",
    EventType.FINE_SET: "fine",
    EventType.SCORE_SET: "score",
    EventType.LABEL_SET: "label",
    EventType.PAIRWISE_SET: "verdict",
    EventType.SKIP: "skipped",
    EventType.SKIP_UNDONE: "skipped",
    EventType.COMMENT: "comment",  # only when the comment is about a unit
}
# Value events that only make sense under one scheme.
SCHEME_OF = {
    EventType.BROAD_SET: Scheme.BROAD_FINE,
    EventType.FINE_SET: Scheme.BROAD_FINE,
    EventType.SCORE_SET: Scheme.NUMERIC,
    EventType.LABEL_SET: Scheme.CATEGORICAL,
    EventType.PAIRWISE_SET: Scheme.PAIRWISE,
    EventType.ORDERING_CHANGED: Scheme.ORDERING,
    EventType.ORDERING_SUBMITTED: Scheme.ORDERING,
}
# The judgment field that carries each scheme's value (for BROAD/FINE, the categorical BROAD).
VALUE_FIELD = {
    Scheme.BROAD_FINE: "broad",
    Scheme.NUMERIC: "score",
    Scheme.CATEGORICAL: "label",
    Scheme.PAIRWISE: "verdict",
}
AUDITION_ACTIONS = ("play", "pause", "seek", "ended")
# The media's length is not stored, so a position is bounded by a day: longer than any clip graded.
MAX_AUDITION_SECONDS = 86_400
MAX_COMMENT = 5000


def check_type_fits_scheme(campaign: Campaign, kind: str) -> None:
    if kind in ORGANIZER_EVENTS:  # organizers only, through grading.services.adjudication and .gold
        raise InvalidValue(
            f"{kind} events are recorded by the campaign's organizers, not by graders.", field="type", value=kind
        )
    if kind in SERVER_EVENTS:  # through grading.services.join_links, when a participant agrees
        raise InvalidValue(
            f"{kind} events are recorded by the join page when a participant agrees, not sent by graders.",
            field="type",
            value=kind,
        )
    wanted = SCHEME_OF.get(kind)
    if wanted is not None and wanted != campaign.scheme:
        raise InvalidValue(
            f"a {kind} event does not fit campaign {campaign.pk}, whose scheme is {campaign.scheme}.",
            field="type",
            value=kind,
        )


def numeric_params(params: dict[str, Any]) -> Mapping[str, float]:
    """A numeric campaign's scale, normalised (schemes.normalise_params), remembered per process by
    the values it is made from, so no change to a campaign can leave it stale: checking the scale
    again cost about as much as the rest of a score event's parsing. The values' types are part of
    the key (true, 1 and 1.0 are equal keys to a dict, but only the numbers are a valid min)."""
    if not isinstance(params, dict):
        return schemes.normalise_params(Scheme.NUMERIC, params)
    raw = (params.get("min", 0), params.get("max", 10), params.get("step", 1))
    key = tuple((type(v), v) for v in raw)
    try:
        hash(key)
    except TypeError:  # a list or an object where a number belongs: normalise_params names it
        return schemes.normalise_params(Scheme.NUMERIC, params)
    return _numeric_params(key)


@lru_cache(maxsize=1024)
def _numeric_params(key: tuple[tuple[type, Any], ...]) -> Mapping[str, float]:
    lo, hi, step = (v for _, v in key)
    return MappingProxyType(schemes.normalise_params(Scheme.NUMERIC, {"min": lo, "max": hi, "step": step}))


def parse(campaign: Campaign, kind: str, payload: dict[str, Any], *, query: Query | None) -> Any:
    """The validated value an event carries (None for events that carry no value)."""
    params = campaign.scheme_params or {}
    if kind in (
        EventType.BROAD_SET,
        EventType.FINE_SET,
        EventType.SCORE_SET,
        EventType.LABEL_SET,
        EventType.PAIRWISE_SET,
    ):
        if "value" not in payload:
            raise InvalidValue("payload.value is required.", field="payload.value", value=None)
        value = payload["value"]
        if kind == EventType.BROAD_SET:
            return schemes.parse_broad(value)
        if kind == EventType.FINE_SET:
            return schemes.parse_fine(value)
        if kind == EventType.SCORE_SET:
            return schemes.parse_score(numeric_params(params), value)
        if kind == EventType.LABEL_SET:
            return schemes.parse_label(params, value)
        return schemes.parse_verdict(value)
    if kind == EventType.SKIP:
        _optional_text(payload, "reason", 500)
        return True
    if kind == EventType.SKIP_UNDONE:
        return False
    if kind == EventType.PAGE_FOCUS:
        return _page_focus(payload)
    if kind == EventType.COMMENT:
        return _optional_text(payload, "text", MAX_COMMENT, required=True)
    if kind == EventType.AUDITION:
        return _audition(payload)
    if kind == EventType.GUIDELINES_VIEWED:
        return _guidelines_version(campaign, payload)
    if kind in (EventType.ORDERING_CHANGED, EventType.ORDERING_SUBMITTED):
        return parse_ordering(query, payload.get("items"), field="payload.items")
    return None


def _optional_text(payload: dict[str, Any], key: str, limit: int, *, required: bool = False) -> str:
    text = payload.get(key, None)
    if text is None and not required:
        return ""
    if not isinstance(text, str) or (required and not text.strip()):
        raise InvalidValue(f"payload.{key} must be a non-empty string.", field=f"payload.{key}", value=text)
    if len(text) > limit:
        raise InvalidValue(
            f"payload.{key} is longer than {limit} characters.", field=f"payload.{key}", value=text[:40] + "…"
        )
    return text


def _page_focus(payload: dict[str, Any]) -> bool:
    """The page became visible and focused (true) or hidden / left (false): active time stops."""
    visible = payload.get("visible")
    if not isinstance(visible, bool):
        raise InvalidValue(
            f"payload.visible must be true or false, got {visible!r}.", field="payload.visible", value=visible
        )
    return visible


def _audition(payload: dict[str, Any]) -> dict[str, Any]:
    action = payload.get("action")
    if action not in AUDITION_ACTIONS:
        raise InvalidValue(
            f"payload.action must be one of {', '.join(AUDITION_ACTIONS)}, got {action!r}.",
            field="payload.action",
            value=action,
        )
    position = payload.get("position", 0)
    if (
        isinstance(position, bool)
        or not isinstance(position, int | float)
        or not math.isfinite(position)
        or not 0 <= position <= MAX_AUDITION_SECONDS
    ):
        raise InvalidValue(
            f"payload.position must be a number of seconds from 0 to {MAX_AUDITION_SECONDS}, got {position!r}.",
            field="payload.position",
            value=position,
        )
    return {"action": action, "position": float(position)}


def _guidelines_version(campaign: Campaign, payload: dict[str, Any]) -> None:
    """The version of the guidelines read: one the campaign has had (1 to its current one)."""
    version = payload.get("version")
    current = campaign.guidelines_version
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= current:
        raise InvalidValue(
            f"payload.version must be a guidelines version of this campaign, 1 to {current}, got {version!r}.",
            field="payload.version",
            value=version,
        )


def parse_ordering(query: Query | None, items: Any, *, field: str = "items") -> list[str]:
    """Check that items are a permutation of the query's candidates (by public id)."""
    if query is None:
        raise InvalidValue("an ordering needs a query.", field="query", value=None)
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise InvalidValue(f"{field} must be a list of candidate ids.", field=field, value=items)
    expected = set(Candidate.objects.filter(units__query=query).values_list("public_id", flat=True).distinct())
    duplicates = sorted({x for x in items if items.count(x) > 1})
    if duplicates:
        raise InvalidValue(f"{field} lists {', '.join(duplicates)} more than once.", field=field, value=duplicates[0])
    unknown = [x for x in items if x not in expected]
    if unknown:
        raise InvalidValue(
            f"{field} names {unknown[0]!r}, which is not a candidate of this query.", field=field, value=unknown[0]
        )
    missing = expected - set(items)
    if missing:
        raise InvalidValue(
            f"{field} is not a complete ordering: {len(missing)} of the query's {len(expected)} candidates are "
            "missing.",
            field=field,
            value=sorted(missing)[0],
        )
    return items


def judgment_complete(campaign: Campaign, judgment: Judgment) -> bool:
    """The judgment holds its scheme's value (BROAD/FINE: both); orderings are not judgments."""
    field = VALUE_FIELD.get(campaign.scheme)
    if field is None or getattr(judgment, field) is None:
        return False
    return campaign.scheme != Scheme.BROAD_FINE or judgment.fine is not None


def consistency_hint(campaign: Campaign, judgment: Judgment) -> str | None:
    """A gentle, non-blocking note when BROAD and FINE tell different stories."""
    if campaign.scheme != Scheme.BROAD_FINE or not schemes.fine_outside_band(
        campaign.scheme_params, judgment.broad, judgment.fine
    ):
        return None
    lo, hi = schemes.fine_band(campaign.scheme_params, judgment.broad)
    label = Broad(judgment.broad).label
    return f"FINE {judgment.fine} is unusual for {label}: most graders give {lo:g}–{hi:g}. Keep it if you mean it."
