"""Comparing adaptive allocation policies by simulation with known truth (docs/design.md §5.6).

Every policy sees the same simulated judgments (common random numbers): for each unit a fixed
sequence of up to ``max_overlap`` judgments by distinct graders is drawn once, and a policy decides
how long a prefix of it each unit consumes. Differences between policies are then differences of
allocation, not of luck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._checks import as_positive_int, as_rng, choice, short
from .uncertainty_policy import fit, run_uncertainty

Policy = Literal["fixed", "consensus", "confusability", "query_deviation", "uncertainty"]
POLICIES: tuple[str, ...] = ("fixed", "consensus", "confusability", "query_deviation", "uncertainty")


@dataclass(frozen=True)
class SimulatedCampaign:
    truth: np.ndarray  # (n_units,) true category codes
    judgments: np.ndarray  # (n_units, max_overlap) category codes, in the order they would arrive
    queries: np.ndarray  # (n_units,) query codes
    n_categories: int
    tiebreak: np.ndarray  # (n_units, n_categories) in [0, 0.5): breaks majority ties the same way for every policy
    # Every grader's answer for every unit, and the order in which graders come to a unit: policies
    # that choose the unit for a grader (uncertainty) read answers[u, g]; the others take
    # judgments[u, j] = answers[u, order[u, j]]. Absent for campaigns built by hand.
    answers: np.ndarray | None = None  # (n_units, n_graders)
    order: np.ndarray | None = None  # (n_units, n_graders)


def simulate_judgments(
    truth: ArrayLike,
    accuracy: ArrayLike,
    *,
    max_overlap: int,
    n_categories: int,
    rng: np.random.Generator,
    queries: ArrayLike | None = None,
) -> SimulatedCampaign:
    """Draw each unit's judgments from graders of known accuracy.

    Parameters
    ----------
    truth : (n_units,) true category codes 0..n_categories-1.
    accuracy : (n_graders,) probability that each grader gives the true category; otherwise a
        uniformly chosen wrong one. Needs n_graders ≥ max_overlap (a unit never sees a grader twice).
    queries : (n_units,) query labels, for the query_deviation policy; default: one query.
    """
    truth = np.asarray(truth)
    accuracy = np.asarray(accuracy, dtype=float)
    rng, max_overlap = as_rng(rng), as_positive_int(max_overlap, name="max_overlap")
    if (
        truth.ndim != 1
        or truth.size == 0
        or truth.dtype.kind not in "iu"
        or truth.min() < 0
        or truth.max() >= n_categories
    ):
        raise ValueError(f"`truth` must be a non-empty 1-D array of codes 0..{n_categories - 1}, got {short(truth)}")
    if accuracy.ndim != 1 or accuracy.size < max_overlap or ((accuracy < 0) | (accuracy > 1)).any():
        raise ValueError(
            f"`accuracy` must hold at least max_overlap={max_overlap} probabilities in [0, 1], got {short(accuracy)}"
        )
    n, n_graders = truth.size, accuracy.size
    order = np.argsort(rng.random((n, n_graders)), axis=1)
    correct = rng.random((n, n_graders)) < accuracy[None, :]
    wrong = (truth[:, None] + rng.integers(1, n_categories, (n, n_graders))) % n_categories
    answers = np.where(correct, truth[:, None], wrong)
    judgments = np.take_along_axis(answers, order[:, :max_overlap], axis=1)
    query_codes = np.zeros(n, dtype=np.int64) if queries is None else pd.factorize(np.asarray(queries))[0]
    if query_codes.shape != (n,):
        raise ValueError(f"`queries` must have one label per unit ({n}), got shape {np.shape(queries)}")
    return SimulatedCampaign(
        truth, judgments, query_codes, n_categories, rng.random((n, n_categories)) * 0.5, answers, order
    )


def _counts(sim: SimulatedCampaign, used: np.ndarray) -> np.ndarray:
    """(n_units, k) counts of the first used[i] judgments of each unit."""
    taken = np.arange(sim.judgments.shape[1])[None, :] < used[:, None]
    counts = np.zeros((sim.truth.size, sim.n_categories))
    rows = np.broadcast_to(np.arange(sim.truth.size)[:, None], taken.shape)
    np.add.at(counts, (rows[taken], sim.judgments[taken]), 1)
    return counts


def _entropy(counts: np.ndarray) -> np.ndarray:
    p = counts / counts.sum(axis=1, keepdims=True)
    logs = np.log2(p, out=np.zeros_like(p), where=p > 0)
    return -(p * logs).sum(axis=1) + 0.0


def _wanting(
    policy: str, sim: SimulatedCampaign, counts: np.ndarray, used: np.ndarray, max_overlap: int, tolerance: float
) -> np.ndarray:
    """Priority of each unit for one more judgment this round (NaN = none)."""
    open_ = used < max_overlap
    disagree = (counts > 0).sum(axis=1) > 1
    priority = np.full(used.size, np.nan)
    if policy == "consensus":
        priority[open_ & disagree] = 0.0
    elif policy == "confusability":
        entropy = _entropy(counts)
        mask = open_ & (entropy > 0)
        priority[mask] = -entropy[mask]
    elif policy == "query_deviation":
        rate = np.bincount(sim.queries, weights=disagree) / np.bincount(sim.queries)
        deviating = np.abs(rate - disagree.mean()) > tolerance
        priority[open_ & disagree & deviating[sim.queries]] = 0.0
    return priority


def _majority_accuracy(sim: SimulatedCampaign, counts: np.ndarray) -> float:
    # The tie-break is below 0.5, so it decides ties and never overturns a count.
    return float(((counts + sim.tiebreak).argmax(axis=1) == sim.truth).mean())


def run_policy(
    sim: SimulatedCampaign,
    policy: Policy,
    *,
    initial_overlap: int,
    max_overlap: int,
    budget: int | None = None,
    tolerance: float = 0.2,
) -> dict:
    """Allocate judgments round by round under a policy; report what was spent and how accurate the
    majority labels are.

    Each round every unit the policy wants gets one more judgment (most wanted first when the budget
    runs short), until no unit is wanted, the budget is spent, or every unit is at max_overlap.
    """
    choice(policy, dict.fromkeys(POLICIES), name="policy")
    if not 1 <= initial_overlap <= max_overlap <= sim.judgments.shape[1]:
        raise ValueError(
            f"need 1 ≤ initial_overlap ({initial_overlap}) ≤ max_overlap ({max_overlap}) ≤ "
            f"{sim.judgments.shape[1]} simulated judgments per unit"
        )
    used = np.full(sim.truth.size, initial_overlap)
    limit = np.inf if budget is None else budget
    if used.sum() > limit:
        raise ValueError(f"`budget` ({budget}) is smaller than the initial allocation ({used.sum()})")
    if policy == "uncertainty":
        return _run_uncertainty(sim, initial_overlap=initial_overlap, max_overlap=max_overlap, budget=limit)
    rounds = 0
    while policy != "fixed" and used.sum() < limit:
        priority = _wanting(policy, sim, _counts(sim, used), used, max_overlap, tolerance)
        wanted = np.flatnonzero(~np.isnan(priority))
        if wanted.size == 0:
            break
        wanted = wanted[np.argsort(priority[wanted], kind="stable")][: int(min(wanted.size, limit - used.sum()))]
        used[wanted] += 1
        rounds += 1
    counts = _counts(sim, used)
    return {
        "policy": policy,
        "judgments": int(used.sum()),
        "per_unit": float(used.mean()),
        "rounds": rounds,
        "accuracy": _majority_accuracy(sim, counts),
        "unanimous": float(((counts > 0).sum(axis=1) == 1).mean()),
        "accuracy_ds": _ds_accuracy_ordered(sim, used),
    }


def _ds_accuracy(sim: SimulatedCampaign, judged: np.ndarray) -> float:
    """Accuracy of the Dawid–Skene labels given the (n_units, n_graders) mask of judgments made."""
    posterior, _ = fit(sim.answers, judged, sim.n_categories)
    return float((posterior.argmax(axis=1) == sim.truth).mean())


def _ds_accuracy_ordered(sim: SimulatedCampaign, used: np.ndarray) -> float:
    """The same when each unit took the first used[u] graders of its order (NaN for hand-built campaigns)."""
    if sim.answers is None:
        return float("nan")
    judged = np.zeros(sim.answers.shape, dtype=bool)
    taken = np.arange(sim.order.shape[1])[None, :] < used[:, None]
    np.put_along_axis(judged, sim.order, taken, axis=1)
    return _ds_accuracy(sim, judged)


def _run_uncertainty(sim: SimulatedCampaign, *, initial_overlap: int, max_overlap: int, budget: float) -> dict:
    if sim.answers is None:
        raise ValueError("the uncertainty policy needs every grader's answers (a campaign from simulate_judgments)")
    judged, rounds = run_uncertainty(
        sim.answers,
        sim.order,
        sim.n_categories,
        initial_overlap=initial_overlap,
        max_overlap=max_overlap,
        budget=budget,
    )
    unit, grader = np.nonzero(judged)
    counts = np.zeros((sim.truth.size, sim.n_categories))
    np.add.at(counts, (unit, sim.answers[unit, grader]), 1)
    used = judged.sum(axis=1)
    return {
        "policy": "uncertainty",
        "judgments": int(used.sum()),
        "per_unit": float(used.mean()),
        "rounds": rounds,
        "accuracy": _majority_accuracy(sim, counts),
        "unanimous": float(((counts > 0).sum(axis=1) == 1).mean()),
        "accuracy_ds": _ds_accuracy(sim, judged),
    }


def compare_policies(
    sim: SimulatedCampaign,
    *,
    initial_overlap: int,
    max_overlap: int,
    budget: int | None = None,
    tolerance: float = 0.2,
    policies: tuple[str, ...] = POLICIES,
) -> pd.DataFrame:
    """Judgments spent against accuracy of the aggregated (majority) labels, one row per policy.

    Also adds ``fixed@max`` — every unit at max_overlap — as the accuracy ceiling of the simulation.
    """
    rows = [
        run_policy(sim, p, initial_overlap=initial_overlap, max_overlap=max_overlap, budget=budget, tolerance=tolerance)
        for p in policies
    ]
    ceiling = run_policy(sim, "fixed", initial_overlap=max_overlap, max_overlap=max_overlap)
    rows.append({**ceiling, "policy": "fixed@max"})
    table = pd.DataFrame(rows).set_index("policy")
    table["accuracy_per_1000"] = table["accuracy"] / table["judgments"] * 1000
    return table


AGGREGATIONS = {"majority": "accuracy", "dawid_skene": "accuracy_ds"}


def compare_policies_long(
    sims: list[SimulatedCampaign],
    *,
    initial_overlap: int,
    max_overlap: int,
    budget: int | None = None,
    tolerance: float = 0.2,
    policies: tuple[str, ...] = POLICIES,
) -> pd.DataFrame:
    """One row per (policy, aggregation): judgments spent and accuracy, averaged over the simulated
    campaigns (seeds). Rows also for ``fixed@max`` (every unit at max_overlap: the baseline) and,
    when initial_overlap > 1, ``uncertainty@1`` (the uncertainty policy starting from one judgment per
    unit). ``share_of_baseline`` = judgments / judgments of fixed@max."""
    if not sims:
        raise ValueError("`sims` must hold at least one simulated campaign")
    rows = []
    for sim in sims:
        table = compare_policies(
            sim,
            initial_overlap=initial_overlap,
            max_overlap=max_overlap,
            budget=budget,
            tolerance=tolerance,
            policies=policies,
        )
        if "uncertainty" in policies and initial_overlap > 1:
            extra = run_policy(sim, "uncertainty", initial_overlap=1, max_overlap=max_overlap, budget=budget)
            table.loc["uncertainty@1", list(extra)[1:]] = list(extra.values())[1:]
        rows.append(table)
    mean = pd.concat(rows).groupby(level=0, sort=False).mean(numeric_only=True)
    out = []
    for policy, row in mean.iterrows():
        for aggregation, column in AGGREGATIONS.items():
            out.append(
                {
                    "policy": policy,
                    "aggregation": aggregation,
                    "judgments": float(row["judgments"]),
                    "per_unit": float(row["per_unit"]),
                    "accuracy": float(row[column]),
                    "share_of_baseline": float(row["judgments"] / mean.loc["fixed@max", "judgments"]),
                    "seeds": len(sims),
                }
            )
    return pd.DataFrame(out)
