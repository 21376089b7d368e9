"""The graders and queries sections read a slice of whole units at a time (``Judgments.chunks``).

Through the shards' parts (``StoredJudgments``) they equal the sections on the one combined frame
cut in the same slices, to the last bit, for every scheme and on awkward judgments: values missing
or outside the scale, units of one judgment, units without a query, a grader without categories, a
grader who starts half-way through, an excluded grader. Against one pass over every judgment (the
pandas way, ``_pandas_graders`` and ``_pandas_queries``), every count and share is the same to the
last bit; a grader's score_mean, score_std and mean_abs_deviation are sums taken slice by slice,
the same to 1e-9 relative across several slices (in practice the last bits differ, if any) and to
the last bit when the grader's scores are in one slice."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis import selectors
from analysis.services import values
from analysis.services.judgments import FrameJudgments, StoredJudgments
from analysis.services.sections.behaviour import Behaviour, behaviour_combine
from analysis.services.sections.graders_queries import graders, queries
from analysis.services.shards import (
    ShardPart,
    part_dumps,
    part_loads,
    shard_compute,
    shard_plan,
)
from analysis.services.values import ValueSpec, categorical_long, numeric_long, value_spec, with_values
from grading.models import Assignment, Campaign
from grading.models.choices import Scheme
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, record

SCHEMES: dict[str, tuple[str, dict[str, Any]]] = {
    "broad_fine": (Scheme.BROAD_FINE, {}),
    "numeric": (Scheme.NUMERIC, {"min": 0, "max": 10, "step": 1}),  # its scale points are categories too
    "numeric_wide": (Scheme.NUMERIC, {"min": 0, "max": 100, "step": 0.1}),  # numbers only
    "ordered": (Scheme.CATEGORICAL, {"labels": ["bad", "ok", "good"], "ordered": True}),
    "unordered": (Scheme.CATEGORICAL, {"labels": ["cat", "dog", "bird", "fish"], "ordered": False}),
    "pairwise": (Scheme.PAIRWISE, {}),
}
GRADERS = [3, 5, 8, 9, 12, 20]
SPANS = [(None, 8), (8, 12), (12, None)]  # three parts of consecutive graders, as shard_plan cuts them
EXCLUDED = {5}
PSEUDONYMS = {3: "ann", 8: "bob"}
LABELS = {100: "first query"}
ROWS = 23  # judgments per slice when the tests cut small slices
SUMS = {"score_mean", "score_std", "mean_abs_deviation"}  # sums per grader taken slice by slice
NO_BEHAVIOUR = Behaviour(
    stability={}, opportunities=pd.DataFrame(), by_grader=pd.DataFrame(), events=pd.Series(dtype="int64")
)


def _spec(name: str) -> ValueSpec:
    scheme, params = SCHEMES[name]
    return value_spec(Campaign(scheme=scheme, scheme_params=params))


def _answers(spec: ValueSpec, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """The scheme's answer columns, some missing and some outside the scale."""
    if spec.scheme == Scheme.BROAD_FINE:
        broad = np.array(["NS", "SS", "VS", None, "XX"], dtype=object)
        out = {"broad": rng.choice(broad, n, p=[0.3, 0.3, 0.3, 0.05, 0.05]), "fine": np.round(rng.uniform(0, 10, n), 1)}
    elif spec.scheme == Scheme.NUMERIC and not spec.has_categories:
        out = {"score": np.round(rng.uniform(0, 100, n), 1)}
    elif spec.scheme == Scheme.NUMERIC:
        out = {"score": np.where(rng.random(n) < 0.05, 2.5, rng.integers(0, 11, n).astype(float))}  # 2.5: no point
    else:
        out = {spec.cat_column: rng.choice(np.array([*spec.categories, None, "other"], dtype=object), n)}
    for column in out.values():
        if column.dtype == float:
            column[rng.random(n) < 0.1] = np.nan
    return out


def _judgments(spec: ValueSpec, seed: int, n_units: int = 150) -> pd.DataFrame:
    """Judgments as ``selectors.judgments_frame`` gives them, in (unit, grader) order, before ``with_values``."""
    rng = np.random.default_rng(seed)
    rows = []
    for unit in range(n_units):
        pool = GRADERS if unit >= n_units // 2 else GRADERS[:-1]  # grader 20 starts half-way through
        rows += [(unit, int(g)) for g in sorted(rng.choice(pool, size=int(rng.integers(1, 6)), replace=False))]
    unit, grader = np.array(rows).T
    query = (unit // 9 + 100).astype(float)
    query[(unit >= 50) & (unit < 54)] = np.nan  # units without a query
    frame = pd.DataFrame({"unit": unit, "grader": grader, "query": query, **_answers(spec, rng, unit.size)})
    if spec.scheme == Scheme.BROAD_FINE:
        frame.loc[frame["grader"] == 12, ["broad", "fine"]] = [None, 7.5]  # numbers only, all alike
    elif spec.scheme != Scheme.NUMERIC:
        frame.loc[frame["grader"] == 12, spec.cat_column] = None  # no answer at all
    return frame


def _parts(frame: pd.DataFrame, spans: list[tuple[int | None, int | None]] = SPANS) -> list[bytes]:
    """The frame cut into the shards' parts of these spans of graders, as they travel (bytes)."""
    blobs = []
    for lo, hi in spans:
        grader = frame["grader"]
        kept = (grader >= (lo if lo is not None else -math.inf)) & (grader < (hi if hi is not None else math.inf))
        part = ShardPart(span=(lo, hi), judgments=frame[kept].reset_index(drop=True), behaviour=NO_BEHAVIOUR)
        blobs.append(part_dumps(part))
    return blobs


def _stored(blobs: list[bytes], spec: ValueSpec, excluded: set[int] = EXCLUDED) -> StoredJudgments:
    """What the combining step will pass the sections: the parts' judgments, read a slice at a time."""
    return StoredJudgments([part_loads(b, judgments=False) for b in blobs], spec, excluded=excluded)


def _combined(blobs: list[bytes], spec: ValueSpec, excluded: set[int] = EXCLUDED) -> pd.DataFrame:
    """The parts' judgments as one frame, as one reading of every grader gives them: concatenated in
    the order of the parts, then put in unit order by a stable sort (each unit's rows by grader)."""
    whole = pd.concat([part_loads(b).judgments for b in blobs], ignore_index=True)
    whole = whole.iloc[np.argsort(whole["unit"].to_numpy(), kind="stable")].reset_index(drop=True)
    return selectors.without_graders(with_values(whole, spec, copy=False), excluded)


def _units(frame: pd.DataFrame) -> pd.DataFrame:
    """A units frame as the agreement section gives it, for the queries' mean_std and mean_entropy."""
    units = frame.groupby("unit").agg(query=("query", "first"), n=("unit", "size"), std=("num", "std"))
    return units.assign(entropy=units["std"] / 2).reset_index()


def _cut_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of about ``ROWS`` judgments, in a frame (``values.unit_chunks``) and in the parts alike."""
    monkeypatch.setattr(values, "CHUNK_ROWS", ROWS)  # read when the slices are cut, by both


def _compare(got: list[dict], expected: list[dict], *, rel: float = 0.0) -> None:
    """Equal rows: every value to the last bit (NaN equal to NaN), but the ``SUMS`` to ``rel``."""
    assert [list(r) for r in got] == [list(r) for r in expected]
    for row, want in zip(got, expected, strict=True):
        for key, x in row.items():
            y = want[key]
            if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
                continue
            if key in SUMS and rel:
                assert math.isclose(x, y, rel_tol=rel), (key, row, want)
            else:
                assert x == y and type(x) is type(y), (key, row, want)


def _pandas_graders(frame: pd.DataFrame, spec: ValueSpec, pseudonyms: dict[int, str] = PSEUDONYMS) -> list[dict]:
    """The graders section the plain pandas way: long frames and groupbys over every judgment."""
    table = frame.groupby("grader").agg(judgments=("unit", "size"))
    if spec.has_categories:
        cat = categorical_long(frame, spec)
        usage = m.count_table(cat["grader"], cat["value"], spec.categories)
        usage.columns = [f"usage_{c}" for c in spec.categories]
        codes = pd.Index(spec.categories).get_indexer(cat["value"])
        unit_codes, _ = pd.factorize(cat["unit"])
        counts = np.zeros((unit_codes.max() + 1, len(spec.categories)))
        np.add.at(counts, (unit_codes, codes), 1)
        others = counts[unit_codes]
        others[np.arange(len(codes)), codes] -= 1
        top = others.max(axis=1)
        counted = ((others == top[:, None]).sum(axis=1) == 1) & (top > 0)
        agree = counted & (others[np.arange(len(codes)), codes] == top)
        sums = pd.DataFrame({"grader": cat["grader"], "counted": counted, "agree": agree}).groupby("grader").sum()
        share = (sums["agree"] / sums["counted"].where(sums["counted"] > 0)).rename("agreement_with_majority")
        table = table.join(usage).join(share)
    if spec.has_numbers:
        num = numeric_long(frame)
        table = table.join(num.groupby("grader")["value"].agg(score_mean="mean", score_std="std"))
        groups = num.groupby("unit")["value"]
        total, size = groups.transform("sum"), groups.transform("size")
        dev = (num["value"] - (total - num["value"]) / (size - 1).where(size > 1)).abs()
        table = table.join(dev.groupby(num["grader"]).mean().rename("mean_abs_deviation"))
    table = table.reset_index()
    table.insert(1, "pseudonym", table["grader"].map(lambda g: pseudonyms.get(g, f"grader-{g}")))
    return table.sort_values("pseudonym").to_dict("records")


def _pandas_queries(
    frame: pd.DataFrame, spec: ValueSpec, units: pd.DataFrame, labels: dict[int, str] = LABELS
) -> list[dict]:
    """The queries section the plain pandas way."""
    frame = frame[frame["query"].notna()]
    table = frame.groupby("query").agg(units=("unit", "nunique"), judgments=("unit", "size"))
    if spec.has_categories:
        cat = categorical_long(frame, spec)
        counts, unit_index, _ = m.long_to_counts(cat[["unit", "grader", "value"]], spec.categories)
        query_of = cat.drop_duplicates("unit").set_index("unit")["query"].reindex(unit_index)
        tally = m.count_table(query_of.to_numpy(), m.pattern_kinds(counts), ["full", "partial", "none"])
        rated = tally.sum(axis=1)
        tally["disagreement_pct"] = 100.0 * (tally["partial"] + tally["none"]) / rated.where(rated > 0)
        table = table.join(tally)
    rated_units = units[units["n"] >= 2]
    table = table.join(rated_units.groupby("query")[["std", "entropy"]].mean().add_prefix("mean_")).reset_index()
    table.insert(1, "label", table["query"].map(lambda q: labels.get(int(q), str(q))))
    return table.to_dict("records")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_parts_give_the_sections_of_the_one_frame(scheme, small, seed, monkeypatch):
    spec = _spec(scheme)
    blobs = _parts(_judgments(spec, seed))
    if small:
        _cut_small(monkeypatch)
    stored, frame = _stored(blobs, spec), _combined(blobs, spec)
    sizes = [len(c) for c in stored.chunks()]
    assert sizes == [len(c) for c in FrameJudgments(frame, spec).chunks()]
    assert (len(sizes) > 5) == small
    units = _units(frame)
    _compare(graders(stored, spec, NO_BEHAVIOUR, PSEUDONYMS), graders(frame, spec, NO_BEHAVIOUR, PSEUDONYMS))
    _compare(queries(stored, spec, units, LABELS), queries(frame, spec, units, LABELS))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_slices_give_the_figures_of_one_pass_over_every_judgment(scheme, monkeypatch):
    spec = _spec(scheme)
    blobs = _parts(_judgments(spec, 3))
    frame = _combined(blobs, spec)
    units = _units(frame)
    expected_graders, expected_queries = _pandas_graders(frame, spec), _pandas_queries(frame, spec, units)
    _compare(graders(frame, spec, NO_BEHAVIOUR, PSEUDONYMS), expected_graders)  # one slice: to the last bit
    _compare(queries(frame, spec, units, LABELS), expected_queries)
    _cut_small(monkeypatch)
    stored = _stored(blobs, spec)
    _compare(graders(stored, spec, NO_BEHAVIOUR, PSEUDONYMS), expected_graders, rel=1e-9)
    _compare(queries(stored, spec, units, LABELS), expected_queries)


def test_rows_out_of_order_are_read_as_one_slice(monkeypatch):
    spec = _spec("broad_fine")
    blobs = _parts(_judgments(spec, 4))
    shuffled = _combined(blobs, spec).sample(frac=1, random_state=5).reset_index(drop=True)
    units = _units(shuffled)
    _cut_small(monkeypatch)
    assert len(list(FrameJudgments(shuffled, spec).chunks())) == 1
    stored = _stored(blobs, spec)
    _compare(graders(shuffled, spec, NO_BEHAVIOUR, PSEUDONYMS), _pandas_graders(shuffled, spec))
    # The sums of the sorted rows, slice by slice, against those of the shuffled rows in one pass:
    _compare(graders(stored, spec, NO_BEHAVIOUR, PSEUDONYMS), _pandas_graders(shuffled, spec), rel=1e-9)
    _compare(queries(stored, spec, units, LABELS), _pandas_queries(shuffled, spec, units))


def test_no_judgment_gives_no_grader_and_no_query_gives_no_row():
    spec = _spec("broad_fine")
    frame = _judgments(spec, 5)
    empty = _stored(_parts(frame.iloc[:0], [(None, None)]), spec)
    assert len(empty) == 0
    assert graders(empty, spec, NO_BEHAVIOUR, {}) == [] and queries(empty, spec, pd.DataFrame(), {}) == []
    assert queries(_stored(_parts(frame.assign(query=np.nan)), spec), spec, pd.DataFrame(), {}) == []


def test_a_frame_without_the_value_columns_is_refused():
    spec = _spec("broad_fine")
    with pytest.raises(ValueError, match="lacks the value column"):
        graders(_judgments(spec, 6), spec, NO_BEHAVIOUR, {})


def _judge_scores(campaign: Campaign, *, seed: int) -> None:
    """A score for most assignments (some units left unjudged by a grader)."""
    rng = random.Random(seed)
    for i, a in enumerate(Assignment.objects.filter(campaign=campaign).select_related("grader").order_by("pk")):
        if i % 7 != 3:
            record(a.grader, campaign, "score_set", {"value": rng.randint(0, 10)}, unit=a.unit, seq=1)


@pytest.mark.django_db
@pytest.mark.both_backends
@pytest.mark.parametrize("scheme", ["broad_fine", "numeric"])
@pytest.mark.parametrize("small", [False, True])
def test_a_campaigns_shards_give_the_sections_of_its_one_frame(scheme, small, monkeypatch):
    kind, params = SCHEMES[scheme]
    campaign = make_campaign(
        scheme=kind, scheme_params=params or None, n_queries=4, n_candidates=5, graders=6, overlap=4
    )
    judge_broad_fine(campaign, seed=11) if kind == Scheme.BROAD_FINE else _judge_scores(campaign, seed=11)
    spec = value_spec(campaign)
    excluded = {
        Assignment.objects.filter(campaign=campaign).order_by("grader_id").values_list("grader_id", flat=True)[0]
    }
    plan = shard_plan(campaign_id=campaign.pk, per_shard=7)
    assert len(plan) > 1
    blobs = [
        part_dumps(shard_compute(campaign_id=campaign.pk, span=span, excluded=excluded, tolerance=0.5)) for span in plan
    ]
    if small:
        _cut_small(monkeypatch)
    parts = [part_loads(b, judgments=False) for b in blobs]
    behaviour = behaviour_combine([p.behaviour for p in parts])
    stored, frame = StoredJudgments(parts, spec), _combined(blobs, spec, excluded=set())
    assert (len(list(stored.chunks())) > 1) == small
    pseudonyms, labels = (
        selectors.grader_pseudonyms(campaign_id=campaign.pk),
        selectors.query_labels(campaign_id=campaign.pk),
    )
    got = graders(stored, spec, behaviour, pseudonyms)
    assert len(got) == 5 and all(r["events"] > 0 for r in got)
    _compare(got, graders(frame, spec, behaviour, pseudonyms))
    units = _units(frame)
    _compare(queries(stored, spec, units, labels), queries(frame, spec, units, labels))


def _pandas_deviation(units, values):
    series = pd.Series(values)
    groups = series.groupby(units)
    others = groups.transform("sum") - series
    size = groups.transform("size")
    return (series - others / (size - 1).where(size > 1)).abs().to_numpy()


@pytest.mark.parametrize("seed", range(6))
def test_deviation_from_others_by_runs_of_units_equals_pandas_groupby(seed):
    """Rows in unit order (a slice's) are summed per unit by their runs, as pandas' groupby sums
    them (compensated, in row order): the deviations are the groupby's to the last bit, on values
    whose plain sums would round differently; rows out of order go through the groupby itself."""
    from analysis.services.sections.graders_queries import _deviation_from_others

    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 8, 2000)
    units = np.repeat(np.sort(rng.choice(10**6, counts.size, replace=False)), counts)
    scale = [1.0, 1e-7, 1e7, 1e15][seed % 4]
    values = np.round(rng.uniform(0, 10, units.size), seed % 3) * scale + rng.uniform(0, 1, units.size) * (seed > 3)
    assert np.array_equal(_deviation_from_others(units, values), _pandas_deviation(units, values), equal_nan=True)
    shuffled = rng.permutation(units.size)
    units, values = units[shuffled], values[shuffled]
    assert np.array_equal(_deviation_from_others(units, values), _pandas_deviation(units, values), equal_nan=True)
