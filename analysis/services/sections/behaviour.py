"""Report sections about people and queries: stability, engagement, graders, per-query disagreement."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.services.values import ValueSpec, sorted_unit_codes, valued

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
        "overall": m.engagement_summary(behaviour.opportunities.frame(["seconds", "auditions"])),
        "per_grader": behaviour.by_grader.reset_index().to_dict("records"),
    }


def _sorted_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` by hashing rather than sorting every value: the
    graders are few and their judgments many."""
    codes, uniques = pd.factorize(values, sort=True)
    return np.asarray(uniques), codes


def _agreement_with_majority(
    units: np.ndarray, codes: np.ndarray, graders: np.ndarray, n_graders: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per grader (``graders`` are 0..n_graders-1): of their judgments, how many met a unique
    majority of the *other* graders' judgments of the unit (counted), and how many equal it (agree).

    Judgments whose unit has no unique majority among the others (or no other judgment) are not
    counted. ``codes`` are the judgments' categories 0..k-1. The others' counts of a category are
    the unit's count less the judgment's own, taken one category at a time: never a judgments × k
    table."""
    unit_codes, n_units = sorted_unit_codes(units)
    counts = np.bincount(unit_codes * np.int64(k) + codes, minlength=n_units * k).reshape(n_units, k).astype(np.int32)
    top = np.full(codes.size, -1, dtype=np.int32)  # the largest count among the others' categories
    ties = np.zeros(codes.size, dtype=np.int16)  # how many categories reach it
    for c in range(k):
        others = counts[unit_codes, c] - (codes == c)
        ties = np.where(others > top, 1, ties + (others == top))
        np.maximum(top, others, out=top)
        del others
    counted = (ties == 1) & (top > 0)
    agree = counted & (counts[unit_codes, codes] - 1 == top)
    return (
        np.bincount(graders, weights=counted, minlength=n_graders),
        np.bincount(graders, weights=agree, minlength=n_graders),
    )


def _deviation_from_others(units: np.ndarray, graders: np.ndarray, values: np.ndarray) -> pd.Series:
    """Per grader: mean |score − mean of the other graders' scores of the unit|."""
    value = pd.Series(values)
    groups = value.groupby(units)
    others = groups.transform("sum") - value  # each temporary goes once used: 80 MB each at 10^7
    size = groups.transform("size")
    del groups
    others /= (size - 1).where(size > 1)
    del size
    dev = (value - others).abs()
    del others
    return dev.groupby(graders).mean().rename("mean_abs_deviation").rename_axis("grader")


def graders(
    judgments: pd.DataFrame, spec: ValueSpec, behaviour: Behaviour, pseudonyms: dict[int, str]
) -> list[dict[str, Any]]:
    """One row per grader: judgments, category usage, agreement with the majority, score habits, time.

    Taken from the judgments' columns, never from copies of the whole frame (at 10^7 judgments each
    long frame is 320 MB)."""
    frame = valued(judgments, spec)
    if frame.empty:
        return []
    grader_ids, grader_codes = _sorted_codes(frame["grader"].to_numpy())
    table = pd.DataFrame({"judgments": np.bincount(grader_codes)}, index=pd.Index(grader_ids, name="grader"))
    if spec.has_categories:
        k = len(spec.categories)
        codes = m.category_positions(frame["cat"].to_numpy(), spec.categories)
        rated = codes >= 0
        every = bool(rated.all())  # as a rule: then the columns themselves, not copies
        g, c = (grader_codes, codes) if every else (grader_codes[rated], codes[rated])
        usage = np.bincount(g * k + c, minlength=grader_ids.size * k).reshape(grader_ids.size, k)
        present = np.bincount(g, minlength=grader_ids.size) > 0
        table = table.join(
            pd.DataFrame(
                usage[present],
                index=pd.Index(grader_ids[present], name="grader"),
                columns=[f"usage_{c}" for c in spec.categories],
            )
        )
        judged_units = frame["unit"].to_numpy() if every else frame["unit"].to_numpy()[rated]
        counted, agree = _agreement_with_majority(judged_units, c, g, grader_ids.size, k)
        del judged_units, codes, rated, g, c
        share = pd.Series(agree[present], index=grader_ids[present]) / pd.Series(
            counted[present], index=grader_ids[present]
        ).where(counted[present] > 0)
        table = table.join(share.rename("agreement_with_majority"))
    if spec.has_numbers:
        has = frame["num"].notna().to_numpy()
        every = bool(has.all())
        values = frame["num"].to_numpy(dtype=float)
        units, grader = frame["unit"].to_numpy(), frame["grader"].to_numpy()
        if not every:
            values, units, grader = values[has], units[has], grader[has]
        stats = pd.Series(values).groupby(grader).agg(["mean", "std"])
        stats.columns, stats.index.name = ["score_mean", "score_std"], "grader"
        table = table.join(stats).join(_deviation_from_others(units, grader, values))
    if not behaviour.opportunities.empty:
        table = table.join(behaviour.by_grader["median_seconds"])
        table = table.join(behaviour.events.rename("events"))
    table = table.reset_index()
    table.insert(1, "pseudonym", table["grader"].map(lambda g: pseudonyms.get(int(g), f"grader-{g}")))
    return table.sort_values("pseudonym").to_dict("records")


def queries(
    judgments: pd.DataFrame, spec: ValueSpec, units: pd.DataFrame, labels: dict[int, str]
) -> list[dict[str, Any]]:
    """One row per query: units, judgments, agreement kinds and the share of units in disagreement.

    Taken from the judgments' columns (a unit has one query), never from copies of the frame."""
    frame = valued(judgments, spec)
    query, unit = frame["query"].to_numpy(), frame["unit"].to_numpy()
    has = ~pd.isna(query)
    cat = frame["cat"].to_numpy() if spec.has_categories else None
    if not has.all():
        query, unit, cat = query[has], unit[has], None if cat is None else cat[has]
    if query.size == 0:
        return []
    unit_codes, n_units = sorted_unit_codes(unit)
    query_of_unit = np.empty(n_units, dtype=query.dtype)
    query_of_unit[unit_codes] = query
    query_ids, of_unit = _sorted_codes(query_of_unit)
    per_unit = np.bincount(unit_codes, minlength=n_units)
    del unit_codes
    table = pd.DataFrame(
        {
            "units": np.bincount(of_unit, minlength=query_ids.size),
            "judgments": np.bincount(of_unit, weights=per_unit, minlength=query_ids.size).astype(np.int64),
        },
        index=pd.Index(query_ids, name="query"),
    )
    if cat is not None:
        k = len(spec.categories)
        codes = m.category_positions(cat, spec.categories)
        rated = codes >= 0
        if rated.any():
            rated_codes, n_rated = sorted_unit_codes(unit[rated])
            counts = np.bincount(rated_codes * k + codes[rated], minlength=n_rated * k).reshape(n_rated, k)
            rated_query = np.empty(n_rated, dtype=query.dtype)
            rated_query[rated_codes] = query[rated]
            tally = m.count_table(rated_query, m.pattern_kinds(counts), ["full", "partial", "none"])
            rated_units = tally.sum(axis=1)
            tally["disagreement_pct"] = 100.0 * (tally["partial"] + tally["none"]) / rated_units.where(rated_units > 0)
            table = table.join(tally)
    if "std" in units and not units.empty:
        rated_units = units.loc[(units["n"] >= 2).to_numpy(), ["query", "std", "entropy"]]
        table = table.join(rated_units.groupby("query")[["std", "entropy"]].mean().add_prefix("mean_"))
    table = table.reset_index().rename(columns={"index": "query"})
    table.insert(1, "label", table["query"].map(lambda q: labels.get(int(q), str(q))))
    return table.to_dict("records")
