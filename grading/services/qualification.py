"""Screening crowd participants (docs/design.md §2, "Join links"): a join link's qualification rule.

A rule gives each participant `units` of the campaign's gold units first (§5.6, "Hidden units"),
before their share. When they have rated (or skipped) every one, in the transaction that records the
last of those judgments (grading.services.events), they are scored with §5.6's gold measure
(`gold.answer_scores`): the number answered right for schemes with categories, the mean absolute
error on a numeric scale. At or above the pass mark (at most the largest error, numeric) they go on
to their share; below it they are screened out: their open assignments go back to the pool, they
are excluded from the analysis (`exclusion.grader_exclude`, no actor, with the score as the reason)
and they are shown the link's screen-out code, when it has one. The decision is made once.

A skipped qualification unit counts as answered wrong (numeric: an error of the whole scale's
width); a unit whose gold answer the organizer removed after the participant was given it counts in
the participant's favour (right; numeric: left out of the mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from grading import schemes
from grading.errors import InvalidValue
from grading.models import Assignment, Campaign, CampaignRole, GoldAnswer, JoinLink, Judgment, Participant, Unit
from grading.models.allocation import CampaignAllocation
from grading.models.choices import AssignmentSource, AssignmentStatus, Role, Scheme
from grading.services import allocation_state
from grading.services.exclusion import grader_exclude
from grading.services.gold import answer_scores
from grading.services.payloads import VALUE_FIELD

KEYS = ("units", "pass_mark", "screen_out_code")
MAX_UNITS = 100
CODE_CHARS = "1 to 64 letters, digits, _ or -"
TOLERANCE = 1e-9  # exactly at a numeric pass mark passes, whatever the float rounding of the mean


@dataclass(frozen=True)
class Outcome:
    passed: bool
    score: float  # share right (categorical) or mean absolute error (numeric)
    right: int | None  # units right (categorical), None on a numeric scale
    reason: str  # in words, for the exclusion (screened out) or the record


def qualification_checked(*, campaign: Campaign, rule: Any, code_pattern: Any) -> dict[str, Any]:
    """The rule as stored: {} when there is none (None or {}), else {"units", "pass_mark"} and
    "screen_out_code" when one is given. Raises InvalidValue naming the field (qualification.units,
    qualification.pass_mark, qualification.screen_out_code) and the value; a rule the campaign cannot
    satisfy (fewer gold units than asked, or a scheme without gold units) is an error too."""
    if rule is None or rule == {}:
        return {}
    if not isinstance(rule, dict):
        raise InvalidValue("qualification must be a JSON object.", field="qualification", value=repr(rule)[:80])
    unknown = sorted(set(rule) - set(KEYS))
    if unknown:
        raise InvalidValue(
            f"qualification.{unknown[0]} is not a field of a qualification rule (fields: {', '.join(KEYS)}).",
            field=f"qualification.{unknown[0]}",
            value=str(unknown[0])[:40],
        )
    if campaign.scheme not in VALUE_FIELD:
        raise InvalidValue(
            f"qualification needs gold units, and a {campaign.get_scheme_display().lower()} campaign has none.",
            field="qualification",
            value=campaign.scheme,
        )
    units = _whole(rule.get("units"), field="qualification.units", low=1, high=MAX_UNITS, what="gold units given first")
    n_gold = GoldAnswer.objects.filter(campaign=campaign).count()
    if units > n_gold:
        raise InvalidValue(
            f"qualification.units asks for {units} gold unit{'s' if units != 1 else ''} but campaign {campaign.pk} "
            f"has {n_gold}: set more gold answers (the campaign's Gold page) or ask for fewer.",
            field="qualification.units",
            value=units,
        )
    out: dict[str, Any] = {"units": units, "pass_mark": _pass_mark(campaign, rule.get("pass_mark"), units)}
    code = rule.get("screen_out_code")
    code = "" if code is None else code
    if not isinstance(code, str) or (code.strip() and not code_pattern.match(code.strip())):
        raise InvalidValue(
            f"qualification.screen_out_code must be {CODE_CHARS} (or empty: no code).",
            field="qualification.screen_out_code",
            value=str(code)[:64],
        )
    if code.strip():
        out["screen_out_code"] = code.strip()
    return out


def _whole(value: Any, *, field: str, low: int, high: int, what: str) -> int:
    number = value
    if isinstance(value, float) and value.is_integer():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
        raise InvalidValue(
            f"{field} ({what}) must be a whole number from {low} to {high}; got {value!r}.", field=field, value=value
        )
    return number


def _pass_mark(campaign: Campaign, value: Any, units: int) -> float | int:
    field = "qualification.pass_mark"
    if campaign.scheme != Scheme.NUMERIC:
        return _whole(value, field=field, low=1, high=units, what="how many qualification units must be right")
    params = schemes.normalise_params(campaign.scheme, campaign.scheme_params)
    width = params["max"] - params["min"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidValue(
            f"{field} (the largest mean absolute error that passes) must be a number from 0 to {width:g}; "
            f"got {value!r}.",
            field=field,
            value=value if isinstance(value, str | int | float) else repr(value)[:40],
        )
    if not 0 <= value <= width:
        raise InvalidValue(
            f"{field} (the largest mean absolute error that passes) must be from 0 to {width:g}, the scale's "
            f"width; got {value:g}.",
            field=field,
            value=value,
        )
    return value


def rule_words(rule: dict[str, Any], *, scheme: str) -> str:
    """The rule in the organizer's words ('' when there is none)."""
    if not rule:
        return ""
    units = rule["units"]
    first = f"{units} gold unit{'s' if units != 1 else ''} first"
    if scheme == Scheme.NUMERIC:
        mark = f"a mean absolute error of at most {rule['pass_mark']:g} goes on to the share"
    else:
        mark = f"at least {rule['pass_mark']} of {units} right goes on to the share"
    code = rule.get("screen_out_code")
    tail = f"below it: screened out, shown the code {code}" if code else "below it: screened out, with no code to show"
    return f"Qualification: {first}; {mark}; {tail}."


def qualification_give(*, participant: Participant, link: JoinLink) -> int:
    """Give a joining participant the link's qualification units, at the front of their work, and
    remember the rule they take. Returns how many were given (0: no rule; fewer than the rule asks:
    the campaign lacks gold units, and the caller refuses the join). Call before their share is made."""
    rule = link.qualification or {}
    if not rule:
        return 0
    units = list(
        Unit.objects.filter(campaign=participant.campaign_id, gold__isnull=False)
        .order_by("query_id", "position", "pk")
        .values_list("pk", "query_id")[: rule["units"]]
    )
    if len(units) < rule["units"]:
        return len(units)
    Assignment.objects.bulk_create(
        Assignment(
            campaign_id=participant.campaign_id,
            grader_id=participant.user_id,
            unit_id=unit_id,
            query_id=query_id,
            source=AssignmentSource.QUALIFY,
            position=i + 1,
        )
        for i, (unit_id, query_id) in enumerate(units)
    )
    participant.qualification_units = len(units)
    participant.qualification_pass_mark = float(rule["pass_mark"])
    participant.save(update_fields=["qualification_units", "qualification_pass_mark"])
    return len(units)


@transaction.atomic
def qualification_decide(*, grader: AbstractBaseUser, campaign: Campaign) -> Participant | None:
    """Score the participant once they have rated every qualification unit, and act on it (see the
    module's docstring). Returns the participant when this call decided, None otherwise (not a
    participant under a rule, decided already, or units still open). Called by the event service in
    the transaction that records a change to a qualification assignment."""
    participant = (
        Participant.objects.select_for_update().select_related("link").filter(user=grader, campaign=campaign).first()
    )
    if participant is None or participant.qualification_units is None:
        return None
    if participant.qualified_at is not None or participant.screened_out_at is not None:
        return None
    given = list(
        Assignment.objects.filter(campaign=campaign, grader=grader, source=AssignmentSource.QUALIFY, repeat=False)
        .values_list("status", "unit_id", "unit__gold__value")
        .order_by("pk")
    )
    if not given or any(status == AssignmentStatus.OPEN for status, _, _ in given):
        return None
    outcome = qualification_score(participant=participant, campaign=campaign, given=given)
    now = timezone.now()
    participant.qualification_score = outcome.score
    if outcome.passed:
        participant.qualified_at = now
        participant.save(update_fields=["qualification_score", "qualified_at"])
        return participant
    participant.screened_out_at = now
    participant.save(update_fields=["qualification_score", "screened_out_at"])
    _work_return(grader=grader, campaign=campaign)
    role = CampaignRole.objects.get(campaign=campaign, user=grader, role=Role.GRADER)
    grader_exclude(campaign=campaign, role=role, reason=outcome.reason, actor=None)
    return participant


def qualification_score(
    *, participant: Participant, campaign: Campaign, given: list[tuple[str, int, str | None]]
) -> Outcome:
    """The participant's outcome on the qualification units `given` ((status, unit, gold answer or
    None when no longer gold)), from their judgments."""
    field = VALUE_FIELD[campaign.scheme]
    units = [u for _, u, gold in given if gold is not None]
    golds = [gold for _, _, gold in given if gold is not None]
    answers = dict(
        Judgment.objects.filter(grader=participant.user_id, unit_id__in=units, skipped=False).values_list(
            "unit_id", field
        )
    )
    mark = participant.qualification_pass_mark or 0.0
    n = len(given)
    if campaign.scheme == Scheme.NUMERIC:
        params = schemes.normalise_params(campaign.scheme, campaign.scheme_params)
        errors = answer_scores([answers.get(u) for u in units], golds, numeric=True)
        errors = np.where(np.isnan(errors), params["max"] - params["min"], errors)  # skipped: the whole width
        mae = float(errors.mean()) if len(errors) else 0.0
        passed = mae <= mark + TOLERANCE
        reason = (
            f"screened out: mean absolute error {mae:.2f} on {n} qualification unit{'s' if n != 1 else ''} "
            f"(pass mark: at most {mark:g})"
        )
        return Outcome(passed=passed, score=mae, right=None, reason=reason)
    hits = answer_scores([answers.get(u) for u in units], golds, numeric=False)
    hits = np.where([answers.get(u) is None for u in units], 0.0, hits) if len(units) else hits
    right = int(hits.sum()) + (n - len(units))  # a unit no longer gold counts as right
    needed = int(round(mark))
    reason = f"screened out: {right} of {n} qualification units right (pass mark {needed} of {n})"
    return Outcome(passed=right >= needed, score=right / n, right=right, reason=reason)


def _work_return(*, grader: AbstractBaseUser, campaign: Campaign) -> int:
    """A screened-out participant's open assignments go back to the pool: deleted, with their units'
    allocation state recounted and the campaign's assignment count lowered, so other graders get them."""
    open_ = list(
        Assignment.objects.filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN).values_list(
            "pk", "unit_id"
        )
    )
    if not open_:
        return 0
    Assignment.objects.filter(pk__in=[pk for pk, _ in open_]).delete()
    allocation_state.units_changed(unit_ids=[u for _, u in open_])
    CampaignAllocation.objects.filter(campaign=campaign).update(
        n_assignments=Greatest(F("n_assignments") - len(open_), 0)
    )
    return len(open_)


def outcome_words(participant: Participant, *, scheme: str) -> str:
    """The participant's result in the participant's words (the grading and completion pages)."""
    n = participant.qualification_units or 0
    score = participant.qualification_score
    if score is None:
        return ""
    if scheme == Scheme.NUMERIC:
        return f"Your answers were {score:.2f} points from the known answers on average."
    return f"You answered {round(score * n)} of the {n} qualification units as expected."
