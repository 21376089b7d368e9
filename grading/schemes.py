"""Rating schemes: their parameters and the values a judgment may take under each (docs/design.md §2)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from grading.errors import InvalidValue
from grading.models.choices import DEFAULT_FINE_BANDS, Broad, PairwiseVerdict, Scheme

FINE_MIN, FINE_MAX = 0.0, 10.0
MAX_SCALE_POINTS = 1000  # a numeric scale's values, min to max by step


def _number(value: Any, *, field: str) -> float:
    # bool is an int in Python; a checkbox's true is not a score.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(f"{field} must be a number, got {value!r}.", field=field, value=value)
    number = float(value)
    if not math.isfinite(number):
        raise InvalidValue(f"{field} must be a finite number, got {value!r}.", field=field, value=str(value))
    return number


def _on_grid(value: float, lo: float, step: float) -> bool:
    steps = (value - lo) / step
    return abs(steps - round(steps)) < 1e-9


def normalise_params(scheme: str, params: dict[str, Any] | None, *, field: str = "scheme_params") -> dict[str, Any]:
    """Validate a scheme's parameters and fill in defaults. Raises InvalidValue naming the bad field."""
    if scheme not in Scheme.values:
        raise InvalidValue(f"scheme {scheme!r} is not one of {', '.join(Scheme.values)}.", field="scheme", value=scheme)
    params = dict(params or {})
    if not isinstance(params, dict):
        raise InvalidValue(f"{field} must be an object.", field=field, value=params)
    if scheme == Scheme.NUMERIC:
        lo = _number(params.get("min", 0), field=f"{field}.min")
        hi = _number(params.get("max", 10), field=f"{field}.max")
        step = _number(params.get("step", 1), field=f"{field}.step")
        if hi <= lo:
            raise InvalidValue(
                f"{field}.max ({hi:g}) must be greater than min ({lo:g}).", field=f"{field}.max", value=hi
            )
        if step <= 0 or step > hi - lo:
            raise InvalidValue(f"{field}.step ({step:g}) must be in (0, max − min].", field=f"{field}.step", value=step)
        points = (hi - lo) / step + 1  # inf for a step too small to divide by
        if points > MAX_SCALE_POINTS + 1e-6:
            raise InvalidValue(
                f"{field}.step ({step:g}) makes a scale of {points:.3g} points from {lo:g} to {hi:g}; "
                f"a scale has at most {MAX_SCALE_POINTS} (a step of at least {(hi - lo) / (MAX_SCALE_POINTS - 1):g}).",
                field=f"{field}.step",
                value=step,
            )
        return {"min": lo, "max": hi, "step": step}
    if scheme == Scheme.CATEGORICAL:
        labels = params.get("labels")
        if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) and x for x in labels):
            raise InvalidValue(
                f"{field}.labels must be a list of at least two non-empty strings.",
                field=f"{field}.labels",
                value=labels,
            )
        if len(set(labels)) != len(labels):
            raise InvalidValue(f"{field}.labels has duplicates.", field=f"{field}.labels", value=labels)
        ordered = params.get("ordered", False)
        if not isinstance(ordered, bool):
            raise InvalidValue(f"{field}.ordered must be true or false.", field=f"{field}.ordered", value=ordered)
        return {"labels": labels, "ordered": ordered}
    if scheme == Scheme.BROAD_FINE:
        bands = params.get("fine_bands", DEFAULT_FINE_BANDS)
        if not isinstance(bands, dict) or set(bands) != set(Broad.values):
            raise InvalidValue(
                f"{field}.fine_bands must map NS, SS and VS to [low, high].", field=f"{field}.fine_bands", value=bands
            )
        out = {}
        for key, band in bands.items():
            if not isinstance(band, list) or len(band) != 2:
                raise InvalidValue(
                    f"{field}.fine_bands.{key} must be [low, high].", field=f"{field}.fine_bands.{key}", value=band
                )
            lo = _number(band[0], field=f"{field}.fine_bands.{key}")
            hi = _number(band[1], field=f"{field}.fine_bands.{key}")
            if not FINE_MIN <= lo <= hi <= FINE_MAX:
                raise InvalidValue(
                    f"{field}.fine_bands.{key} must lie within 0–10 with low ≤ high.",
                    field=f"{field}.fine_bands.{key}",
                    value=band,
                )
            out[key] = [lo, hi]
        return {"fine_bands": out}
    if scheme == Scheme.PAIRWISE:
        attribute = params.get("attribute", "similar")
        if not isinstance(attribute, str) or not attribute:
            raise InvalidValue(
                f"{field}.attribute must be a non-empty string.", field=f"{field}.attribute", value=attribute
            )
        return {"attribute": attribute, **_wording(params, ("question",), field)}
    if scheme == Scheme.ORDERING:
        return _wording(params, ("first",), field)
    return {}


# Words a campaign may choose for its page; left out, the page uses WORDING_DEFAULTS.
WORDING_DEFAULTS = {
    Scheme.ORDERING: {"first": "most similar"},
    Scheme.PAIRWISE: {"question": "Which is more {attribute}: A, B, or equal?"},
}


def _wording(params: dict[str, Any], keys: tuple[str, ...], field: str) -> dict[str, str]:
    out = {}
    for key in keys:
        if key not in params:
            continue
        text = params[key]
        if not isinstance(text, str) or not text.strip() or len(text) > 200:
            raise InvalidValue(
                f"{field}.{key} must be a non-empty text of at most 200 characters.", field=f"{field}.{key}", value=text
            )
        out[key] = text.strip()
    return out


def wording(scheme: str, params: dict[str, Any]) -> dict[str, str]:
    """The campaign's words for its grading page: what "first" means in an ordering (e.g. "best"),
    the pairwise question. `params` are normalised scheme parameters."""
    words = {**WORDING_DEFAULTS.get(scheme, {}), **{k: v for k, v in params.items() if isinstance(v, str)}}
    if "question" in words:
        words["question"] = words["question"].replace("{attribute}", params.get("attribute", "similar"))
    return words


# The choices' values as tuples: `Choices.values` builds a new list on every use, and a tuple (unlike
# a set) takes any value to compare, hashable or not.
BROAD_VALUES = tuple(Broad.values)
VERDICT_VALUES = tuple(PairwiseVerdict.values)


def parse_broad(value: Any, *, field: str = "payload.value") -> str:
    if value not in BROAD_VALUES:
        raise InvalidValue(f"{field} must be one of NS, SS, VS, got {value!r}.", field=field, value=value)
    return value


def parse_fine(value: Any, *, field: str = "payload.value") -> Decimal:
    number = _number(value, field=field)
    if not FINE_MIN <= number <= FINE_MAX:
        raise InvalidValue(f"{field} must be between 0.0 and 10.0, got {value!r}.", field=field, value=value)
    if not _on_grid(number, 0.0, 0.1):
        raise InvalidValue(f"{field} must be on the 0.1 grid, got {value!r}.", field=field, value=value)
    return Decimal(f"{number:.1f}")


def parse_score(params: dict[str, Any], value: Any, *, field: str = "payload.value") -> float:
    number = _number(value, field=field)
    lo, hi, step = params["min"], params["max"], params["step"]
    if not lo <= number <= hi:
        raise InvalidValue(f"{field} must be between {lo:g} and {hi:g}, got {value!r}.", field=field, value=value)
    if not _on_grid(number, lo, step):
        raise InvalidValue(
            f"{field} must be a multiple of {step:g} from {lo:g}, got {value!r}.", field=field, value=value
        )
    return round(number, 10)


def parse_label(params: dict[str, Any], value: Any, *, field: str = "payload.value") -> str:
    if value not in params["labels"]:
        raise InvalidValue(
            f"{field} must be one of {', '.join(params['labels'])}, got {value!r}.", field=field, value=value
        )
    return value


def parse_verdict(value: Any, *, field: str = "payload.value") -> str:
    if value not in VERDICT_VALUES:
        raise InvalidValue(f"{field} must be one of A, B, equal, got {value!r}.", field=field, value=value)
    return value


def fine_band(params: dict[str, Any], broad: str) -> tuple[float, float]:
    """The FINE range expected for a BROAD category (the campaign's band, else the default)."""
    lo, hi = params.get("fine_bands", DEFAULT_FINE_BANDS)[broad]
    return lo, hi


def fine_outside_band(params: dict[str, Any], broad: str | None, fine: Decimal | float | None) -> bool:
    """True when a FINE score lies outside its BROAD category's band: the page shows a hint."""
    if broad is None or fine is None:
        return False
    lo, hi = fine_band(params, broad)
    return not lo <= float(fine) <= hi
