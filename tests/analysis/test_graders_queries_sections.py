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
from analysis.services.sections.behaviour import Behaviour
from analysis.services.sections.graders_queries import graders, queries
from analysis.services.values import ValueSpec, with_values
from grading.models.choices import Scheme
from tests.analysis.test_graders_queries_chunks import _pandas_graders, _pandas_queries

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
    assert _same(graders(frame, SPEC, NO_BEHAVIOUR, {}), _pandas_graders(frame, SPEC, {}))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("sort", [True, False])
def test_queries_section_equals_the_pandas_way(seed, sort):
    frame = _judgments(seed, sort=sort)
    units = frame.groupby("unit").agg(query=("query", "first"), n=("unit", "size"), std=("fine", "std"))
    units = units.assign(entropy=units["std"] / 2).reset_index()
    labels = {q: f"q{q}" for q in range(100, 106)}
    assert _same(queries(frame, SPEC, units, labels), _pandas_queries(frame, SPEC, units, labels))


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
