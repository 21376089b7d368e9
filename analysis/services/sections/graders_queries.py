"""The report's graders and queries sections, computed by the combining step a slice of whole units
at a time (``Judgments.chunks``).

Apart from ``sections.behaviour``, whose code makes the shards' parts and is in their fingerprint
(``services.reuse.PART_CODE``): a change here is taken up by the next run without reading every
shard again."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis.metrics.confusability import sums_in_order
from analysis.metrics.patterns import KINDS
from analysis.metrics.shapes import runs
from analysis.services.judgments import Judgments, judgments_of
from analysis.services.sections.behaviour import Behaviour
from analysis.services.slice_memo import SliceMemo, pieces
from analysis.services.values import ValueSpec, places, sorted_unit_codes, valued


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
    score).

    A slice's rows come by unit: each unit's sum is then taken over its run of rows as pandas'
    groupby sums it (compensated, in row order: ``confusability.sums_in_order``), the same to the
    last bit without hashing every unit id (0.4 s of the graders section at 10^7 judgments)."""
    if units.size and units.dtype.kind in "iu" and (units[1:] >= units[:-1]).all():
        starts, n = runs(units)
        group = np.repeat(np.arange(starts.size), n)
        others = sums_in_order(values, starts, n)[group] - values
        size = n[group]
        others /= np.where(size > 1, size - 1, np.nan)
        return np.abs(values - others)
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
    judgments: pd.DataFrame | Judgments,
    spec: ValueSpec,
    behaviour: Behaviour,
    pseudonyms: dict[int, str],
    memo: SliceMemo | None = None,
) -> list[dict[str, Any]]:
    """One row per grader: judgments, category usage, agreement with the majority, score habits, time.

    Counted and summed a slice of whole units at a time (``Judgments.chunks``), per grader: what a
    grader's judgment is compared with (the unit's other judgments) is in the same slice. A
    slice's sums are taken from ``memo`` where a run before summed the same rows."""
    J = _judgments(judgments, spec)
    columns = ["unit", "grader", *_value_columns(spec)]
    slices = [p for (p,) in pieces(J, memo, "graders", columns, lambda chunk: (_grader_slice(chunk, spec),))]
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


def _query_slice(chunk: pd.DataFrame, spec: ValueSpec) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """A slice's units and judgments per query (``_query_sizes``) and its rated units per query and
    kind (``_query_kinds``); None where it has none."""
    query, unit = chunk["query"].to_numpy(), chunk["unit"].to_numpy()
    has = ~pd.isna(query)
    if not has.any():
        return None, None
    sizes = _query_sizes(query[has], unit[has])
    if not spec.has_categories:
        return sizes, None
    return sizes, _query_kinds(query[has], unit[has], places(chunk, spec)[has], len(spec.categories))


def queries(
    judgments: pd.DataFrame | Judgments,
    spec: ValueSpec,
    units: pd.DataFrame,
    labels: dict[int, str],
    memo: SliceMemo | None = None,
) -> list[dict[str, Any]]:
    """One row per query: units, judgments, agreement kinds and the share of units in disagreement.

    Counted a slice of whole units at a time (``Judgments.chunks``): a unit has one query, so each
    count per query is the sum of the slices'. A slice's counts are taken from ``memo`` where a run
    before counted the same rows."""
    J = _judgments(judgments, spec)
    columns = ["unit", "query", *_value_columns(spec)]
    counted = pieces(J, memo, "queries", columns, lambda chunk: _query_slice(chunk, spec))
    sizes = [s for s, _ in counted if s is not None]
    if not sizes:
        return []
    table = _stacked(sizes).groupby(level=0).sum()
    kinds = [k for _, k in counted if k is not None]
    if kinds:
        tally = _stacked(kinds).groupby(level=0).sum()
        rated_units = tally.sum(axis=1)
        tally["disagreement_pct"] = 100.0 * (tally["partial"] + tally["none"]) / rated_units.where(rated_units > 0)
        table = table.join(tally)
    if "std" in units and not units.empty:
        twice = (units["n"] >= 2).to_numpy()  # the three columns as arrays, not taken through pandas' blocks
        rated_units = pd.DataFrame({c: units[c].to_numpy()[twice] for c in ("query", "std", "entropy")}, copy=False)
        table = table.join(rated_units.groupby("query")[["std", "entropy"]].mean().add_prefix("mean_"))
    table = table.reset_index().rename(columns={"index": "query"})
    table.insert(1, "label", table["query"].map(lambda q: labels.get(int(q), str(q))))
    return table.to_dict("records")
