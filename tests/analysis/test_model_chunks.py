"""model_truth read a slice of whole units at a time (``Judgments.chunks``) gives what it gave on the
one frame of every judgment: from the shards' parts (``StoredJudgments``) as from that frame, and both
as the long frames gave it before (``_old_model_truth``), on every scheme with a model and on awkward
judgments (values missing or off the scale, an excluded grader, rows out of order, a NULL query,
graders named in a ratings file)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis import selectors
from analysis.metrics import _ds_em, _panels
from analysis.metrics.dawid_skene import _std, _total, bias_noise, dawid_skene
from analysis.services import values
from analysis.services.judgments import StoredJudgments
from analysis.services.sections import model
from analysis.services.sections.behaviour import Behaviour
from analysis.services.sections.model import MODEL_COLUMNS, model_truth
from analysis.services.shards import ShardPart, part_dumps, part_loads, shard_compute, shard_plan
from analysis.services.values import BROAD, BROAD_COLLAPSE, ValueSpec, value_spec, with_values
from grading.models.choices import Scheme
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign

SPECS = {
    "broad_fine": ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval"),
    "numeric": ValueSpec(Scheme.NUMERIC, "score", [float(i) for i in range(11)], None, "score", "score", "interval"),
    "numeric, fine scale": ValueSpec(Scheme.NUMERIC, None, [], None, "score", "score", "interval"),
    "categorical, unordered": ValueSpec(
        Scheme.CATEGORICAL,
        "label",
        ["cat", "dog", "eel", "fox"],
        None,
        "label_position",
        "label position",
        "nominal",
        False,
    ),
    "categorical, ordered": ValueSpec(
        Scheme.CATEGORICAL, "label", ["low", "mid", "high"], None, "label_position", "label position", "ordinal", True
    ),
    "pairwise": ValueSpec(
        Scheme.PAIRWISE, "verdict", ["B", "equal", "A"], None, "verdict_position", "verdict (B=0, equal=1, A=2)"
    ),
}
GRADERS = [3, 5, 8, 9, 14, 20]
PSEUDONYMS = {3: "ann", 5: "bob", 8: "cy", 9: "dee", 14: "eve"}  # 20 has none: grader-20


def _judgments(spec: ValueSpec, seed: int, n_units: int = 150) -> pd.DataFrame:
    """The judgments frame of a campaign of ``spec``'s scheme, in (unit, grader) order: each unit judged
    by 1 to 5 graders, some values missing, some categories off the scale, a NULL query."""
    rng = np.random.default_rng(seed)
    per_unit = rng.integers(1, 6, n_units)
    unit = np.repeat(np.arange(n_units) * 3 + 1000, per_unit)
    grader = np.concatenate([np.sort(rng.choice(GRADERS, k, replace=False)) for k in per_unit])
    truth = rng.integers(0, 3, n_units)[(unit - 1000) // 3]
    level = np.clip(truth + rng.integers(-1, 2, unit.size) * (rng.random(unit.size) < 0.3), 0, 2)
    query = ((unit - 1000) // 30).astype(object)
    query[query == 2] = None  # a NULL query: the part holding it reads its queries as floats
    frame = pd.DataFrame({"unit": unit, "grader": grader, "query": query})
    missing = rng.random(unit.size) < 0.1
    if spec.scheme == Scheme.BROAD_FINE:
        frame["broad"] = np.where(missing, None, np.array(BROAD, dtype=object)[level])
        frame.loc[rng.random(unit.size) < 0.05, "broad"] = "??"  # off the scale
        fine = np.round(1.5 + 3.5 * level + rng.normal(0, 0.5 + (grader % 3), unit.size), 1)
        frame["fine"] = np.where(rng.random(unit.size) < 0.1, np.nan, fine)
    elif spec.scheme == Scheme.NUMERIC:
        score = np.clip(np.round(3 * level + rng.normal(0, 1 + grader % 2, unit.size)), 0, 10)
        frame["score"] = np.where(missing, np.nan, score if spec.categories else score + 0.25)
    else:
        labels = np.array(spec.categories, dtype=object)
        frame[spec.cat_column] = np.where(missing, None, labels[np.minimum(level + (grader % 2), labels.size - 1)])
        frame.loc[rng.random(unit.size) < 0.03, spec.cat_column] = "??"
    frame["query"] = frame["query"].astype(float)
    return frame


def _parts(frame: pd.DataFrame, cuts: list[int]) -> list[ShardPart]:
    """The frame's judgments as the shards' parts, graders cut before each of ``cuts``, as they come
    to the combining step (Parquet, read when asked for)."""
    bounds = [None, *cuts, None]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        rows = (frame["grader"] >= (lo or 0)) & (frame["grader"] < (hi or 10**9))
        judgments = frame[rows].reset_index(drop=True)
        if judgments["query"].notna().all():  # a part without the NULL query holds integers
            judgments["query"] = judgments["query"].astype(np.int64)
        part = ShardPart(span=(lo, hi), judgments=judgments, behaviour=_no_behaviour())
        parts.append(part_loads(part_dumps(part), judgments=False))
    return parts


def _no_behaviour() -> Behaviour:
    return Behaviour(
        stability={},
        opportunities=pd.DataFrame({"grader": [], "seconds": [], "auditions": []}),
        by_grader=pd.DataFrame({"units": [], "mean_seconds": [], "median_seconds": [], "mean_auditions": []}),
        events=pd.Series([], dtype=float),
        client_ts_replaced=0,
    )


def _one_frame(frame: pd.DataFrame, spec: ValueSpec) -> pd.DataFrame:
    """The judgments as the one frame of every judgment (in (unit, grader) order) the combining step held."""
    return with_values(frame.reset_index(drop=True), spec)


def _old_model_truth(frame: pd.DataFrame, spec: ValueSpec, pseudonyms: dict[int, str]) -> tuple[dict, pd.DataFrame]:
    """model_truth as it was (0649262): the fits on the long frames of the one frame."""
    section: dict[str, Any] = {}
    per_unit = []
    long = pd.DataFrame({"unit": frame["unit"], "grader": frame["grader"]})
    if spec.has_categories and spec.scheme != Scheme.NUMERIC and len(spec.categories) >= 2:
        keep = frame["cat"].isin(spec.categories)
        if keep.any():
            fit = dawid_skene(long.assign(value=frame["cat"].where(keep)), categories=spec.categories)
            section["dawid_skene"] = model._ds_section(fit, pseudonyms)
            label = fit.posterior.argmax(axis=1).astype(float)
            per_unit.append(
                pd.DataFrame({"unit": fit.units, "model_label": label, "model_probability": fit.probability})
            )
    if spec.has_numbers and spec.scheme in (Scheme.NUMERIC, Scheme.BROAD_FINE) and frame["num"].notna().any():
        fit = bias_noise(long.assign(value=frame["num"]))
        section["bias_noise"] = model._bias_noise_section(fit, pseudonyms, spec)
        per_unit.append(pd.DataFrame({"unit": fit.units, "model_score": fit.score, "model_se": fit.score_se}))
    units = pd.DataFrame(columns=["unit", *MODEL_COLUMNS])
    for part in per_unit:
        units = part if units.empty else units.merge(part, on="unit", how="outer")
    return section, units.reindex(columns=["unit", *MODEL_COLUMNS])


def _same(got: tuple[dict, pd.DataFrame], expected: tuple[dict, pd.DataFrame]) -> None:
    assert got[0] == expected[0]  # every figure to the last bit
    assert got[1].equals(expected[1]) and list(got[1].dtypes) == list(expected[1].dtypes)


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of a few dozen judgments, so that a campaign of hundreds comes in many."""
    monkeypatch.setattr(values, "CHUNK_ROWS", 37)  # StoredJudgments cuts its slices by it too
    monkeypatch.setattr(model, "_BLOCK", 5)


@pytest.mark.parametrize("scheme", SPECS, ids=SPECS)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("panel_judgments", [1, 10**15], ids=["panels", "rows"])
def test_the_model_from_the_shards_parts_is_the_model_of_the_one_frame(
    scheme, seed, panel_judgments, small_slices, monkeypatch
):
    """Also when the numeric fit runs on panels (``_panels``), as it does at scale."""
    monkeypatch.setattr(_panels, "PANEL_JUDGMENTS", panel_judgments)
    spec = SPECS[scheme]
    frame = _judgments(spec, seed)
    whole = _one_frame(frame, spec)
    stored = StoredJudgments(_parts(frame, [8, 14]), spec)
    assert len(list(stored.chunks(["unit"] + [c for c in ("cat", "num") if c in stored.columns]))) > 5
    expected = _old_model_truth(whole, spec, PSEUDONYMS)
    assert expected[0]  # a model was fitted
    fits = []
    monkeypatch.setattr(_panels, "fit", lambda *a, _fit=_panels.fit, **k: fits.append(1) or _fit(*a, **k))
    _same(model_truth(stored, spec, PSEUDONYMS), expected)
    _same(model_truth(whole, spec, PSEUDONYMS), expected)
    assert len(fits) == (2 if "bias_noise" in expected[0] and panel_judgments == 1 else 0)


@pytest.mark.parametrize("scheme", ["broad_fine", "categorical, unordered", "numeric"])
def test_an_excluded_grader_is_left_out_as_if_never_read(scheme, small_slices):
    spec = SPECS[scheme]
    frame = _judgments(spec, 3)
    whole = _one_frame(frame[frame["grader"] != 9], spec)
    stored = StoredJudgments(_parts(frame, [8, 14]), spec, excluded={9})
    got = model_truth(stored, spec, PSEUDONYMS)
    assert all(g["grader"] != 9 for fit in got[0].values() for g in fit["graders"])
    _same(got, _old_model_truth(whole, spec, PSEUDONYMS))


@pytest.mark.parametrize("scheme", ["broad_fine", "pairwise"])
def test_rows_out_of_order_give_what_the_long_frames_gave(scheme, small_slices):
    spec = SPECS[scheme]
    frame = with_values(_judgments(spec, 4).sample(frac=1, random_state=4), spec)  # not by unit: one slice
    _same(model_truth(frame, spec, PSEUDONYMS), _old_model_truth(frame, spec, PSEUDONYMS))


def test_graders_named_in_a_ratings_file_keep_their_names(small_slices):
    spec = SPECS["broad_fine"]
    frame = _judgments(spec, 5)
    frame["grader"] = frame["grader"].map(lambda g: f"rater {g:02d}").astype(object)
    frame = with_values(frame, spec)
    got = model_truth(frame, spec, {})
    assert [g["grader"] for g in got[0]["dawid_skene"]["graders"]][:2] == ["rater 03", "rater 05"]
    _same(got, _old_model_truth(frame, spec, {}))


def test_judgments_without_a_value_fit_nothing(small_slices):
    spec = SPECS["broad_fine"]
    frame = _judgments(spec, 6)
    frame["broad"], frame["fine"] = "??", np.nan
    stored = StoredJudgments(_parts(frame, [8]), spec)
    section, units = model_truth(stored, spec, PSEUDONYMS)
    assert section == {} and units.empty and list(units.columns) == ["unit", *MODEL_COLUMNS]
    assert model_truth(with_values(frame.iloc[:0], spec), spec, PSEUDONYMS)[0] == {}


def test_a_grader_with_two_values_for_a_unit_is_refused():
    spec = SPECS["broad_fine"]
    frame = with_values(pd.concat([_judgments(spec, 7, n_units=5)] * 2, ignore_index=True), spec)
    with pytest.raises(ValueError, match="two values of grader"):
        model_truth(frame.sort_values(["unit", "grader"], kind="stable"), spec, PSEUDONYMS)


@pytest.mark.django_db
@pytest.mark.both_backends
def test_the_model_of_a_campaign_read_in_shards_is_the_model_of_one_reading(small_slices):
    campaign = make_campaign(n_queries=4, n_candidates=5, graders=6, overlap=4)
    judge_broad_fine(campaign, seed=11)
    spec, pseudonyms = value_spec(campaign), selectors.grader_pseudonyms(campaign_id=campaign.pk)
    plan = shard_plan(campaign_id=campaign.pk, per_shard=7)
    assert len(plan) > 2

    def parts() -> list[ShardPart]:
        computed = (shard_compute(campaign_id=campaign.pk, span=s, excluded=set(), tolerance=0.5) for s in plan)
        return [part_loads(part_dumps(p), judgments=False) for p in computed]

    one = shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5)
    whole = _one_frame(one.judgments, spec)
    expected = _old_model_truth(whole, spec, pseudonyms)
    _same(model_truth(StoredJudgments(parts(), spec), spec, pseudonyms), expected)
    out = int(whole["grader"].iloc[0])  # excluded after the shards read (a reliability threshold)
    less = _old_model_truth(whole[whole["grader"] != out].reset_index(drop=True), spec, pseudonyms)
    _same(model_truth(StoredJudgments(parts(), spec, excluded={out}), spec, pseudonyms), less)


@pytest.mark.parametrize("size", [1, 7, 129, 201, 1000, 4099, 100_003])
def test_bias_noise_sums_its_terms_as_numpy_sums_them_whole(size, monkeypatch):
    """bias_noise's totals (and the spread of the values) follow numpy's pairwise sum, a piece at a
    time: the same floats as summing every term at once."""
    monkeypatch.setattr(_ds_em, "CHUNK", 200)
    rng = np.random.default_rng(size)
    values = rng.normal(0, 1, size) * 10.0 ** rng.integers(-3, 6, size)
    assert _total(size, lambda b: values[b]) == values.sum()
    assert _std(values) == values.std()


def test_a_slices_unit_codes_are_the_binary_searchs_whether_its_units_are_consecutive_or_not() -> None:
    """``_unit_codes`` counts the changes of unit in a slice of whole units in order, and searches
    any other rows: the codes are ``np.searchsorted``'s either way."""
    rng = np.random.default_rng(8)
    judged = np.unique(rng.integers(0, 10_000, 3_000))
    consecutive = np.repeat(judged[100:400], rng.integers(1, 6, 300))
    skipping = np.repeat(judged[100:400:2], 3)  # a unit judged but absent from these rows
    unordered = rng.choice(judged, 500)
    for units in (consecutive, skipping, unordered, judged[:1], judged[-1:], judged[:0]):
        assert (model._unit_codes(judged, units) == np.searchsorted(judged, units)).all()
