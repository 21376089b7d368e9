"""The report's ``systems`` section for rating campaigns (docs/design.md §5.5, §5.7).

From the judgments and the systems' provenance: each system's score per scale with a bootstrap
interval over queries, the Friedman test over queries with Kendall's W, the Nemenyi post hoc p-values
and the groups of systems that cannot be told apart. Where per-unit system scores were uploaded: each
system's Pearson and Spearman with the ground truth (bootstrap intervals over units), the four
confusability-aware methods, and per-grader ρ with paired t-tests between systems over graders.
The section is computed from frames the caller passes; only :func:`systems_reevaluate` (the page's
choice of ground truth, measure and threshold) reads the stored run's units and the uploaded scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis import selectors
from analysis.metrics.system_scores import evaluate_scores
from analysis.metrics.systems import ALPHA, friedman, letter_groups, nemenyi, per_query_scores, system_scores
from analysis.reports.serialize import jsonable
from analysis.services.judgments import Judgments, judgments_of
from analysis.services.sections.instrument import joined, rows_among, slice_columns
from analysis.services.values import ValueSpec
from grading.models.choices import Scheme

BROAD_NUMBER = {"NS": 0.0, "SS": 1.0, "VS": 2.0}
SCALES: dict[str, list[dict[str, str]]] = {
    Scheme.BROAD_FINE: [
        {"key": "fine", "name": "FINE", "explain": "mean FINE score, 0–10"},
        {"key": "broad", "name": "BROAD", "explain": "BROAD as a number: NS = 0, SS = 1, VS = 2"},
    ],
    Scheme.NUMERIC: [{"key": "score", "name": "score", "explain": "mean score on the campaign's scale"}],
}
NOT_DISTINGUISHABLE = "not distinguishable at this precision"
DEFAULT_EVALUATION = {"aggregate": "mean", "measure": "std", "threshold": None}


def unit_truth(judgments: Judgments, scheme: str) -> dict[str, pd.Series]:
    """Ground truth ``g_u`` per scale: the mean of the unit's judgments (units without any left out).

    Read a slice of whole units at a time: a unit's mean is that of its own rows, in their order,
    so it is the same to the last bit as from every judgment at once."""
    keys = [scale["key"] for scale in SCALES.get(scheme, [])]
    pieces: dict[str, list[pd.Series]] = {key: [] for key in keys}
    for chunk in judgments.chunks(slice_columns(judgments.spec, *keys)):
        for key in keys:
            pieces[key].append(_slice_truth(chunk, key))
    return {key: _joined_truth(series, key) for key, series in pieces.items()}


def _slice_truth(judgments: pd.DataFrame, key: str) -> pd.Series:
    """The mean of each unit's values of the scale ``key`` (a number; BROAD as ``BROAD_NUMBER``)."""
    values = judgments["broad"].map(BROAD_NUMBER) if key == "broad" else judgments[key]
    values = pd.to_numeric(values, errors="coerce")
    kept = values.notna()
    return values[kept].groupby(judgments["unit"][kept]).mean()


def _joined_truth(pieces: list[pd.Series], key: str) -> pd.Series:
    """The slices' means as one series (as from every judgment at once: no slice, an empty one)."""
    kept = [s for s in pieces if len(s)] or pieces[:1]
    if not kept:
        return pd.Series(dtype=float, name=key, index=pd.Index([], dtype=np.int64, name="unit"))
    return pd.concat(kept) if len(kept) > 1 else kept[0]


def verdict(p: float) -> str:
    return "distinguishable" if p < ALPHA else NOT_DISTINGUISHABLE


def _interval(row: pd.Series) -> dict[str, float]:
    return {"value": float(row["score"]), "ci_low": float(row["ci_low"]), "ci_high": float(row["ci_high"])}


def ranking_tests(per_query: pd.DataFrame, order: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Friedman result and the post hoc pairs and letter groups (or why there are none)."""
    try:
        result = friedman(per_query)
        pvalues = nemenyi(per_query)
    except ValueError as exc:
        return {"reason": str(exc)}, {
            "method": "Nemenyi",
            "alpha": ALPHA,
            "pairs": [],
            "groups": {},
            "reason": str(exc),
        }
    result = {"statistic": result.pop("chi2"), **result}
    systems = [s for s in order if s in pvalues.index]
    pairs = [
        {
            "system_a": a,
            "system_b": b,
            "p": float(pvalues.loc[a, b]),
            "distinguishable": bool(pvalues.loc[a, b] < ALPHA),
            "verdict": verdict(float(pvalues.loc[a, b])),
        }
        for i, a in enumerate(systems)
        for b in systems[i + 1 :]
    ]
    return result, {"method": "Nemenyi", "alpha": ALPHA, "pairs": pairs, "groups": letter_groups(systems, pvalues)}


def systems_section(
    judgments: pd.DataFrame | Judgments,
    spec: ValueSpec,
    provenance: pd.DataFrame,
    uploaded: pd.DataFrame,
    units: pd.DataFrame,
    *,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> dict[str, Any]:
    """The ``systems`` section of the analysis result (see the module docstring)."""
    judgments = judgments_of(judgments, spec)
    scales = SCALES.get(spec.scheme)
    if not scales:
        return {"available": False, "reason": "systems are scored here only in BROAD/FINE and numeric campaigns"}
    out: dict[str, Any] = {
        "available": False,
        "scales": scales,
        "alpha": ALPHA,
        "per_system": [],
        "friedman": None,
        "posthoc": None,
        "uploaded": None,
        "n_boot": n_boot,
        "confidence": confidence,
    }
    if provenance.empty and uploaded.empty:
        return {**out, "reason": "no system returned any of the judged candidates, and no system scores were uploaded"}
    primary = scales[0]["key"]
    if not provenance.empty and not judgments.empty:
        truth = unit_truth(judgments, spec.scheme)
        tables = {key: per_query_scores(series, provenance) for key, series in truth.items()}
        scored = {
            key: system_scores(t, rng=rng, n_boot=n_boot, confidence=confidence)
            for key, t in tables.items()
            if not t.empty
        }
        if primary in scored:
            order = [str(s) for s in scored[primary].index]
            out["friedman"], out["posthoc"] = ranking_tests(tables[primary], order)
            out["friedman"]["scale"] = scales[0]["name"]
            groups = out["posthoc"]["groups"]
            out["per_system"] = [
                {
                    "system": s,
                    "n_queries": int(scored[primary].loc[s, "n_queries"]),
                    "group": groups.get(s, ""),
                    "scores": {k: _interval(v.loc[s]) for k, v in scored.items() if s in v.index},
                }
                for s in order
            ]
            out["available"] = True
    if not uploaded.empty and not judgments.empty and not units.empty:
        out["uploaded"] = uploaded_evaluation(
            uploaded, units.set_index("unit"), rng=rng, n_boot=n_boot, confidence=confidence, **DEFAULT_EVALUATION
        )
        out["uploaded"]["graders"] = grader_comparison(judgments, spec, uploaded)
        out["available"] = True
    if not out["available"]:
        out["reason"] = "no judged candidate has a system's provenance or an uploaded score yet"
    return out


def uploaded_evaluation(
    uploaded: pd.DataFrame,
    units: pd.DataFrame,
    *,
    aggregate: str,
    measure: str,
    threshold: float | None,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> dict[str, Any]:
    """Every uploaded system's per-unit scores against the ground truth (units: indexed by unit).

    Raises ValueError for an unknown aggregate or measure (the page shows it beside its form).
    """
    rated = units[units["n"] >= 1]
    per_system = []
    for system, rows in uploaded.groupby("system", sort=True):
        scores = pd.Series(rows["score"].to_numpy(dtype=float), index=rows["unit"].to_numpy())
        result = evaluate_scores(
            scores,
            rated,
            aggregate=aggregate,
            measure=measure,
            threshold=threshold,
            rng=rng,
            n_boot=n_boot,
            confidence=confidence,
        )
        per_system.append({"system": str(system), **result})
    thresholds = [s["low_subset"]["threshold"] for s in per_system if s.get("low_subset")]
    return {
        "aggregate": aggregate,
        "measure": measure,
        "threshold": threshold if threshold is not None else (thresholds[0] if thresholds else None),
        "threshold_chosen": threshold is not None,
        "per_system": per_system,
    }


def grader_comparison(judgments: Judgments, spec: ValueSpec, uploaded: pd.DataFrame) -> dict[str, Any]:
    """Per-grader ρ of each system (min, max, mean, std) and paired t-tests between systems over graders.

    A grader's ρ with a system reads the grader's judgments of the units the system scored, so only
    the rows of the scored units are kept (``rows_among``), read a slice at a time."""
    key = SCALES[spec.scheme][0]["key"]
    pieces = (
        chunk[["unit", "grader", key]].rename(columns={key: "value"}).dropna()
        for chunk in judgments.chunks(slice_columns(judgments.spec, key))
    )
    ratings = joined(rows_among(pieces, pd.unique(uploaded["unit"])))
    if ratings is None or uploaded["system"].nunique() < 1:
        return {"per_system": [], "tests": []}
    try:
        comparison = m.system_comparison(ratings, uploaded[["system", "unit", "score"]])
    except ValueError as exc:
        return {"per_system": [], "tests": [], "reason": str(exc)}
    per_system = comparison.per_system.reset_index(names="system").to_dict("records")
    return {"method": "pearson", "per_system": per_system, "tests": comparison.tests.to_dict("records")}


def systems_reevaluate(*, run: Any, aggregate: str, measure: str, threshold: float | None) -> dict[str, Any]:
    """A copy of the run's result whose uploaded-score evaluation uses the given settings (for the page;
    nothing is stored). Per-grader ρ and the t-tests do not depend on them and are kept."""
    result = dict(run.result or {})
    section = dict(result.get("systems") or {})
    uploaded = selectors.system_unit_scores_frame(campaign_id=run.campaign_id)
    if not section.get("uploaded") or uploaded.empty:
        return result
    units = selectors.unit_results_frame(run_id=run.pk)
    rng = np.random.default_rng(run.seed)
    fresh = uploaded_evaluation(
        uploaded,
        units,
        aggregate=aggregate,
        measure=measure,
        threshold=threshold,
        rng=rng,
        n_boot=int(section.get("n_boot", 1000)),
        confidence=float(section.get("confidence", 0.95)),
    )
    section["uploaded"] = {**jsonable(fresh), "graders": section["uploaded"].get("graders")}
    result["systems"] = section
    return result
