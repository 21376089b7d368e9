"""A unit's posterior over categories under a fitted Dawid–Skene grader model, and the expected
drop of its entropy from one more judgment by a given grader (docs/design.md §5.6, policy
`uncertainty`).

The model is stored with the campaign's allocation state as plain lists:
``{"categories": [...], "priors": [k], "theta": {grader_id: k×k rows = truth, columns = answer}}``.
A grader the model has not seen yet (or an empty model) gets a symmetric confusion matrix with
accuracy ``DEFAULT_ACCURACY``. Units hold at most a few judgments, so plain Python is enough here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

DEFAULT_ACCURACY = 0.7


def _theta(model: dict[str, Any], grader_id: int, k: int) -> list[list[float]]:
    found = (model.get("theta") or {}).get(str(grader_id))
    if found is not None and len(found) == k:
        return found
    off = (1 - DEFAULT_ACCURACY) / (k - 1)
    return [[DEFAULT_ACCURACY if i == j else off for j in range(k)] for i in range(k)]


def _priors(model: dict[str, Any], k: int) -> list[float]:
    priors = model.get("priors")
    return list(priors) if priors is not None and len(priors) == k else [1.0 / k] * k


def posterior(model: dict[str, Any], judged: Sequence[tuple[int, Any]], *, categories: Sequence[str]) -> list[float]:
    """P(truth = k | the unit's judgments) for judgments given as (grader id, category)."""
    k = len(categories)
    index = {str(c): i for i, c in enumerate(categories)}
    logp = [math.log(max(p, 1e-300)) for p in _priors(model, k)]
    for grader_id, value in judged:
        answer = index.get(str(value))
        if answer is None:
            continue
        theta = _theta(model, grader_id, k)
        logp = [lp + math.log(max(theta[t][answer], 1e-300)) for t, lp in enumerate(logp)]
    top = max(logp)
    weights = [math.exp(lp - top) for lp in logp]
    total = sum(weights)
    return [w / total for w in weights]


def entropy(p: Sequence[float]) -> float:
    """Entropy in bits."""
    return -sum(x * math.log2(x) for x in p if x > 0) + 0.0


def posterior_entropy(model: dict[str, Any], judged: Sequence[tuple[int, Any]], *, categories: Sequence[str]) -> float:
    if len(categories) < 2:
        return 0.0
    return entropy(posterior(model, judged, categories=categories))


def expected_entropy_drop(
    model: dict[str, Any], judged: Sequence[tuple[int, Any]], grader_id: int, *, categories: Sequence[str]
) -> float:
    """H(posterior) − E_answer[H(posterior after grader's answer)]: the information one more judgment
    by this grader is expected to give about the unit's true category."""
    k = len(categories)
    if k < 2:
        return 0.0
    p = posterior(model, judged, categories=categories)
    theta = _theta(model, grader_id, k)
    expected = 0.0
    for answer in range(k):
        joint = [p[t] * theta[t][answer] for t in range(k)]
        q = sum(joint)
        if q > 0:
            expected += q * entropy([j / q for j in joint])
    return entropy(p) - expected
