"""The agreement report: agreement, patterns, chi-squared tests and confusability of a long frame.

A plain function over a pandas DataFrame, so the ``agreement`` command (ratings from a CSV file) and
the analysis jobs (judgments from the database) build the same report. The result holds only JSON
types; undefined statistics are ``None`` with the reason under ``notes``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.metrics import (
    chi2_graders,
    chi2_queries,
    cohen_kappa,
    collapse_counts,
    confusability_summary,
    fine_within_broad,
    fleiss_kappa_ci,
    fleiss_kappa_per_category,
    kind_summary,
    krippendorff_alpha_ci,
    landis_koch,
    long_to_counts,
    long_to_wide,
    pattern_kinds,
    pattern_table,
    reason_of,
    unit_confusability,
)
from analysis.metrics.bootstrap import Estimate
from analysis.metrics.krippendorff import LEVELS, Level
from analysis.reports.serialize import jsonable

Scheme = Literal["categorical", "numeric", "broad_fine"]
SCHEMES = ("categorical", "numeric", "broad_fine")
BROAD = ["NS", "SS", "VS"]
BROAD_COLLAPSE = {"VS": "S", "SS": "S"}
WEIGHTS = ("unweighted", "linear", "quadratic")


def build_agreement_report(frame: pd.DataFrame, *, scheme: Scheme = "categorical",
                           levels: Sequence[Level] = LEVELS, categories: Sequence[Any] | None = None,
                           collapse: Mapping[Any, Any] | None = None, n_boot: int = 1000,
                           seed: int = 0) -> dict[str, Any]:
    """The agreement, confusability and pattern report of a set of judgments.

    Parameters
    ----------
    frame : long DataFrame, columns ``unit``, ``grader``, ``value`` (``broad`` and ``fine`` instead of
        ``value`` for the ``broad_fine`` scheme), optionally ``query``; one row per (unit, grader).
    scheme : "categorical" (labels; ordered by ``categories`` or sorted), "numeric" (numbers; each
        distinct value is a category for kappa and patterns) or "broad_fine" (kappa and patterns on
        BROAD, confusability on FINE).
    levels : the Krippendorff alpha levels to report.
    categories : category order; for broad_fine the default is NS, SS, VS.
    collapse : category merge map such as {"VS": "S", "SS": "S"}; broad_fine collapses so by default.
    n_boot : bootstrap resamples for the intervals (0: no intervals).
    seed : seeds one generator per statistic, so each interval is reproducible on its own.

    Returns
    -------
    dict of JSON types: n_units, n_graders, n_judgments, fleiss_kappa, fleiss_kappa_collapsed,
    cohen_kappa, krippendorff_alpha, patterns, chi2_graders, chi2_queries, confusability, units, ...
    """
    if scheme not in SCHEMES:
        raise ValueError(f"`scheme` must be one of {', '.join(map(repr, SCHEMES))}; got {scheme!r}")
    bad = [level for level in levels if level not in LEVELS]
    if bad:
        raise ValueError(f"`levels` must be among {', '.join(map(repr, LEVELS))}; got {bad[0]!r}")
    if scheme == "broad_fine":
        categories = BROAD if categories is None else categories
        collapse = BROAD_COLLAPSE if collapse is None else collapse
    data = _Data(frame, scheme, categories)
    report = {"scheme": scheme, "categories": [_plain(c) for c in data.categories],
              "n_units": len(data.units), "n_graders": len(data.graders),
              "n_judgments": len(frame), "n_units_excluded": int((data.counts.sum(1) < 2).sum()),
              "bootstrap": {"n_boot": n_boot, "seed": seed, "confidence": 0.95}, "notes": {}}
    report.update(_agreement(data, collapse, levels, n_boot, seed, report["notes"]))
    report.update(_patterns(data, collapse))
    report.update(_confusability(data, frame, scheme))
    return jsonable(report)


class _Data:
    """The shapes the statistics need: count table of labels, numeric wide matrix and long frame."""

    def __init__(self, frame: pd.DataFrame, scheme: str, categories: Sequence[Any] | None) -> None:
        label = "broad" if scheme == "broad_fine" else "value"
        labels = frame.rename(columns={label: "value"})[["unit", "grader", "value"]]
        if scheme == "numeric":
            labels = labels.assign(value=pd.to_numeric(labels["value"]))
        self.labels = labels
        self.counts, self.units, self.categories = long_to_counts(labels, categories)
        positions = pd.Series(np.arange(1, len(self.categories) + 1), index=self.categories)
        numeric = labels["value"] if scheme == "numeric" else labels["value"].map(positions)
        self.numeric = labels.assign(value=numeric.astype(float))  # alpha and unit statistics
        self.wide, _, self.graders = long_to_wide(self.numeric)
        self.queries = _unit_queries(frame, self.units) if "query" in frame.columns else None


def _unit_queries(frame: pd.DataFrame, units: pd.Index) -> np.ndarray:
    per_unit = frame.groupby("unit")["query"].agg(["first", "nunique"])
    clash = per_unit[per_unit["nunique"] > 1]
    if len(clash):
        raise ValueError(f"`frame` gives unit {clash.index[0]!r} more than one query")
    return per_unit["first"].reindex(units).to_numpy()


def _estimate(result: Estimate, notes: dict, key: str) -> dict[str, Any]:
    if result.reason:
        notes[key] = result.reason
    return {"value": result.value, "ci_low": result.ci_low, "ci_high": result.ci_high}


def _kappa_block(counts: np.ndarray, categories: list, n_boot: int, seed: int, notes: dict, key: str) -> dict:
    estimate = fleiss_kappa_ci(counts, rng=np.random.default_rng(seed), n_boot=max(n_boot, 1))
    block = _estimate(estimate if n_boot else estimate._replace(ci_low=math.nan, ci_high=math.nan), notes, key)
    per_category = fleiss_kappa_per_category(counts)
    block["label"] = landis_koch(estimate.value)
    block["per_category"] = {str(c): k for c, k in zip(categories, per_category, strict=True)}
    return block


def _agreement(data: _Data, collapse: Mapping | None, levels: Sequence[str], n_boot: int, seed: int,
               notes: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"fleiss_kappa": _kappa_block(data.counts, data.categories, n_boot, seed,
                                                        notes, "fleiss_kappa")}
    if collapse:
        counts, labels = collapse_counts(data.counts, data.categories, collapse)
        out["fleiss_kappa_collapsed"] = {"categories": labels, **_kappa_block(
            counts, labels, n_boot, seed, notes, "fleiss_kappa_collapsed")}
    if len(data.graders) == 2:
        out["cohen_kappa"] = _cohen(data, notes)
    out["krippendorff_alpha"] = {}
    for level in levels:
        estimate = krippendorff_alpha_ci(data.wide, level, rng=np.random.default_rng(seed), n_boot=max(n_boot, 1))
        if not n_boot:
            estimate = estimate._replace(ci_low=math.nan, ci_high=math.nan)
        out["krippendorff_alpha"][level] = _estimate(estimate, notes, f"krippendorff_alpha.{level}")
    return out


def _cohen(data: _Data, notes: dict) -> dict[str, Any]:
    """Cohen's kappas of the two graders; weights follow the category order (numeric: sorted values)."""
    first, second = data.wide[:, 0], data.wide[:, 1]
    if not (~np.isnan(first) & ~np.isnan(second)).any():
        notes["cohen_kappa"] = "the two graders have no unit in common"
        return {w: None for w in WEIGHTS}
    numeric = data.labels["value"].dtype.kind in "fiu"
    order = sorted(data.numeric["value"].unique()) if numeric else range(1, len(data.categories) + 1)
    out = {w: cohen_kappa(first, second, weights=w, categories=order) for w in WEIGHTS}
    for weights, value in out.items():
        if reason_of(value):
            notes[f"cohen_kappa.{weights}"] = reason_of(value)
    return out


def _pattern_block(counts: np.ndarray, categories: list) -> dict[str, Any]:
    table = pattern_table(counts, categories)
    return {"categories": [_plain(c) for c in categories], "kinds": kind_summary(counts),
            "table": table.to_dict(orient="records")}


def _patterns(data: _Data, collapse: Mapping | None) -> dict[str, Any]:
    patterns = {"levels": _pattern_block(data.counts, data.categories)}
    if collapse:
        counts, labels = collapse_counts(data.counts, data.categories, collapse)
        patterns["collapsed"] = _pattern_block(counts, labels)
    out = {"patterns": patterns, "chi2_graders": chi2_graders(
        data.labels["grader"].to_numpy(), data.labels["value"].to_numpy())._asdict()}
    if data.queries is not None:
        out["chi2_queries"] = chi2_queries(data.queries, pattern_kinds(data.counts))._asdict()
    return out


def _confusability(data: _Data, frame: pd.DataFrame, scheme: str) -> dict[str, Any]:
    if scheme == "broad_fine":
        fine = frame[["unit", "grader", "fine"]].rename(columns={"fine": "value"})
        units = unit_confusability(fine)
        within = fine_within_broad(frame["broad"].to_numpy(), frame["fine"].to_numpy(), data.categories)
        extra = {"fine_within_broad": within.reset_index().to_dict(orient="records")}
    else:
        units, extra = unit_confusability(data.numeric), {}
    summary = confusability_summary(units)
    rows = units.reset_index()
    if scheme == "categorical":
        rows["majority"] = [data.categories[int(p) - 1] for p in rows["majority"]]
    if scheme == "broad_fine":
        distribution = pd.DataFrame(data.counts.astype(int), columns=data.categories, index=data.units).reindex(units.index)
        rows["broad"] = distribution.to_dict(orient="records")
    return {"confusability": summary, "units": rows.to_dict(orient="records"), **extra}


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
