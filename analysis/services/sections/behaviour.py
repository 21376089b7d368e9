"""Report sections about people and queries: stability, engagement, graders, per-query disagreement."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.metrics.patterns import KINDS
from analysis.services.judgments import Judgments, judgments_of
from analysis.services.values import ValueSpec, places, sorted_unit_codes, valued

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
        values = column.to_numpy(dtype=float)  # auditions: the floats pandas' median takes
        del column
        out[f"median_{name}"] = float(column_median(values))
    return {key: out[key] for key in ("mean_seconds", "median_seconds", "mean_auditions", "median_auditions")}


def column_median(values: np.ndarray) -> float:
    """``pd.Series(values).median()``, reordering ``values`` in place instead of copying them
    (pandas' median is numpy's of the values that are not missing)."""
    if values.size == 0:
        return float("nan")
    if np.isnan(values).any():
        return float(pd.Series(values).median())
    return float(np.median(values, overwrite_input=True))


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


def _judgments(judgments: pd.DataFrame | Judgments, spec: ValueSpec) -> Judgments:
    """``judgments`` as ``Judgments``: a frame is first checked to carry the value columns (``values.valued``)."""
    return judgments_of(valued(judgments, spec) if isinstance(judgments, pd.DataFrame) else judgments, spec)


def _value_columns(spec: ValueSpec) -> list[str]:
    """The value columns ``spec`` derives: every slice is made with them (``values.with_values``),
    so a slice asked for without them fails on the columns they are derived from."""
    return [c for c, wanted in (("place", spec.has_categories), ("num", spec.has_numbers)) if wanted]


def _sorted_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` by hashing rather than sorting every value: the
    graders are few and their judgments many."""
    codes, uniques = pd.factorize(values, sort=True)
    return np.asarray(uniques), codes


def _stacked(slices: list[pd.DataFrame]) -> pd.DataFrame:
    """The slices' rows (each slice's indexed by its few graders or queries) in one frame: the
    campaign's counts and sums per id are their sums (``groupby(level=0).sum()``, ids sorted)."""
    return pd.concat(slices) if len(slices) > 1 else slices[0]


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
        np.bincount(graders, weights=counted, minlength=n_graders).astype(np.int64),
        np.bincount(graders, weights=agree, minlength=n_graders).astype(np.int64),
    )


def _deviation_from_others(units: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each score's |score − mean of the other graders' scores of the unit| (NaN for a unit's only
    score)."""
    value = pd.Series(values)
    groups = value.groupby(units)
    others = groups.transform("sum") - value
    size = groups.transform("size")
    others /= (size - 1).where(size > 1)
    return (value - others).abs().to_numpy()


def _category_counts(
    units: np.ndarray, codes: np.ndarray, graders: np.ndarray, n: int, categories: list[Any]
) -> dict[str, np.ndarray]:
    """Per grader (``graders`` are 0..n-1) of a slice: their judgments in each category (usage_*),
    and how many met a unique majority of the others (counted) and equal it (agree). ``codes``:
    each judgment's place in the scale (``values.places``)."""
    k = len(categories)
    rated = codes >= 0
    g, c = graders[rated], codes[rated]
    usage = np.bincount(g * k + c, minlength=n * k).reshape(n, k)
    counted, agree = _agreement_with_majority(units[rated], c, g, n, k)
    return {**{f"usage_{cat}": usage[:, i] for i, cat in enumerate(categories)}, "counted": counted, "agree": agree}


def _score_sums(units: np.ndarray, values: np.ndarray, graders: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Per grader (``graders`` are 0..n-1) of a slice: how many scores, their sum and variance, as
    pandas takes them (a compensated sum and Welford's variance, in row order), and the number and
    sum of their deviations from the others' mean (``_deviation_from_others``)."""
    has = ~np.isnan(values)
    g, v = graders[has], values[has]
    scores = pd.Series(v).groupby(g).agg(["count", "sum", "var"]).reindex(range(n))
    devs = pd.Series(_deviation_from_others(units[has], v)).groupby(g).agg(["count", "sum"]).reindex(range(n))
    return {
        "score_n": scores["count"].fillna(0).to_numpy(dtype=np.int64),
        "score_sum": scores["sum"].fillna(0.0).to_numpy(),
        "score_var": scores["var"].to_numpy(),
        "dev_n": devs["count"].fillna(0).to_numpy(dtype=np.int64),
        "dev_sum": devs["sum"].fillna(0.0).to_numpy(),
    }


def _grader_slice(chunk: pd.DataFrame, spec: ValueSpec) -> pd.DataFrame:
    """A slice's counts and sums per grader, indexed by its graders (sorted): judgments, and those
    of ``_category_counts`` and ``_score_sums``. The slice holds whole units, so the others'
    judgments of a unit are all in it."""
    ids, codes = _sorted_codes(chunk["grader"].to_numpy())
    units = chunk["unit"].to_numpy()
    sums: dict[str, np.ndarray] = {"judgments": np.bincount(codes, minlength=ids.size)}
    if spec.has_categories:
        sums |= _category_counts(units, places(chunk, spec), codes, ids.size, spec.categories)
    if spec.has_numbers:
        sums |= _score_sums(units, chunk["num"].to_numpy(dtype=float), codes, ids.size)
    return pd.DataFrame(sums, index=pd.Index(ids, name="grader"))


def _score_variance(slices: pd.DataFrame, mean: pd.Series, n: pd.Series) -> pd.Series:
    """Per grader: the variance (ddof 1) of their scores from each slice's count, sum and variance:
    the slices' sums of squared deviations plus each slice mean's squared distance from the
    grader's mean, per score (Chan, Golub & LeVeque's pairwise update, all slices at once).

    A grader whose scores are all in one slice keeps that slice's variance, pandas' own to the last
    bit; across slices it differs from Welford's in row order in the last bits only."""
    k = slices["score_n"]
    own = slices["score_var"].fillna(0.0) * (k - 1).clip(lower=0)
    apart = (k * (slices["score_sum"] / k - mean.reindex(slices.index)) ** 2).fillna(0.0)
    merged = (own + apart).groupby(level=0).sum() / (n - 1).where(n > 1)
    one_slice = (k > 0).groupby(level=0).sum() == 1
    return merged.where(~one_slice, slices["score_var"].groupby(level=0).first())


def _score_habits(slices: pd.DataFrame, totals: pd.DataFrame) -> pd.DataFrame:
    """Per grader with a score: score_mean, score_std and mean_abs_deviation from the per-slice
    rows of ``_score_sums`` (``slices``) and their sums (``totals``).

    A grader's sums are each slice's compensated sum added up, pandas' own figure when the grader's
    scores are all in one slice (a campaign under ``values.CHUNK_ROWS`` judgments) and the same to
    within a few units in the last place otherwise (pandas sums all of a grader's scores in one
    compensated pass)."""
    n = totals["score_n"]
    mean = totals["score_sum"] / n
    habits = pd.DataFrame(
        {
            "score_mean": mean,
            "score_std": np.sqrt(_score_variance(slices, mean, n)),
            "mean_abs_deviation": totals["dev_sum"] / totals["dev_n"].where(totals["dev_n"] > 0),
        }
    )
    return habits[(n > 0).to_numpy()]


def _category_habits(totals: pd.DataFrame, categories: list[Any]) -> pd.DataFrame:
    """Per grader with a judgment in the scale: usage per category and agreement_with_majority."""
    usage = totals[[f"usage_{c}" for c in categories]]
    present = (usage.sum(axis=1) > 0).to_numpy()
    counted = totals["counted"][present]
    share = totals["agree"][present] / counted.where(counted > 0)
    return usage[present].join(share.rename("agreement_with_majority"))


def graders(
    judgments: pd.DataFrame | Judgments, spec: ValueSpec, behaviour: Behaviour, pseudonyms: dict[int, str]
) -> list[dict[str, Any]]:
    """One row per grader: judgments, category usage, agreement with the majority, score habits, time.

    Counted and summed a slice of whole units at a time (``Judgments.chunks``), per grader: what a
    grader's judgment is compared with (the unit's other judgments) is in the same slice."""
    J = _judgments(judgments, spec)
    slices = [_grader_slice(chunk, spec) for chunk in J.chunks(["unit", "grader", *_value_columns(spec)])]
    if not slices:
        return []
    every = _stacked(slices)  # one row per grader and slice
    totals = every.drop(columns=["score_var"], errors="ignore").groupby(level=0).sum()
    table = totals[["judgments"]]
    if spec.has_categories:
        table = table.join(_category_habits(totals, spec.categories))
    if spec.has_numbers:
        table = table.join(_score_habits(every, totals))
    if not behaviour.opportunities.empty:
        table = table.join(behaviour.by_grader["median_seconds"])
        table = table.join(behaviour.events.rename("events"))
    table = table.reset_index()
    table.insert(1, "pseudonym", table["grader"].map(lambda g: pseudonyms.get(int(g), f"grader-{g}")))
    return table.sort_values("pseudonym").to_dict("records")


def _query_sizes(query: np.ndarray, unit: np.ndarray) -> pd.DataFrame:
    """Per query (sorted) of a slice's judgments with a query: its units and judgments."""
    unit_codes, n_units = sorted_unit_codes(unit)
    query_of_unit = np.empty(n_units, dtype=query.dtype)
    query_of_unit[unit_codes] = query
    query_ids, of_unit = _sorted_codes(query_of_unit)
    per_unit = np.bincount(unit_codes, minlength=n_units)
    return pd.DataFrame(
        {
            "units": np.bincount(of_unit, minlength=query_ids.size),
            "judgments": np.bincount(of_unit, weights=per_unit, minlength=query_ids.size).astype(np.int64),
        },
        index=pd.Index(query_ids, name="query"),
    )


def _query_kinds(query: np.ndarray, unit: np.ndarray, codes: np.ndarray, k: int) -> pd.DataFrame | None:
    """Per query (sorted) of a slice's rated units (those with a judgment in the scale): how many
    are of each agreement kind (``metrics.pattern_kinds``; a unit of one such judgment is of none,
    but its query has a row). ``codes``: each judgment's place among the ``k`` categories
    (``values.places``). None: the slice has no such judgment."""
    rated = codes >= 0
    if not rated.any():
        return None
    rated_codes, n_rated = sorted_unit_codes(unit[rated])
    counts = np.bincount(rated_codes * k + codes[rated], minlength=n_rated * k).reshape(n_rated, k)
    rated_query = np.empty(n_rated, dtype=query.dtype)
    rated_query[rated_codes] = query[rated]
    # each rated unit's kind as its place in ["", *KINDS] (m.kind_codes), counted per query: what
    # m.count_table of pattern_kinds' strings counts, with no string per unit
    query_ids, of_unit = _sorted_codes(rated_query)
    width = len(KINDS) + 1
    table = np.bincount(of_unit * width + m.kind_codes(counts), minlength=query_ids.size * width)
    return pd.DataFrame(table.reshape(-1, width)[:, 1:], index=pd.Index(query_ids), columns=list(KINDS))


def queries(
    judgments: pd.DataFrame | Judgments, spec: ValueSpec, units: pd.DataFrame, labels: dict[int, str]
) -> list[dict[str, Any]]:
    """One row per query: units, judgments, agreement kinds and the share of units in disagreement.

    Counted a slice of whole units at a time (``Judgments.chunks``): a unit has one query, so each
    count per query is the sum of the slices'."""
    J = _judgments(judgments, spec)
    sizes, kinds = [], []
    for chunk in J.chunks(["unit", "query", *_value_columns(spec)]):
        query, unit = chunk["query"].to_numpy(), chunk["unit"].to_numpy()
        has = ~pd.isna(query)
        if not has.any():
            continue
        sizes.append(_query_sizes(query[has], unit[has]))
        if spec.has_categories:
            kinds.append(_query_kinds(query[has], unit[has], places(chunk, spec)[has], len(spec.categories)))
    if not sizes:
        return []
    table = _stacked(sizes).groupby(level=0).sum()
    kinds = [k for k in kinds if k is not None]
    if kinds:
        tally = _stacked(kinds).groupby(level=0).sum()
        rated_units = tally.sum(axis=1)
        tally["disagreement_pct"] = 100.0 * (tally["partial"] + tally["none"]) / rated_units.where(rated_units > 0)
        table = table.join(tally)
    if "std" in units and not units.empty:
        rated_units = units.loc[(units["n"] >= 2).to_numpy(), ["query", "std", "entropy"]]
        table = table.join(rated_units.groupby("query")[["std", "entropy"]].mean().add_prefix("mean_"))
    table = table.reset_index().rename(columns={"index": "query"})
    table.insert(1, "label", table["query"].map(lambda q: labels.get(int(q), str(q))))
    return table.to_dict("records")
