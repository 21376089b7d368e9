"""The graders and queries sections, taken from the judgments' columns, against the plain pandas
way of computing them (long frames and groupbys, as the sections once did), on awkward data:
judgments without a category or a number, a grader with numbers only, a unit without a query,
rows not in unit order.

Each frame here is one slice of whole units (``values.unit_chunks``), so every figure, the sums per
grader included, is the same to the last bit. Across several slices the per-grader score_mean,
score_std and mean_abs_deviation are sums taken slice by slice, the same to 1e-9 relative:
tests/analysis/test_graders_queries_chunks.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis.services.sections.behaviour import Behaviour, graders, queries
from analysis.services.values import ValueSpec, categorical_long, numeric_long, with_values
from grading.models.choices import Scheme

SPEC = ValueSpec(Scheme.BROAD_FINE, "broad", ["NS", "SS", "VS"], {"VS": "S", "SS": "S"}, "fine", "FINE", "interval")
NO_BEHAVIOUR = Behaviour(stability={}, opportunities=pd.DataFrame(), by_grader=pd.DataFrame(), events=pd.Series())


def _judgments(seed: int, *, sort: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(u, g) for u in range(40) for g in rng.choice([3, 5, 8, 9, 12], size=rng.integers(1, 6), replace=False)]
    unit, grader = np.array(rows).T
    broad = rng.choice(np.array(["NS", "SS", "VS", None], dtype=object), size=unit.size, p=[0.3, 0.3, 0.3, 0.1])
    broad[grader == 12] = None  # a grader with numbers only
    fine = np.round(rng.uniform(0, 10, unit.size), 1)
    fine[rng.random(unit.size) < 0.1] = np.nan
    query = (unit // 7 + 100).astype(float)
    query[unit == 39] = np.nan  # a unit without a query
    frame = pd.DataFrame({"unit": unit, "grader": grader, "query": query, "broad": broad, "fine": fine})
    frame = frame.sort_values(["unit", "grader"], ignore_index=True) if sort else frame.sample(frac=1, random_state=1)
    return with_values(frame.reset_index(drop=True), SPEC)


def _graders_reference(frame: pd.DataFrame) -> list[dict]:
    table = frame.groupby("grader").agg(judgments=("unit", "size"))
    cat = categorical_long(frame, SPEC)
    usage = m.count_table(cat["grader"], cat["value"], SPEC.categories)
    usage.columns = [f"usage_{c}" for c in SPEC.categories]
    codes = pd.Index(SPEC.categories).get_indexer(cat["value"])
    unit_codes, _ = pd.factorize(cat["unit"])
    counts = np.zeros((unit_codes.max() + 1, len(SPEC.categories)))
    np.add.at(counts, (unit_codes, codes), 1)
    others = counts[unit_codes]
    others[np.arange(len(codes)), codes] -= 1
    top = others.max(axis=1)
    counted = ((others == top[:, None]).sum(axis=1) == 1) & (top > 0)
    agree = counted & (others[np.arange(len(codes)), codes] == top)
    sums = pd.DataFrame({"grader": cat["grader"], "counted": counted, "agree": agree}).groupby("grader").sum()
    share = (sums["agree"] / sums["counted"].where(sums["counted"] > 0)).rename("agreement_with_majority")
    table = table.join(usage).join(share)
    num = numeric_long(frame)
    table = table.join(num.groupby("grader")["value"].agg(score_mean="mean", score_std="std"))
    groups = num.groupby("unit")["value"]
    total, size = groups.transform("sum"), groups.transform("size")
    dev = (num["value"] - (total - num["value"]) / (size - 1).where(size > 1)).abs()
    table = table.join(dev.groupby(num["grader"]).mean().rename("mean_abs_deviation")).reset_index()
    table.insert(1, "pseudonym", table["grader"].map(lambda g: f"grader-{g}"))
    return table.sort_values("pseudonym").to_dict("records")


def _queries_reference(frame: pd.DataFrame, units: pd.DataFrame) -> list[dict]:
    frame = frame[frame["query"].notna()]
    table = frame.groupby("query").agg(units=("unit", "nunique"), judgments=("unit", "size"))
    cat = categorical_long(frame, SPEC)
    counts, unit_index, _ = m.long_to_counts(cat[["unit", "grader", "value"]], SPEC.categories)
    query_of = cat.drop_duplicates("unit").set_index("unit")["query"].reindex(unit_index)
    tally = m.count_table(query_of.to_numpy(), m.pattern_kinds(counts), ["full", "partial", "none"])
    rated = tally.sum(axis=1)
    tally["disagreement_pct"] = 100.0 * (tally["partial"] + tally["none"]) / rated.where(rated > 0)
    rated_units = units[units["n"] >= 2]
    table = table.join(tally).join(rated_units.groupby("query")[["std", "entropy"]].mean().add_prefix("mean_"))
    table = table.reset_index()
    table.insert(1, "label", table["query"].map(lambda q: f"q{int(q)}"))
    return table.to_dict("records")


def _same(a: list[dict], b: list[dict]) -> bool:
    def equal(x, y):
        return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))

    if len(a) != len(b):
        return False
    return all(ra.keys() == rb.keys() and all(equal(ra[k], rb[k]) for k in ra) for ra, rb in zip(a, b, strict=True))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("sort", [True, False])
def test_graders_section_equals_the_pandas_way(seed, sort):
    frame = _judgments(seed, sort=sort)
    assert _same(graders(frame, SPEC, NO_BEHAVIOUR, {}), _graders_reference(frame))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("sort", [True, False])
def test_queries_section_equals_the_pandas_way(seed, sort):
    frame = _judgments(seed, sort=sort)
    units = frame.groupby("unit").agg(query=("query", "first"), n=("unit", "size"), std=("fine", "std"))
    units = units.assign(entropy=units["std"] / 2).reset_index()
    labels = {q: f"q{q}" for q in range(100, 106)}
    assert _same(queries(frame, SPEC, units, labels), _queries_reference(frame, units))


@pytest.mark.parametrize(
    ("values", "categories"),
    [
        (np.array(["SS", None, "VS", "XX", "NS", "SS"], dtype=object), ["NS", "SS", "VS"]),
        (np.array([0.0, 2.5, np.nan, 10.0, 3.0]), [float(i) for i in range(11)]),
        (np.array([f"l{i % 150}" for i in range(400)] + [None], dtype=object), [f"l{i}" for i in range(140)]),
        (np.array([], dtype=object), ["a", "b"]),
    ],
)
def test_category_positions_are_the_positions_get_indexer_gives(values, categories):
    codes = m.category_positions(values, categories)
    assert codes.tolist() == pd.Index(categories).get_indexer(values).tolist()
