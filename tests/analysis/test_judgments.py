"""The judgments read a slice of whole units at a time (analysis/services/judgments.py) are the rows
``values.unit_chunks`` cuts from the one frame of every judgment: the same rows, in the same order,
with the same dtypes, whichever shards the run was split into, with graders excluded or not."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from analysis.services import judgments as judgments_module
from analysis.services.judgments import FrameJudgments, StoredJudgments, judgments_of
from analysis.services.shards import part_dumps, part_loads, shard_compute, shard_plan
from analysis.services.values import unit_chunks, value_sources, value_spec, with_values
from grading.models import Judgment
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]
ROWS = 7  # a slice's rows: small, so that the campaign below is cut into many slices


@pytest.fixture
def campaign():
    campaign = make_campaign(n_queries=4, n_candidates=5, graders=6, overlap=4)
    judge_broad_fine(campaign, seed=11)
    return campaign


def _parts(campaign, per_shard, *, stored=True, excluded=frozenset()):
    parts = [
        shard_compute(campaign_id=campaign.pk, span=span, excluded=set(excluded), tolerance=0.5)
        for span in shard_plan(campaign_id=campaign.pk, per_shard=per_shard)
    ]
    return [part_loads(part_dumps(p), judgments=False) for p in parts] if stored else parts


def _whole(campaign, excluded=frozenset()):
    """The one frame of every judgment as one reading gives it, less the excluded, with values."""
    whole = shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5).judgments
    whole = whole[~whole["grader"].isin(excluded)].reset_index(drop=True)
    return with_values(whole, value_spec(campaign))


def _assert_slices_equal(judgments, whole):
    """The slices of a first pass over ``judgments`` (from the parts) and of a second (from what
    the first wrote, ``judgments._Spill``), of every column and of a few, are ``whole``'s."""
    slices = unit_chunks(whole, ROWS)
    for _ in ("from the parts", "from the spill"):
        chunks = list(judgments.chunks())
        assert len(chunks) == len(slices) > 3
        for chunk, rows in zip(chunks, slices, strict=True):
            expected = whole.iloc[rows]
            pd.testing.assert_frame_equal(chunk[list(expected.columns)], expected)
    if isinstance(judgments, StoredJudgments):
        assert judgments._spill is not None and judgments._spill.complete
        for chunk, rows in zip(judgments.chunks(["query", "cat"]), slices, strict=True):
            sources = value_sources(judgments.spec, "cat")  # the columns cat is made from, read with it
            assert list(chunk.columns) == ["unit", "grader", "query", *(c for c in whole if c in sources), "cat"]
            pd.testing.assert_frame_equal(chunk, whole.iloc[rows][list(chunk.columns)])
    assert len(judgments) == len(whole)
    units, counts = judgments.units()
    expected_units, expected_counts = np.unique(whole["unit"].to_numpy(), return_counts=True)
    assert units.tolist() == expected_units.tolist() and counts.tolist() == expected_counts.tolist()
    assert judgments.graders().tolist() == sorted(set(whole["grader"].tolist()))


@pytest.mark.parametrize("per_shard", [1, 7, 25, 10_000])
@pytest.mark.parametrize("stored", [True, False])
def test_the_slices_of_the_shards_parts_are_the_slices_of_the_one_frame(campaign, per_shard, stored):
    spec = value_spec(campaign)
    _assert_slices_equal(StoredJudgments(_parts(campaign, per_shard, stored=stored), spec, rows=ROWS), _whole(campaign))


def test_a_grader_excluded_before_or_after_the_shards_read_is_left_out_of_every_slice(campaign):
    spec = value_spec(campaign)
    grader = int(Judgment.objects.filter(campaign=campaign).values_list("grader_id", flat=True).first())
    whole = _whole(campaign, excluded={grader})
    _assert_slices_equal(StoredJudgments(_parts(campaign, 7), spec, rows=ROWS).without({grader}), whole)
    _assert_slices_equal(StoredJudgments(_parts(campaign, 7, excluded={grader}), spec, rows=ROWS), whole)
    _assert_slices_equal(FrameJudgments(_whole(campaign), spec, rows=ROWS).without({grader}), whole)


def test_a_query_missing_in_one_part_makes_the_column_float_as_concatenating_would(campaign):
    unit = Judgment.objects.filter(campaign=campaign).order_by("-grader_id").first().unit
    unit.query = None
    unit.save(update_fields=["query"])
    spec = value_spec(campaign)
    whole = _whole(campaign)
    assert whole["query"].dtype == float and whole["query"].isna().any()
    _assert_slices_equal(StoredJudgments(_parts(campaign, 7), spec, rows=ROWS), whole)


def test_a_slice_reads_only_what_it_asks_for_and_derives_the_value_columns(campaign):
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS)
    chunk = next(judgments.chunks(["num", "cat"]))
    assert {"unit", "grader", "fine", "num", "broad", "cat"} <= set(chunk.columns) and "query" not in chunk.columns
    assert chunk["num"].equals(chunk["fine"].astype(float)) and chunk["cat"].equals(chunk["broad"])


def test_no_judgment_gives_no_slice(campaign):
    Judgment.objects.filter(campaign=campaign).delete()
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS)
    assert len(judgments) == 0 and judgments.empty and list(judgments.chunks()) == []
    assert judgments.frame().empty and {"unit", "grader", "cat", "num"} <= set(judgments.frame().columns)


def test_a_frame_is_wrapped_and_a_judgments_passes_through(campaign):
    spec = value_spec(campaign)
    whole = _whole(campaign)
    wrapped = judgments_of(whole, spec)
    assert isinstance(wrapped, FrameJudgments) and wrapped.frame() is whole
    assert judgments_of(wrapped, spec) is wrapped


def test_slices_without_the_value_columns_read_no_answer(campaign):
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS)
    chunk = next(judgments.chunks(["unit", "query"]))
    assert set(chunk.columns) == {"unit", "grader", "query"}


def test_a_slice_of_numbers_alone_reads_no_category(campaign):
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS)
    chunk = next(judgments.chunks(["num"]))
    assert set(chunk.columns) == {"unit", "grader", "fine", "num"}
    chunk = next(judgments.chunks(["cat"]))
    assert set(chunk.columns) == {"unit", "grader", "broad", "cat"}


def _missing_answers(part, every: int, missing):
    """``part`` (read, not stored) with every ``every``-th judgment's BROAD answer ``missing``."""
    frame = part.judgments.copy()
    frame["broad"] = frame["broad"].astype(object)
    frame.loc[frame.index[::every], "broad"] = missing
    part.judgments = frame
    return part


@pytest.mark.parametrize("missing", [None, float("nan"), "mixed"])
def test_the_spill_gives_back_missing_answers_as_they_were(campaign, missing):
    parts = _parts(campaign, 7, stored=False)
    if missing == "mixed":
        _missing_answers(parts[0], 3, None)
        _missing_answers(parts[-1], 4, float("nan"))
    else:
        _missing_answers(parts[0], 3, missing)
    judgments = StoredJudgments(parts, value_spec(campaign), rows=ROWS)
    first = list(judgments.chunks())
    second = list(judgments.chunks())
    assert judgments._spill.complete and sum(c["broad"].isna().sum() for c in first) > 0
    for a, b in zip(first, second, strict=True):
        pd.testing.assert_frame_equal(a, b)
        for name in ("broad", "cat"):  # None stays None and NaN stays NaN
            assert [type(v) for v in a[name]] == [type(v) for v in b[name]]


def test_a_pass_left_before_its_end_leaves_no_spill_and_the_next_writes_it(campaign):
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS)
    passes = judgments.chunks()
    next(passes)
    passes.close()
    assert judgments._spill is None
    list(judgments.chunks())
    assert judgments._spill.complete


def test_without_room_for_the_spill_every_pass_reads_the_parts(campaign, monkeypatch):
    def full(self, name, values, factorized=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(judgments_module._Spill, "_written", full)
    _assert_slices_equal_unspilled(StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS), campaign)


def _assert_slices_equal_unspilled(judgments, campaign):
    whole = _whole(campaign)
    for _ in range(2):
        chunks = list(judgments.chunks())
        for chunk, rows in zip(chunks, unit_chunks(whole, ROWS), strict=True):
            pd.testing.assert_frame_equal(chunk[list(whole.columns)], whole.iloc[rows])
        assert not judgments._spill.complete and not judgments._spill.files


def test_a_single_slice_is_not_spilled(campaign):
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign))
    assert len(list(judgments.chunks())) == 1 and judgments._spill is None


class _UnitsOnly:
    """A part of only unit and grader columns (``judgments.ShardPart`` as ``_unit_counts`` reads it)."""

    def __init__(self, units, graders):
        self.units, self.graders = np.asarray(units, dtype=np.int64), np.asarray(graders, dtype=np.int64)
        self.rows = self.units.size
        self.stored = None  # held as columns: its range is read from them, not from Parquet statistics

    def column(self, name):
        return self.units if name == "unit" else self.graders


@pytest.mark.parametrize("spread", [1, 10**12])  # ids close together (counted over their range), or far apart
def test_each_units_judgments_are_counted_over_the_parts_as_one_frame_counts_them(spread):
    rng = np.random.default_rng(5)
    parts = []
    for _ in range(4):
        units = np.sort(rng.integers(0, 300, rng.integers(0, 400))) * spread + 7
        parts.append(_UnitsOnly(units, rng.integers(1, 6, units.size)))
    stored = object.__new__(StoredJudgments)
    stored.parts, stored.excluded = parts, {3}
    every = np.concatenate([p.units[p.graders != 3] for p in parts])
    expected = np.unique(every, return_counts=True)
    for counted in (stored._unit_counts(), stored._unit_counts_merged()):
        assert counted[0].tolist() == expected[0].tolist() and counted[1].tolist() == expected[1].tolist()
        assert counted[0].dtype == counted[1].dtype == np.int64
    stored.parts = [_UnitsOnly([], [])]
    assert [a.size for a in stored._unit_counts()] == [0, 0]


@pytest.mark.parametrize(
    ("scheme", "field", "values", "written_once"),
    [
        ("numeric", "score", [0.25, 3.5, 7.0, 10.0], {"num": "score"}),  # cat: the rounded scores, written
        ("categorical", "label", ["bad", "ok", "good"], {"cat": "label"}),  # num: positions, written
    ],
)
def test_a_value_column_that_is_an_answer_as_it_is_is_spilled_once_and_read_back_the_same(
    scheme, field, values, written_once
):
    """The spill writes ``cat`` and ``num`` once where they hold an answer column as it is
    (``judgments._derived_as_is``), and reads them back as the one frame has them."""
    from grading.models import Assignment

    campaign = make_campaign(scheme=scheme, n_queries=4, n_candidates=5, graders=6, overlap=4)
    rng = np.random.default_rng(3)
    Judgment.objects.bulk_create(
        Judgment(
            campaign=campaign, grader_id=a.grader_id, unit_id=a.unit_id, **{field: values[rng.integers(len(values))]}
        )
        for a in Assignment.objects.filter(campaign=campaign)
    )
    judgments = StoredJudgments(_parts(campaign, 7), value_spec(campaign), rows=ROWS)
    _assert_slices_equal(judgments, _whole(campaign))
    columns = judgments._spill.slices[0][2]
    assert {name: stored.column for name, stored in columns.items() if stored.column != name} == written_once


def test_a_parts_batches_are_what_to_pandas_makes_of_them():
    """``judgments._parquet_batches`` reads text as a dictionary, kept as codes (``_Text``), and puts
    numpy columns side by side: the columns, text made into objects, are ``to_pandas``'s, dtypes,
    None and NaN included, and the codes factorize the text."""
    import pyarrow.parquet as pq

    from analysis.services.shards import _parquet

    frame = pd.DataFrame(
        {
            "unit": np.arange(10, dtype=np.int64),
            "query": [1, None, 3, 4, None, 6, 7, 8, 9, 10],  # integers with a missing one: floats
            "broad": ["NS", None, "VS", "SS", "NS", None, "VS", "VS", "SS", "NS"],
            "nothing": [None] * 10,  # Arrow's null type
            "fine": [0.5, np.nan, 1.0, 2.5, 3.0, 4.0, np.nan, 6.0, 7.5, 10.0],
        }
    )
    data = _parquet(frame)
    batches = list(judgments_module._parquet_batches(data, list(frame.columns), 4))
    expected = [b.to_pandas() for b in pq.ParquetFile(io.BytesIO(data)).iter_batches(batch_size=4)]
    assert len(batches) == len(expected) == 3
    for got, want in zip(batches, expected, strict=True):
        text = got["broad"]
        assert isinstance(text, judgments_module._Text)
        codes, words = text.factorized()
        assert [None if c < 0 else words[c] for c in codes] == list(want["broad"])
        made = pd.DataFrame({n: c.objects() if isinstance(c, judgments_module._Text) else c for n, c in got.items()})
        pd.testing.assert_frame_equal(made, want)
        for name in ("broad", "nothing"):
            assert [type(v) for v in made[name]] == [type(v) for v in want[name]]
        got["unit"][0] = -1  # writable, as to_pandas's columns are


def test_text_whose_dictionaries_differ_is_merged_into_one_set_of_words():
    """Each row group of a part has a dictionary of its own, and each part: pieces whose words
    differ are joined into the union of their words, every row still its own value."""
    a = judgments_module._Text(np.array([0, 1, -1, 1], dtype=np.int32), np.array(["NS", "VS"], dtype=object))
    b = judgments_module._Text(np.array([1, 0, 2, -1], dtype=np.int32), np.array(["SS", "NS", "VS"], dtype=object))
    same = judgments_module._Text(np.array([1, 1], dtype=np.int32), np.array(["NS", "VS"], dtype=object))
    joined = judgments_module._joined([a, b, same], np.dtype(object))
    assert list(joined.objects()) == ["NS", "VS", None, "VS", "NS", "SS", "VS", None, "VS", "VS"]
    assert sorted(joined.words) == ["NS", "SS", "VS"]
    assert judgments_module._joined([a, same], np.dtype(object)).words is a.words  # the same words: codes as they are
    mixed = judgments_module._joined([a, np.array(["SS", None], dtype=object)], np.dtype(object))
    assert list(mixed) == ["NS", "VS", None, "VS", "SS", None]  # beside a frame part's objects: objects


def test_the_spill_writes_integers_as_narrow_as_their_slice_allows():
    """Ids are int64 in the parts; the spill writes each slice's as the narrowest integers that hold
    them, and reads them back as int64."""
    spill = judgments_module._Spill()
    try:
        chunk = pd.DataFrame(
            {
                "unit": np.array([3_000_000_000, 3_000_000_001], dtype=np.int64),  # beyond int32
                "grader": np.array([7, 200], dtype=np.int64),
                "query": np.array([-5, 70_000], dtype=np.int64),
                "fine": [0.5, 1.5],
            },
            index=pd.RangeIndex(0, 2),
        )
        assert spill.write(chunk)
        spill.finish()
        stored = spill.slices[0][2]
        assert {n: s.dtype for n, s in stored.items()} == {
            "unit": np.dtype(np.uint32),
            "grader": np.dtype(np.uint8),
            "query": np.dtype(np.int32),
            "fine": np.dtype(float),
        }
        pd.testing.assert_frame_equal(spill.read(0, list(chunk.columns)), chunk)
    finally:
        spill.close()


class _ParquetUnits:
    """A part stored as Parquet, with or without the statistics of its columns."""

    def __init__(self, units, statistics: bool):
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        self.units = np.asarray(units, dtype=np.int64)
        out = io.BytesIO()
        table = pa.table({"unit": self.units, "grader": np.ones(self.units.size, dtype=np.int64)})
        pq.write_table(table, out, write_statistics=statistics, row_group_size=7)
        self.stored, self.rows = out.getvalue(), self.units.size

    def column(self, name):
        return self.units


@pytest.mark.parametrize("statistics", [True, False])
def test_a_parts_range_of_units_is_read_from_its_statistics_or_else_its_column(statistics, monkeypatch):
    part = _ParquetUnits([5, 5, 9, 12, 40, 41, 41, 3000, 3001], statistics)
    read = []
    monkeypatch.setattr(part, "column", lambda name: read.append(name) or part.units)
    assert judgments_module._unit_range(part) == (5, 3001, 9)
    assert read == ([] if statistics else ["unit"])
    assert judgments_module._unit_range(_ParquetUnits([], statistics)) is None
