"""What a shard keeps of the event log (``Behaviour``), and the report's stability and engagement from it.

A shard's part is made with this code (``services.shards``), so its text is part of every part's
fingerprint (``services.reuse.PART_CODE``): the sections computed only in the combining step live
elsewhere (``sections.graders_queries``), so that changing them does not make runs read every
shard again."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m

# event type -> (scale shown in the report, numeric?)
SCALES = {
    "broad_set": ("BROAD", False),
    "fine_set": ("FINE", True),
    "score_set": ("score", True),
    "label_set": ("label", False),
}


OPPORTUNITY_COLUMNS = ("grader", "seconds", "auditions")


@dataclass
class Opportunities:
    """Every (grader, unit) opportunity's active seconds and auditions, by grader then unit: what the
    campaign-wide time on unit is taken from (its median needs every value). Kept as the shards gave
    them, frames or Parquet, and read only when that figure is computed: at 10^7 judgments they are
    240 MB that the combining step would otherwise hold under every stage."""

    sources: list[pd.DataFrame | bytes] = field(default_factory=list)
    excluded: frozenset[int] = frozenset()

    @property
    def empty(self) -> bool:
        if not self.excluded:
            return not any(_rows(s) for s in self.sources)
        return self.frame(["grader"]).empty

    def frame(self, columns: list[str] | None = None) -> pd.DataFrame:
        """The opportunities less the excluded graders', one frame, in order (``columns``: these only)."""
        names = list(columns or OPPORTUNITY_COLUMNS)
        read = names if not self.excluded or "grader" in names else [*names, "grader"]
        frames = [_read(s, read) for s in self.sources if _rows(s)]
        if not frames:
            return _empty_opportunities()[names]
        out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        if self.excluded:
            out = out[~out["grader"].isin(self.excluded).to_numpy()].reset_index(drop=True)
        return out[names]

    def without(self, graders: set[int]) -> Opportunities:
        return Opportunities(self.sources, self.excluded | frozenset(graders)) if graders else self

    def column(self, name: str) -> pd.Series:
        """One column of every opportunity (less the excluded graders'), read source by source into
        one array: no frame of the sources together, no copy of it."""
        if self.excluded:
            return self.frame([name])[name]
        sizes = [_rows(s) for s in self.sources]
        out: np.ndarray | None = None
        at = 0
        for source, n in zip(self.sources, sizes, strict=True):
            if n:
                values = _read(source, [name])[name].to_numpy()
                if out is None:
                    out = np.empty(sum(sizes), dtype=values.dtype)
                out[at : at + n] = values
                at += n
        return pd.Series(out, name=name) if out is not None else _empty_opportunities()[name]


def _engagement_overall(opportunities: Opportunities) -> dict[str, float]:
    """``metrics.engagement_summary`` of every opportunity, read a column at a time, each median
    found in place in the column just read (at 10^7 opportunities pandas' median copies the column
    twice over, 160 MB): the same order statistics, so the same figures."""
    out: dict[str, float] = {}
    for name in ("seconds", "auditions"):
        column = opportunities.column(name)
        out[f"mean_{name}"] = float(column.mean())
        values = column.to_numpy()
        del column
        out[f"median_{name}"] = count_median(values) if values.dtype.kind in "iu" else float(column_median(values))
    return {key: out[key] for key in ("mean_seconds", "median_seconds", "mean_auditions", "median_auditions")}


def column_median(values: np.ndarray) -> float:
    """``pd.Series(values).median()``, reordering ``values`` in place instead of copying them
    (pandas' median is numpy's of the values that are not missing)."""
    if values.size == 0:
        return float("nan")
    if np.isnan(values).any():
        return float(pd.Series(values).median())
    return float(np.median(values, overwrite_input=True))


def count_median(values: np.ndarray) -> float:
    """``pd.Series(values).median()`` of integers (auditions), from how many times each occurs: the
    same middle values, found without sorting nor a float copy (80 MB at 10^7 opportunities).
    Values below 0 or far beyond their number are left to ``column_median``."""
    if values.size == 0:
        return float("nan")
    low, high = int(values.min()), int(values.max())
    if low < 0 or high > 4 * values.size + 1024:
        return float(column_median(values.astype(float)))
    seen = np.cumsum(np.bincount(values))  # seen[v]: how many values are v or less
    middle = np.searchsorted(seen, [(values.size - 1) // 2, values.size // 2], side="right")
    return (float(middle[0]) + float(middle[1])) / 2  # numpy's median of the two middle floats


def _rows(source: pd.DataFrame | bytes) -> int:
    if isinstance(source, pd.DataFrame):
        return len(source)
    import pyarrow.parquet as pq

    return pq.ParquetFile(io.BytesIO(source)).metadata.num_rows


def _read(source: pd.DataFrame | bytes, columns: list[str]) -> pd.DataFrame:
    return source[columns] if isinstance(source, pd.DataFrame) else pd.read_parquet(io.BytesIO(source), columns=columns)


def _empty_opportunities() -> pd.DataFrame:
    return pd.DataFrame(
        {"grader": pd.Series(dtype="int64"), "seconds": pd.Series(dtype=float), "auditions": pd.Series(dtype="int64")}
    )


@dataclass
class Behaviour:
    """What the stability and engagement figures need from some graders' events, reduced where the
    events were read (``behaviour_reduce``): no event row is kept. The behaviours of disjoint sets
    of graders combine (``behaviour_combine``) into exactly the campaign's: every figure is either a
    grader's own or a sum of counts, and time on unit keeps one value per opportunity for its median.

    stability : scale label -> {"tolerance": t, "per_grader": {grader: stability counts}}.
    opportunities : one row per (grader, unit) opportunity (``Opportunities``; a frame given here is
        wrapped): grader, seconds (active time on unit), auditions.
    by_grader : index grader: units, mean_seconds, median_seconds, mean_auditions.
    events : grader -> their unit events.
    """

    stability: dict[str, dict[str, Any]]
    opportunities: Opportunities
    by_grader: pd.DataFrame
    events: pd.Series
    client_ts_replaced: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.opportunities, pd.DataFrame):
            self.opportunities = Opportunities([self.opportunities])

    def without(self, graders: set[int]) -> Behaviour:
        """The behaviour of every grader but ``graders`` (the excluded)."""
        if not graders:
            return self
        return Behaviour(
            stability={
                label: {**part, "per_grader": {g: c for g, c in part["per_grader"].items() if g not in graders}}
                for label, part in self.stability.items()
            },
            opportunities=self.opportunities.without(graders),
            by_grader=self.by_grader[~self.by_grader.index.isin(graders)],
            events=self.events[~self.events.index.isin(graders)],
            client_ts_replaced=self.client_ts_replaced,
        )


def stability_reduce(value_events: pd.DataFrame, *, tolerance: float) -> dict[str, dict[str, Any]]:
    """Per scale, each grader's stability counts (``metrics.stability_counts``) from their value
    events (``selectors.value_events``): the ``stability`` of a Behaviour.

    On arrays, a scale at a time (``metrics.stability_counts_per_grader``): a text value is its
    category's code (equal texts, equal codes) and a number is parsed once per distinct text."""
    parts: dict[str, dict[str, Any]] = {}
    kinds = value_events["type"]
    texts = value_events["value"]
    if not isinstance(texts.dtype, pd.CategoricalDtype):
        texts = texts.astype(str).astype("category")
    categories, codes = texts.cat.categories, texts.cat.codes.to_numpy()
    columns = {c: value_events[c].to_numpy() for c in ("grader", "unit", "seq")}
    for kind, (label, numeric) in SCALES.items():
        rows = np.flatnonzero((kinds == kind).to_numpy())
        if not len(rows):
            continue
        values = _numbers(categories, codes[rows]) if numeric else codes[rows]
        scale_tolerance = tolerance if numeric else 0.0
        parts[label] = {
            "tolerance": scale_tolerance,
            "per_grader": m.stability_counts_per_grader(
                *(columns[c][rows] for c in ("grader", "unit", "seq")), values, tolerance=scale_tolerance
            ),
        }
    return parts


def _numbers(categories: pd.Index, codes: np.ndarray) -> np.ndarray:
    """The numbers of the texts ``categories[codes]``, parsed as ``astype(float)`` parses each
    event's text, but once per distinct text of the scale."""
    used = np.unique(codes)
    parsed = np.full(len(categories), np.nan)
    parsed[used] = pd.Series(categories[used], dtype=object).astype(float).to_numpy()
    return parsed[codes]


def behaviour_reduce(unit_events: pd.DataFrame, stability_parts: dict[str, dict[str, Any]]) -> Behaviour:
    """Some graders' Behaviour: their ``stability_reduce`` and their unit events (columns grader,
    unit, ts, type of ``selectors.unit_events_frame``). Each grader's events must all be here: time
    on unit follows a grader from one event to their next, on whatever unit."""
    per = m.engagement(unit_events) if not unit_events.empty else None  # it reads grader, unit, ts, type
    if per is None or per.empty:
        opportunities = _empty_opportunities()
        by_grader = pd.DataFrame(columns=["units", "mean_seconds", "median_seconds", "mean_auditions"])
    else:
        opportunities = pd.DataFrame(
            {
                "grader": per.index.get_level_values("grader").to_numpy(),
                "seconds": per["seconds"].to_numpy(),
                "auditions": per["auditions"].to_numpy(),
            }
        )
        by_grader = per.groupby(level="grader").agg(
            units=("seconds", "size"),
            mean_seconds=("seconds", "mean"),
            median_seconds=("seconds", "median"),
            mean_auditions=("auditions", "mean"),
        )
    return Behaviour(
        stability=stability_parts,
        opportunities=opportunities,
        by_grader=by_grader,
        events=unit_events.groupby("grader").size(),
        client_ts_replaced=int(unit_events.attrs.get("client_ts_replaced", 0)),
    )


def behaviour_combine(parts: list[Behaviour]) -> Behaviour:
    """The behaviour of the union of the parts' graders (disjoint sets, given in ascending order of
    their graders, so that every row comes in the order one reading of all the events gives)."""
    if len(parts) == 1:
        return parts[0]
    stability_parts: dict[str, dict[str, Any]] = {}
    for part in parts:
        for label, scale in part.stability.items():
            into = stability_parts.setdefault(label, {"tolerance": scale["tolerance"], "per_grader": {}})
            into["per_grader"].update(scale["per_grader"])
    return Behaviour(
        stability=stability_parts,
        opportunities=Opportunities(
            [s for p in parts for s in p.opportunities.sources],
            frozenset().union(*(p.opportunities.excluded for p in parts)),
        ),
        by_grader=_concat([p.by_grader for p in parts]),
        events=_concat([p.events for p in parts]),
        client_ts_replaced=sum(p.client_ts_replaced for p in parts),
    )


def _concat(frames: list[Any], **kwargs: Any) -> Any:
    """Concatenated, leaving out empty parts (an empty part's columns may have no dtype)."""
    kept = [f for f in frames if len(f)] or frames[:1]
    return pd.concat(kept, **kwargs) if len(kept) > 1 else kept[0]


def stability(behaviour: Behaviour) -> dict[str, Any]:
    """Changes, reverts and repeats per scale (overall and per grader); time and auditions per unit."""
    scales: dict[str, Any] = {}
    for label, _numeric in SCALES.values():
        part = behaviour.stability.get(label)
        if not part or not part["per_grader"]:
            continue
        counts = dict(sorted(part["per_grader"].items()))
        per_grader = pd.DataFrame.from_dict({g: m.stability_summary(c) for g, c in counts.items()}, orient="index")
        per_grader.index.name = "grader"
        scales[label] = {
            "tolerance": part["tolerance"],
            "overall": m.stability_summary(reduce(m.stability_counts_add, counts.values())),
            "per_grader": per_grader.reset_index().to_dict("records"),
        }
    return {"scales": scales, "engagement": engagement(behaviour)}


def engagement(behaviour: Behaviour) -> dict[str, Any]:
    if behaviour.opportunities.empty:
        return {"overall": None, "per_grader": []}
    return {
        "overall": _engagement_overall(behaviour.opportunities),
        "per_grader": behaviour.by_grader.reset_index().to_dict("records"),
    }
