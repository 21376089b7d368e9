"""The agreement sections computed a slice of whole units at a time (``values.unit_chunks``) equal
them computed over all judgments at once, on awkward judgments: units without a number, labels
outside the scale, units of one judgment, several graders' gaps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.services import values
from analysis.services.sections.agreement import agreement_report
from analysis.services.values import BROAD, BROAD_COLLAPSE, ValueSpec, unit_chunks, with_values
from grading.models.choices import Scheme


def _judgments(seed: int, n_units: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for unit in range(100, 100 + n_units):
        for grader in sorted(rng.choice(np.arange(1, 7), size=int(rng.integers(1, 6)), replace=False)):
            broad = rng.choice([*BROAD, None])
            fine = float(rng.integers(0, 11)) if rng.random() > 0.1 else np.nan
            rows.append((unit, int(grader), unit // 7, broad, fine))
    frame = pd.DataFrame(rows, columns=["unit", "grader", "query", "broad", "fine"])
    return with_values(frame, ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval"))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slices_give_the_same_sections_and_units(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _judgments(seed)
    spec = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    whole = agreement_report(frame, spec, n_boot=50, confidence=0.9, seed=3)
    monkeypatch.setattr(values, "CHUNK_ROWS", 7)
    assert len(unit_chunks(frame)) > 10
    sliced = agreement_report(frame, spec, n_boot=50, confidence=0.9, seed=3)
    assert _same(sliced[0], whole[0])
    assert sliced[1].equals(whole[1]) and list(sliced[1].dtypes) == list(whole[1].dtypes)


def test_slices_with_fine_scores_in_tenths_and_not_give_the_same_fine_within_broad(monkeypatch) -> None:
    frame = _judgments(7)
    frame.loc[frame["unit"] % 3 == 0, "fine"] += 0.25  # a ratings file's FINE: kept as floats in those slices
    frame.loc[frame["unit"] % 3 == 1, "fine"] /= 10  # tenths: kept as bytes
    spec = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    frame = with_values(frame, spec)
    whole = agreement_report(frame, spec, n_boot=0, confidence=0.9, seed=3)
    monkeypatch.setattr(values, "CHUNK_ROWS", 7)
    sliced = agreement_report(frame, spec, n_boot=0, confidence=0.9, seed=3)
    assert _same(sliced[0]["fine_within_broad"], whole[0]["fine_within_broad"])
    assert _same(sliced[0], whole[0])


def test_unit_chunks_keep_units_whole_and_leave_unsorted_frames_whole() -> None:
    frame = pd.DataFrame({"unit": [1, 1, 1, 2, 3, 3, 4, 4, 4, 4, 5]})
    # 11 judgments over 5 ids: at 2 a slice, spans of one id (the largest power of two <= 2*5/11 is 1)
    chunks = unit_chunks(frame, rows=2)
    assert [(c.start, c.stop) for c in chunks] == [(0, 3), (3, 4), (4, 6), (6, 10), (10, 11)]
    # at 5 a slice, spans of two ids (the largest power of two <= 5*5/11): ids 0-1, 2-3, 4-5
    assert [(c.start, c.stop) for c in unit_chunks(frame, rows=5)] == [(0, 3), (3, 6), (6, 11)]
    assert unit_chunks(frame.iloc[::-1], rows=2) == [slice(0, 11)]


def test_slices_are_fixed_spans_of_unit_ids_that_new_judgments_leave_alone() -> None:
    units = np.arange(1000, 3000)
    counts = np.full(units.size, 5)
    ends = values.slice_ends(units, counts, rows=1000)  # 5 judgments an id: spans of 128 ids
    assert (np.diff(ends[:-1]) == 128).all() and ((ends[:-1] + 1) % 128 == 0).all()
    more = counts.copy()
    more[:100] += 1  # a new grader on the first 100 units
    assert np.array_equal(values.slice_ends(units, more, rows=1000), ends)
    wider = values.slice_ends(np.arange(1000, 3010), np.full(2010, 5), rows=1000)  # new units at the end
    assert np.array_equal(wider[: ends.size - 1], ends[:-1])


def test_heap_release_runs_wherever_it_is_called() -> None:
    values.heap_release()  # glibc's malloc_trim, or nothing where there is none


# --- through the shards' parts (``judgments.StoredJudgments``) -----------------------------------------------------

ROWS = 7  # a slice's rows: small, so that each campaign below is cut into many slices
LABELS = ["bad", "ok", "good", "great"]
SCHEMES = {  # name: scheme, its parameters, and a judgment's value of the row number i (None: left empty)
    "broad_fine": (Scheme.BROAD_FINE, None),
    "numeric_grid": (Scheme.NUMERIC, {"min": 0, "max": 10, "step": 1}),  # the scale points are categories too
    "numeric_fine": (Scheme.NUMERIC, {"min": 0, "max": 100, "step": 0.5}),  # numbers only
    "ordered": (Scheme.CATEGORICAL, {"labels": LABELS, "ordered": True}),
    "unordered": (Scheme.CATEGORICAL, {"labels": LABELS, "ordered": False}),
    "pairwise": (Scheme.PAIRWISE, None),
}


def _value(scheme: str, rng: np.random.Generator, unit_id: int) -> dict[str, Any]:
    """One judgment's answer: mostly the unit's own level with noise, some missing, some outside the scale."""
    level = int(np.clip(unit_id % 4 + rng.choice([0, 0, 1, -1]), 0, 3))
    missing = rng.random() < 0.12
    if scheme == "broad_fine":
        fine = level * 3 + rng.choice([0.0, 1.0, 0.5 * (unit_id % 3 == 0)])  # halves in some slices only
        return {"broad": None if missing else BROAD[min(level, 2)], "fine": None if rng.random() < 0.1 else fine}
    if scheme == "numeric_grid":
        return {"score": None if missing else float(level * 3 + rng.choice([0, 1])) + 0.3 * (rng.random() < 0.05)}
    if scheme == "numeric_fine":
        return {"score": None if missing else float(level * 20 + rng.integers(0, 30) / 2)}
    if scheme == "pairwise":
        return {"verdict": None if missing else ["B", "equal", "A"][min(level, 2)]}
    return {"label": None if missing else [*LABELS, "unheard-of"][level + (rng.random() < 0.05)]}


def _judged(scheme: str, *, graders: int = 6, seed: int = 4):
    """A campaign of ``scheme`` whose graders judged most of their units (some units once, some answers
    empty), with one unit of no query."""
    from grading.models import Assignment, Judgment
    from tests.factories import make_campaign

    kind, params = SCHEMES[scheme]
    campaign = make_campaign(
        scheme=kind, scheme_params=params, n_queries=4, n_candidates=5, graders=graders, overlap=min(graders, 4)
    )
    rng = np.random.default_rng(seed)
    assignments = Assignment.objects.filter(campaign=campaign).order_by("pk")
    Judgment.objects.bulk_create(
        Judgment(campaign=campaign, grader_id=a.grader_id, unit_id=a.unit_id, **_value(scheme, rng, a.unit_id))
        for a in assignments
        if rng.random() > 0.15
    )
    unit = assignments.last().unit
    unit.query = None  # a NULL query: the query column is float in that unit's parts
    unit.save(update_fields=["query"])
    return campaign


def _parts(campaign, per_shard: int, excluded: frozenset[int] = frozenset()) -> list:
    from analysis.services.shards import part_dumps, part_loads, shard_compute, shard_plan

    return [
        part_loads(
            part_dumps(shard_compute(campaign_id=campaign.pk, span=span, excluded=set(excluded), tolerance=0.5)),
            judgments=False,
        )
        for span in shard_plan(campaign_id=campaign.pk, per_shard=per_shard)
    ]


def _whole(campaign, excluded: frozenset[int] = frozenset()) -> pd.DataFrame:
    """The one frame of every judgment, less the ``excluded``, as the combining step held it."""
    from analysis.services.shards import shard_compute

    whole = shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5).judgments
    whole = whole[~whole["grader"].isin(excluded)].reset_index(drop=True)
    return with_values(whole, values.value_spec(campaign))


def _stored(parts: list, spec: ValueSpec, **kwargs: Any):
    """The parts' judgments in slices of about ``ROWS`` rows."""
    from analysis.services import judgments

    stored = judgments.StoredJudgments(parts, spec, rows=ROWS, **kwargs)
    assert len(list(stored.chunks())) > 3
    return stored


def _assert_same_report(stored, whole: pd.DataFrame, spec: ValueSpec) -> None:
    expected = agreement_report(whole, spec, n_boot=30, confidence=0.9, seed=5)  # one slice, as the frame was read
    got = agreement_report(stored, spec, n_boot=30, confidence=0.9, seed=5)
    assert _same(got[0], expected[0])
    assert got[1].equals(expected[1]) and list(got[1].dtypes) == list(expected[1].dtypes)


@pytest.mark.django_db
@pytest.mark.parametrize("per_shard", [1, 30])
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_the_shards_parts_give_the_sections_of_the_one_frame(scheme, per_shard) -> None:
    campaign = _judged(scheme)
    spec = values.value_spec(campaign)
    whole = _whole(campaign)
    assert whole["query"].isna().any() and whole["cat" if spec.has_categories else "num"].isna().any()
    _assert_same_report(_stored(_parts(campaign, per_shard), spec), whole, spec)


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", ["ordered", "broad_fine"])
def test_two_graders_give_cohens_kappas_through_the_parts_as_through_the_frame(scheme) -> None:
    campaign = _judged(scheme, graders=2)
    spec = values.value_spec(campaign)
    whole = _whole(campaign)
    stored = _stored(_parts(campaign, 1), spec)
    _assert_same_report(stored, whole, spec)
    assert agreement_report(stored, spec, n_boot=0, confidence=0.9, seed=5)[0]["agreement"]["cohen"]["graders"] == 2


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", ["broad_fine", "numeric_fine", "unordered"])
def test_a_grader_excluded_before_or_after_the_shards_read_is_left_out_as_from_the_frame(scheme) -> None:
    campaign = _judged(scheme)
    spec = values.value_spec(campaign)
    grader = int(_whole(campaign)["grader"].iloc[0])
    whole = _whole(campaign, excluded=frozenset({grader}))
    _assert_same_report(_stored(_parts(campaign, 10, frozenset({grader})), spec), whole, spec)
    _assert_same_report(_stored(_parts(campaign, 10), spec, excluded={grader}), whole, spec)


@pytest.mark.django_db
def test_no_judgment_at_all_gives_the_empty_sections_of_the_empty_frame() -> None:
    from analysis.services.judgments import StoredJudgments
    from tests.factories import make_campaign

    campaign = make_campaign(n_queries=2, n_candidates=3, graders=3)
    spec = values.value_spec(campaign)
    expected = agreement_report(_whole(campaign), spec, n_boot=30, confidence=0.9, seed=5)
    got = agreement_report(StoredJudgments(_parts(campaign, 1), spec), spec, n_boot=30, confidence=0.9, seed=5)
    assert _same(got[0], expected[0]) and got[0]["fine_within_broad"] == []
    assert got[1].equals(expected[1])


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return set(a) == set(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.mark.parametrize("seed", [0, 1])
def test_rows_out_of_order_give_the_sections_of_the_rows_in_order(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame not in (unit, grader) order (a ratings file) is read as one slice; its figures are those
    of the sorted rows, but for the last bits of sums taken in another order."""
    frame = _judgments(seed)
    spec = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    monkeypatch.setattr(values, "CHUNK_ROWS", 7)
    shuffled = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    sections, units = agreement_report(shuffled, spec, n_boot=0, confidence=0.9, seed=3)
    expected, expected_units = agreement_report(frame, spec, n_boot=0, confidence=0.9, seed=3)
    assert _close(sections, expected)
    pd.testing.assert_frame_equal(units, expected_units, rtol=1e-12)


def test_fine_scores_kept_as_bytes_are_the_same_numbers() -> None:
    from analysis.services.sections.agreement import _compact, _expanded

    tenths = np.arange(256) / 10  # 0.0, 0.1, .. 25.5
    pieces = [_compact(tenths), _compact(np.array([0.0, 7.3, 10.0]))]
    assert all(p.dtype == np.uint8 for p in pieces)
    counted = _expanded([*pieces, np.empty(0)])  # every score a tenth (an empty piece says nothing): counted
    assert (counted.counts == np.bincount(np.round(np.r_[tenths, 0.0, 7.3, 10.0] * 10).astype(int))).all()
    assert (_expanded([*pieces, _compact(np.array([0.25]))]) == np.r_[tenths, 0.0, 7.3, 10.0, 0.25]).all()
    for kept in ([0.25, 3.0], [-0.0, 1.0], [25.6], [-0.1]):  # a hundredth, the sign of a zero, out of a byte's range
        assert _compact(np.array(kept)).dtype == float
        assert (_expanded([_compact(np.array(kept))]) == np.array(kept)).all()
    assert _expanded([]).size == 0


@pytest.mark.parametrize("seed", [3, 4])
def test_places_read_from_the_slices_give_what_the_labels_give(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sections count categories by each judgment's place in the scale (``values.places``):
    from the ``place`` column ``with_values`` derives, or found from ``cat`` in a frame made
    without it; labels outside the scale and missing ones count in no category either way."""
    frame = _judgments(seed)
    frame.loc[frame.index % 11 == 0, ["broad", "cat"]] = "XS"  # outside the scale, where FINE is missing
    frame.loc[frame.index % 11 == 0, "fine"] = np.nan
    spec = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    frame = with_values(frame, spec)
    assert set(frame["place"]) == {-1, 0, 1, 2, values.OUTSIDE}
    monkeypatch.setattr(values, "CHUNK_ROWS", 9)
    by_place = agreement_report(frame, spec, n_boot=30, confidence=0.9, seed=5)
    by_label = agreement_report(frame.drop(columns="place"), spec, n_boot=30, confidence=0.9, seed=5)
    assert _same(by_place[0], by_label[0])
    assert by_place[1].equals(by_label[1])
    counted = by_place[1][["n_ns", "n_ss", "n_vs"]].sum()
    assert counted.tolist() == [int((frame["broad"] == label).sum()) for label in BROAD]


def test_a_broad_label_outside_the_scale_with_a_fine_score_is_refused_as_the_metric_refuses_it() -> None:
    frame = _judgments(5)
    frame.loc[frame.index[17], ["broad", "fine"]] = ["XS", 4.0]
    spec = ValueSpec(Scheme.BROAD_FINE, "broad", BROAD, BROAD_COLLAPSE, "fine", "FINE", "interval")
    with pytest.raises(ValueError, match="`broad` has a label outside .*'XS'"):
        agreement_report(with_values(frame, spec), spec, n_boot=0, confidence=0.9, seed=5)


def test_alpha_of_a_crowd_holds_no_matrix_of_its_graders() -> None:
    """A crowd campaign: 5,000 units, three of 2,000 graders on each. Alpha (interval) reads each
    unit's numbers as runs: a units x graders matrix would be 80 MB; the section's alpha is the
    `krippendorff` package's."""
    import tracemalloc

    import krippendorff

    from analysis.services.sections.agreement import agreement

    rng = np.random.default_rng(11)
    graders = np.stack([np.sort(rng.choice(2000, 3, replace=False)) for _ in range(5000)])
    scores = rng.integers(0, 11, graders.shape).astype(float)
    frame = pd.DataFrame(
        {"unit": np.repeat(np.arange(5000), 3), "grader": graders.ravel(), "query": 1, "score": scores.ravel()}
    )
    spec = ValueSpec(Scheme.NUMERIC, None, [], None, "score", "score", "interval")
    frame = with_values(frame, spec)
    tracemalloc.start()
    try:
        alpha = agreement(frame, spec, rng=np.random.default_rng(0), n_boot=20, confidence=0.9)["alpha"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20
    wide = np.full((5000, 2000), np.nan)
    np.put_along_axis(wide, graders, scores, axis=1)
    expected = krippendorff.alpha(reliability_data=wide.T, level_of_measurement="interval")
    assert alpha["value"] == pytest.approx(expected, rel=1e-9)


def test_the_crescents_grid_is_numpys_histogram2d() -> None:
    """Values on the edges (tenths and quarters on a grid of 40 x 25), all equal, and continuous."""
    from analysis.services.sections.agreement import CRESCENT_GRID, _histogram2d

    rng = np.random.default_rng(12)
    cases = [
        (rng.integers(0, 41, 50_000) / 4, rng.integers(0, 26, 50_000) / 25),
        (np.round(rng.random(50_000) * 10, 1), np.round(rng.random(50_000) * 3, 2)),
        (np.full(40, 2.0), np.arange(40.0)),
        (rng.normal(5, 2, 50_000), rng.gamma(2.0, 0.5, 50_000)),
    ]
    for x, y in cases:
        expected, got = np.histogram2d(x, y, bins=CRESCENT_GRID), _histogram2d(x, y, CRESCENT_GRID)
        assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))
        assert got[0].dtype == expected[0].dtype
    with pytest.raises(ValueError, match="range"):
        _histogram2d(np.array([1.0, np.nan]), np.array([1.0, 2.0]), CRESCENT_GRID)
