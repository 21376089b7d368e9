"""What a campaign's ``policy_params`` may hold (docs/design.md §5.6): one check for every way in
(the API, the Django admin, campaign files, the services), so that a value the allocation reads
later is never one it cannot use.

Keys not listed here are kept as they are: they configure nothing yet, and organizers' notes or
settings of later versions must survive an import and an edit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grading.errors import InvalidValue

if TYPE_CHECKING:  # the campaign file checker imports this module and needs no models
    from grading.models import Campaign

MAX_REPEAT_SHARE = 0.5


@dataclass(frozen=True)
class Rule:
    low: float
    high: float | None = None  # None: no upper bound
    whole: bool = False  # a whole number (a count), not any number

    def problem(self, value: Any) -> str | None:
        """Why `value` breaks the rule, in words that follow the parameter's name; None when it is fine."""
        # JSON's true is an int to Python, yet no number; any int is finite (a huge one would overflow isfinite)
        number = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value)
        )
        ok = number and (isinstance(value, int) or not self.whole) and self.low <= value
        ok = ok and (self.high is None or value <= self.high)
        if ok:
            return None
        kind = "a whole number" if self.whole else "a number"
        low = _shown(self.low)
        span = f"of at least {low}" if self.high is None else f"from {low} to {_shown(self.high)}"
        return f"must be {kind} {span}"


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


# The parameters the code reads, and who reads them.
RULES: dict[str, Rule] = {
    "repeat_share": Rule(0, MAX_REPEAT_SHARE),  # grading.services.repeats: share of hidden repeats
    "batch_size": Rule(1, whole=True),  # grading.services.more_work: units per "ask for more"
    "threshold": Rule(0),  # consensus: the spread (range or entropy) above which judgments disagree
    "min_entropy": Rule(0),  # uncertainty: posterior entropy (bits) below which a unit is settled
    "tolerance": Rule(0, 1),  # query_deviation: how far a query's disagreement rate may stray
    "expected_rate": Rule(0, 1),  # query_deviation: the disagreement rate to compare with
    "ac_threshold": Rule(-1, 1),  # ordering campaigns: AC (a mean Kendall tau) below which a query wants more
    # analysis.services.auto_exclusion: exclude a grader automatically below these (§5.6, "Excluded graders")
    "exclude_gold_below": Rule(0, 1),  # accuracy on gold units
    "exclude_reliability_below": Rule(0, 1),  # the grader model's (Dawid–Skene) accuracy
    "exclude_min_judgments": Rule(1, whole=True),  # gold judgments (gold) or judgments in the model (reliability)
}
EXCLUSION_THRESHOLDS = ("exclude_gold_below", "exclude_reliability_below")
# Schemes whose judgments are categories: gold accuracy and the Dawid–Skene model exist for them.
EXCLUSION_SCHEMES = ("broad_fine", "categorical", "pairwise")


def policy_params_problems(*, params: Any, scheme: str | None = None) -> list[tuple[str, Any, str]]:
    """Every problem of `params`, as (field, value, problem) with the field named
    ``policy_params.<key>``; empty when the parameters are fine. With the campaign's `scheme`, also
    the parameters that mean nothing for it."""
    if params is None:
        return []
    if not isinstance(params, dict):
        return [("policy_params", params, 'must be a JSON object, e.g. {"repeat_share": 0.05}')]
    found = []
    for name, rule in RULES.items():
        if name in params and (problem := rule.problem(params[name])) is not None:
            found.append((f"policy_params.{name}", params[name], problem))
    if scheme is not None and scheme not in EXCLUSION_SCHEMES:
        found += [
            (
                f"policy_params.{name}",
                params[name],
                f"applies only to campaigns whose judgments are categories ({', '.join(EXCLUSION_SCHEMES)}): "
                f"a {scheme} campaign has no gold accuracy or grader model to compare with it",
            )
            for name in EXCLUSION_THRESHOLDS
            if name in params
        ]
    return found


def policy_params_clean(*, params: Any, scheme: str | None = None) -> dict[str, Any]:
    """`params` (None: no parameters) when every known parameter is usable (for `scheme`, when
    given); else InvalidValue naming the first bad one, e.g. field ``policy_params.repeat_share``
    and its value."""
    for field, value, problem in policy_params_problems(params=params, scheme=scheme):
        raise InvalidValue(f"{field} {problem}, got {value!r}.", field=field, value=value)
    return dict(params or {})


def policy_param(*, campaign: Campaign, name: str, default: Any) -> Any:
    """A campaign's parameter for reading: the stored value when it passes its rule, else `default`
    (values stored before this check existed, or written around the services, must not break a
    grader's request)."""
    params = campaign.policy_params or {}
    if not isinstance(params, dict) or name not in params or RULES[name].problem(params[name]) is not None:
        return default
    return params[name]
