"""The `uncertainty` allocation policy in simulation, and aggregation by Dawid–Skene
(docs/design.md §5.6).

When a grader asks for work, the policy gives them the unit (not judged by them, below the maximum
overlap, within the budget) where one more judgment *by this grader* is expected to reduce the
entropy of the unit's posterior most, under the grader's confusion matrix θ_g fitted by
Dawid–Skene; ties go to the unit with fewer judgments, then the lower unit id. It stops when no
grader can expect to gain ``min_gain`` bits anywhere, or the budget is spent.

Graders work at the same pace: in each round every grader asks for the same number of units (the
policy chooses units, never graders), and the model is refitted between rounds.
"""

from __future__ import annotations

import numpy as np

from .dawid_skene import dawid_skene_codes

MIN_GAIN = 0.4  # bits
REFIT_STEPS = 5


def _entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    logs = np.log2(p, out=np.zeros_like(p), where=p > 0)
    return -(p * logs).sum(axis=axis) + 0.0


def expected_entropy_drop(posterior: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """(n_units, n_graders) H(p_u) − E_l[H(p_u | grader g answers l)].

    posterior : (n_units, k); confusion : (n_graders, k, k) with confusion[g, t, l] = P(g says l | t).
    """
    joint = posterior[:, None, :, None] * confusion[None, :, :, :]  # (U, G, truth, answer)
    q = joint.sum(axis=2)  # (U, G, answer): predictive probability of each answer
    after = np.divide(joint, q[:, :, None, :], out=np.zeros_like(joint), where=q[:, :, None, :] > 0)
    expected = (q * _entropy(after, axis=2)).sum(axis=2)
    return _entropy(posterior)[:, None] - expected


def fit(
    answers: np.ndarray,
    judged: np.ndarray,
    k: int,
    start: np.ndarray | None = None,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Dawid–Skene posterior (n_units, k) and confusion (n_graders, k, k) from the judged answers."""
    unit, grader = np.nonzero(judged)
    posterior, _, confusion = dawid_skene_codes(
        unit,
        grader,
        answers[unit, grader],
        n_units=answers.shape[0],
        n_graders=answers.shape[1],
        k=k,
        start=start,
        max_iter=max_iter,
    )
    return posterior, confusion


def run_uncertainty(
    answers: np.ndarray,
    order: np.ndarray,
    k: int,
    *,
    initial_overlap: int,
    max_overlap: int,
    budget: float = np.inf,
    per_round: int | None = None,
    min_gain: float = MIN_GAIN,
) -> tuple[np.ndarray, int]:
    """Allocate under the uncertainty policy; returns the (n_units, n_graders) mask of judgments made
    and the number of rounds. The first ``initial_overlap`` graders of ``order`` judge every unit first.

    per_round : units each grader asks for per round (default: 1% of the units, at least 1).
    """
    n_units, n_graders = answers.shape
    judged = np.zeros(answers.shape, dtype=bool)
    np.put_along_axis(judged, order[:, :initial_overlap], True, axis=1)
    per_round = per_round or max(1, n_units // 100)
    unit_ids = np.arange(n_units)
    rounds, posterior = 0, None
    while judged.sum() < budget:
        # Between rounds a few EM steps from the last posterior suffice (a handful of judgments changed).
        posterior, confusion = fit(
            answers, judged, k, start=posterior, max_iter=100 if posterior is None else REFIT_STEPS
        )
        gain = expected_entropy_drop(posterior, confusion)
        count = judged.sum(axis=1)
        gain[judged | (count >= max_overlap)[:, None] | (gain < min_gain)] = -np.inf
        taken = np.zeros(n_units, dtype=bool)
        room = int(budget - judged.sum()) if np.isfinite(budget) else n_units * n_graders
        for g in np.roll(np.arange(n_graders), -rounds):  # who asks first rotates
            open_ = np.isfinite(gain[:, g]) & ~taken
            best = np.lexsort((unit_ids, count, -gain[:, g]))[: open_.size]
            chosen = best[open_[best]][: min(per_round, room)]
            judged[chosen, g], taken[chosen] = True, True
            room -= chosen.size
        if not taken.any():
            break
        rounds += 1
    return judged, rounds
