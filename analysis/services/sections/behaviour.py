"""Report sections about people and queries: stability, engagement, graders, per-query disagreement."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.services.values import ValueSpec, categorical_long, numeric_long, valued

# event type -> (scale shown in the report, numeric?)
SCALES = {
    "broad_set": ("BROAD", False),
    "fine_set": ("FINE", True),
    "score_set": ("score", True),
    "label_set": ("label", False),
}


def stability(
    value_events: pd.DataFrame, unit_events: pd.DataFrame, spec: ValueSpec, *, tolerance: float
) -> dict[str, Any]:
    """Changes, reverts and repeats per scale (overall and per grader); time and auditions per unit."""
    scales: dict[str, Any] = {}
    for kind, (label, numeric) in SCALES.items():
        events = value_events[value_events["type"] == kind]
        if events.empty:
            continue
        values = events["value"].astype(float) if numeric else events["value"].astype(str)
        frame = events[["grader", "unit", "seq"]].assign(value=values.to_numpy())
        result = m.judgment_stability(frame, tolerance=tolerance if numeric else 0.0)
        scales[label] = {
            "tolerance": tolerance if numeric else 0.0,
            "overall": result["overall"],
            "per_grader": result["per_grader"].reset_index().to_dict("records"),
        }
    return {"scales": scales, "engagement": engagement(unit_events)}


def engagement(unit_events: pd.DataFrame) -> dict[str, Any]:
    if unit_events.empty:
        return {"overall": None, "per_grader": []}
    per = m.engagement(unit_events[["grader", "unit", "ts", "type"]])
    by_grader = per.groupby(level="grader").agg(
        units=("seconds", "size"),
        mean_seconds=("seconds", "mean"),
        median_seconds=("seconds", "median"),
        mean_auditions=("auditions", "mean"),
    )
    return {"overall": m.engagement_summary(per), "per_grader": by_grader.reset_index().to_dict("records")}


def _agreement_with_majority(cat: pd.DataFrame, categories: list[Any]) -> pd.Series:
    """Per grader: share of judgments equal to the unique majority of the *other* graders' judgments.

    Judgments whose unit has no unique majority among the others (or no other judgment) are not counted.
    """
    codes = pd.Index(categories).get_indexer(cat["value"])
    unit_codes, _ = pd.factorize(cat["unit"])
    counts = np.zeros((unit_codes.max() + 1, len(categories)))
    np.add.at(counts, (unit_codes, codes), 1)
    others = counts[unit_codes]
    others[np.arange(len(codes)), codes] -= 1
    top = others.max(axis=1)
    unique = (others == top[:, None]).sum(axis=1) == 1
    counted = unique & (top > 0)
    agree = counted & (others[np.arange(len(codes)), codes] == top)
    frame = pd.DataFrame({"grader": cat["grader"].to_numpy(), "counted": counted, "agree": agree})
    sums = frame.groupby("grader")[["counted", "agree"]].sum()
    return (sums["agree"] / sums["counted"].where(sums["counted"] > 0)).rename("agreement_with_majority")


def _deviation_from_others(num: pd.DataFrame) -> pd.Series:
    """Per grader: mean |score − mean of the other graders' scores of the unit|."""
    groups = num.groupby("unit")["value"]
    total, size = groups.transform("sum"), groups.transform("size")
    others = (total - num["value"]) / (size - 1).where(size > 1)
    dev = (num["value"] - others).abs()
    return dev.groupby(num["grader"]).mean().rename("mean_abs_deviation")


def graders(
    judgments: pd.DataFrame, spec: ValueSpec, unit_events: pd.DataFrame, pseudonyms: dict[int, str]
) -> list[dict[str, Any]]:
    """One row per grader: judgments, category usage, agreement with the majority, score habits, time."""
    frame = valued(judgments, spec)
    if frame.empty:
        return []
    table = frame.groupby("grader").agg(judgments=("unit", "size"))
    if spec.has_categories:
        cat = categorical_long(frame, spec)
        usage = pd.crosstab(cat["grader"], cat["value"]).reindex(columns=spec.categories, fill_value=0)
        usage.columns = [f"usage_{c}" for c in spec.categories]
        table = table.join(usage).join(_agreement_with_majority(cat, spec.categories))
    if spec.has_numbers:
        num = numeric_long(frame)
        stats = num.groupby("grader")["value"].agg(score_mean="mean", score_std="std")
        table = table.join(stats).join(_deviation_from_others(num))
    if not unit_events.empty:
        per = m.engagement(unit_events[["grader", "unit", "ts", "type"]])
        table = table.join(per.groupby(level="grader")["seconds"].median().rename("median_seconds"))
        table = table.join(unit_events.groupby("grader").size().rename("events"))
    table = table.reset_index()
    table.insert(1, "pseudonym", table["grader"].map(lambda g: pseudonyms.get(int(g), f"grader-{g}")))
    return table.sort_values("pseudonym").to_dict("records")


def queries(
    judgments: pd.DataFrame, spec: ValueSpec, units: pd.DataFrame, labels: dict[int, str]
) -> list[dict[str, Any]]:
    """One row per query: units, judgments, agreement kinds and the share of units in disagreement."""
    frame = valued(judgments, spec)
    frame = frame[frame["query"].notna()]
    if frame.empty:
        return []
    table = frame.groupby("query").agg(units=("unit", "nunique"), judgments=("unit", "size"))
    if spec.has_categories:
        cat = categorical_long(frame, spec)
        if not cat.empty:
            counts, unit_index, _ = m.long_to_counts(cat[["unit", "grader", "value"]], spec.categories)
            kinds = pd.Series(m.pattern_kinds(counts), index=unit_index)
            query_of = cat.drop_duplicates("unit").set_index("unit")["query"].reindex(unit_index)
            tally = pd.crosstab(query_of.to_numpy(), kinds.to_numpy()).reindex(
                columns=["full", "partial", "none"], fill_value=0
            )
            rated = tally.sum(axis=1)
            tally["disagreement_pct"] = 100.0 * (tally["partial"] + tally["none"]) / rated.where(rated > 0)
            table = table.join(tally)
    if "std" in units and not units.empty:
        rated_units = units[units["n"] >= 2]
        table = table.join(rated_units.groupby("query")[["std", "entropy"]].mean().add_prefix("mean_"))
    table = table.reset_index().rename(columns={"index": "query"})
    table.insert(1, "label", table["query"].map(lambda q: labels.get(int(q), str(q))))
    return table.to_dict("records")
