"""A run's per-unit results as blocks of consecutive units (``analysis.unit_blocks``): what a block
keeps of a per-unit table, to the last bit, and what ``RunUnits`` reads back of a run's blocks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analysis import pgcopy, unit_blocks
from analysis.models import AnalysisRun, UnitBlock
from analysis.unit_blocks import COLUMNS, MODEL_COLUMNS, RunUnits
from grading.models import Judgment, Unit
from tests.factories import make_campaign

BIG = 2**53 + 1  # the first integer a double cannot hold
AWKWARD = [1 / 3, 5e-324, 1.7976931348623157e308, -0.0, 0.1 + 0.2, float("nan"), -2.5, 7.0]


def _table(units: list[int]) -> pd.DataFrame:
    """A per-unit table of every column for ``units`` (eight or fewer): ids beyond 2**53, floats
    that only their bits tell apart, a missing value in each column but the ids and ``n``."""
    k = len(units)
    return pd.DataFrame(
        {
            "unit": np.asarray(units, dtype=np.int64),
            "query": np.array([BIG + i for i in range(k)], dtype=np.int64),
            "n": np.arange(2, 2 + k, dtype=np.int64),
            "mean": AWKWARD[:k],
            "median": AWKWARD[::-1][:k],
            "majority": [float(i % 3) if i != 2 else np.nan for i in range(k)],
            "dif": [i / 7 for i in range(k)],
            "std": [np.nan if i == 0 else i / 3 for i in range(k)],
            "entropy": [0.5 * i for i in range(k)],
            "n_ns": [np.nan if i == 1 else float(i) for i in range(k)],
            "n_ss": [float(i + 1) for i in range(k)],
            "n_vs": [float(2 * i) for i in range(k)],
            "distribution": [None if i == 3 else {"a,b": i, 'say "hi"': 1, "é\nnext": 0} for i in range(k)],
            "model_label": [np.nan if i == 4 else float(i % 3) for i in range(k)],
            "model_probability": [np.nan if i == 4 else 0.25 + i / 100 for i in range(k)],
            "model_score": [np.nan if i == 5 else i * 1.5 for i in range(k)],
            "model_se": [np.nan if i == 5 else 0.01 * i for i in range(k)],
        }
    )


def _assert_floats_identical(got, want) -> None:
    """The same doubles to the last bit (-0.0 is not 0.0), missing where NaN was given."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    kept = ~np.isnan(want)
    assert got[kept].tobytes() == want[kept].tobytes()


def _assert_same_units(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """``got`` (as read) holds the values of ``want`` (as written): ids exact, floats to the last bit,
    integers missing where NaN was given, distributions as their JSON text."""
    assert list(got["unit"]) == [int(u) for u in want["unit"]]
    for name in got.columns:
        if name in unit_blocks.FLOAT_COLUMNS or name in unit_blocks.MODEL_COLUMNS:
            _assert_floats_identical(got[name], want[name])
        elif name == "distribution":
            assert list(got[name]) == [None if d is None else json.dumps(d) for d in want[name]]
        else:
            expected = [None if pd.isna(v) else int(v) for v in want[name]]
            assert [None if pd.isna(v) else int(v) for v in got[name]] == expected, name


# --- encode and decode -----------------------------------------------------------------------------


def test_a_block_decodes_to_every_column_as_it_was_given():
    given = _table([3, BIG, 2**62 + 7, 5, 4, 1, 2, 6])
    (block,) = unit_blocks.encode(given)
    table = unit_blocks.decode(block.data)
    assert table.schema == unit_blocks.SCHEMA and table.column_names == list(COLUMNS)
    read = table.to_pandas()
    want = given.sort_values("unit").reset_index(drop=True)
    _assert_same_units(read, want)
    assert table.column("unit").to_pylist() == [1, 2, 3, 4, 5, 6, BIG, 2**62 + 7]  # exact, not through doubles
    assert table.column("query").to_pylist()[-2] == BIG + 1
    assert table.column("n_ns").null_count == 1 and table.column("std").null_count == 1
    assert json.loads(table.column("distribution")[0].as_py()) == {"a,b": 5, 'say "hi"': 1, "é\nnext": 0}


def test_a_block_is_an_arrow_stream_compressed_with_zstd():
    given = pd.DataFrame({"unit": np.arange(1, 4097), "n": 3, "mean": 2.5, "n_ns": 1, "n_ss": 2, "n_vs": 0})
    (block,) = unit_blocks.encode(given)
    plain, zstd = pa.BufferOutputStream(), pa.BufferOutputStream()
    for sink, options in ((plain, None), (zstd, pa.ipc.IpcWriteOptions(compression="zstd"))):
        with pa.ipc.new_stream(sink, unit_blocks.SCHEMA, options=options) as writer:
            writer.write_table(unit_blocks.decode(block.data))
    assert block.data == zstd.getvalue().to_pybytes()
    assert len(block.data) < plain.getvalue().size / 4


def test_the_units_are_sorted_and_cut_into_blocks_of_consecutive_units():
    given = _table([40, 10, 70, 20, 80, 30, 60, 50])
    blocks = unit_blocks.encode(given, size=3)
    assert [(b.index, b.first_unit, b.last_unit, b.rows) for b in blocks] == [
        (0, 10, 30, 3),
        (1, 40, 60, 3),
        (2, 70, 80, 2),
    ]
    read = pd.concat([unit_blocks.decode(b.data).to_pandas() for b in blocks], ignore_index=True)
    _assert_same_units(read, given.sort_values("unit").reset_index(drop=True))  # each unit kept its values


def test_a_table_converted_a_few_blocks_at_a_time_gives_the_same_blocks(monkeypatch):
    """The same units and flags in each block (not the same bytes: a block sliced at another offset of
    what was converted lays its bitmaps out otherwise)."""
    given = _table([8, 3, 5, 1, 7, 2, 6, 4])
    at_once = unit_blocks.encode(given, size=2)
    assert [(b.index, b.first_unit, b.last_unit) for b in at_once] == [(0, 1, 2), (1, 3, 4), (2, 5, 6), (3, 7, 8)]
    for convert in (1, 3):  # blocks converted to Arrow one at a time; three at a time: 6 units, then 2
        monkeypatch.setattr(unit_blocks, "_CONVERT", convert)
        blocks = list(unit_blocks.encoded(given, size=2))
        assert [vars(b) | {"data": None} for b in blocks] == [vars(b) | {"data": None} for b in at_once]
        for block, whole in zip(blocks, at_once, strict=True):
            assert unit_blocks.decode(block.data).equals(unit_blocks.decode(whole.data))


def test_a_table_of_exactly_a_blocks_size_is_one_block():
    assert [b.rows for b in unit_blocks.encode(_table([1, 2, 3, 4]), size=4)] == [4]
    assert [b.rows for b in unit_blocks.encode(_table([1, 2, 3, 4, 5]), size=4)] == [4, 1]
    assert [b.rows for b in unit_blocks.encode(_table([1]))] == [1]


def test_an_empty_table_has_no_blocks():
    assert unit_blocks.encode(_table([])) == []
    assert unit_blocks.encode(pd.DataFrame({"unit": pd.Series([], dtype="int64")})) == []


def test_the_flags_say_which_blocks_have_broad_counts_distributions_model_labels_or_scores():
    given = _table([1, 2, 3, 4, 5, 6])
    given.loc[given["unit"] <= 2, "n_ns"] = np.nan
    given.loc[given["unit"] >= 3, "distribution"] = None
    given.loc[given["unit"] != 3, "model_label"] = np.nan
    given["model_score"] = np.nan
    blocks = unit_blocks.encode(given, size=2)
    flags = [(b.broad, b.distribution, b.model_label, b.model_score) for b in blocks]
    assert flags == [(False, True, False, False), (True, False, True, False), (True, False, False, False)]


def test_columns_not_given_are_stored_as_missing():
    (block,) = unit_blocks.encode(pd.DataFrame({"unit": [2, 1], "n": [3, 4], "mean": [0.5, 1.5]}))
    assert (block.broad, block.distribution, block.model_label, block.model_score) == (False, False, False, False)
    table = unit_blocks.decode(block.data)
    assert table.column_names == list(COLUMNS)
    assert table.column("n").to_pylist() == [4, 3] and table.column("mean").to_pylist() == [1.5, 0.5]
    for name in COLUMNS:
        if name not in ("unit", "n", "mean"):
            assert table.column(name).null_count == 2, name


def test_integer_columns_given_as_doubles_with_nan_are_stored_as_integers_with_missing():
    (block,) = unit_blocks.encode(pd.DataFrame({"unit": [1, 2, 3], "query": [7.0, np.nan, 9.0], "n_vs": [np.nan] * 3}))
    table = unit_blocks.decode(block.data)
    assert table.schema.field("query").type == pa.int64()
    assert table.column("query").to_pylist() == [7, None, 9]
    assert table.column("n_vs").to_pylist() == [None, None, None]


def test_distributions_given_as_json_text_are_kept_as_they_are():
    text = '{"b": 1, "a": 2}'
    given = pd.DataFrame({"unit": [1, 2, 3, 4], "distribution": [text, {"b": 1, "a": 2}, None, np.nan]})
    (block,) = unit_blocks.encode(given)
    assert unit_blocks.decode(block.data).column("distribution").to_pylist() == [text, text, None, None]
    assert block.distribution


def test_distributions_given_as_lists_are_dumped_and_every_kind_of_missing_is_null():
    given = pd.DataFrame({"unit": [1, 2, 3, 4, 5], "distribution": [[2, 1], None, np.nan, pd.NA, {}]})
    (block,) = unit_blocks.encode(given)
    assert unit_blocks.decode(block.data).column("distribution").to_pylist() == ["[2, 1]", None, None, None, "{}"]
    assert block.distribution


def test_a_column_of_distributions_all_missing_is_stored_as_nulls_of_text():
    for missing in (None, np.nan, pd.NA):
        (block,) = unit_blocks.encode(pd.DataFrame({"unit": [1, 2], "distribution": [missing, missing]}))
        column = unit_blocks.decode(block.data).column("distribution")
        assert column.type == pa.string() and column.null_count == 2
        assert not block.distribution


def test_decode_reads_only_the_columns_asked_for_in_the_stored_order():
    (block,) = unit_blocks.encode(_table([1, 2]))
    table = unit_blocks.decode(block.data, ["std", "unit", "n_ns"])
    assert table.column_names == ["unit", "std", "n_ns"]
    assert table.column("n_ns").to_pylist() == [0, None]
    assert unit_blocks.decode(memoryview(block.data), ["n"]).column_names == ["n"]  # as PostgreSQL gives bytea


def test_a_table_read_back_with_missing_counts_can_be_stored_again():
    given = pd.DataFrame({"unit": [1, 2], "n_ns": pd.array([3, None], dtype="Int64")})
    (block,) = unit_blocks.encode(given)
    assert unit_blocks.decode(block.data).column("n_ns").to_pylist() == [3, None]


# --- storing and reading a run's blocks ------------------------------------------------------------


@pytest.fixture
def units(db) -> list[int]:
    """Eight units' ids, in order."""
    campaign = make_campaign(n_queries=2, n_candidates=4, assign=False)
    return list(Unit.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True))


@pytest.fixture
def run(units) -> AnalysisRun:
    return AnalysisRun.objects.create(campaign=Unit.objects.get(pk=units[0]).campaign)


@pytest.fixture
def blocks_of(monkeypatch):
    """Blocks of this many units when a run is stored (``unit_blocks.write``)."""

    def set_size(size: int) -> None:
        monkeypatch.setattr(unit_blocks, "BLOCK_UNITS", size)

    return set_size


def _delete_unit(unit_id: int) -> None:
    Judgment.objects.filter(unit_id=unit_id).delete()
    Unit.objects.filter(pk=unit_id).delete()


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_run_reads_back_the_units_it_stored_block_by_block(units, run, blocks_of):
    blocks_of(3)
    given = _table(units[::-1])  # in any order
    assert unit_blocks.write(run.pk, given) == 3
    stored = UnitBlock.objects.filter(run=run).order_by("index")
    assert [(b.index, b.first_unit, b.last_unit, b.rows) for b in stored] == [
        (0, units[0], units[2], 3),
        (1, units[3], units[5], 3),
        (2, units[6], units[7], 2),
    ]
    read = RunUnits(run.pk)
    assert read.stored == 8
    frames = list(read.blocks())
    assert [len(f) for f in frames] == [3, 3, 2]
    frame = read.frame()
    assert list(frame.columns) == list(COLUMNS) and list(frame.index) == list(range(8))
    want = given.sort_values("unit").reset_index(drop=True)
    _assert_same_units(frame, want)
    assert frame["unit"].dtype == "int64" and frame["query"].dtype == "int64" and frame["n"].dtype == "int64"
    assert frame["n_ns"].dtype == "Int64" and frame["n_ns"].isna().tolist() == [i == 6 for i in range(8)]
    assert frame["n_ss"].dtype == "int64"  # no missing count: plain integers
    assert frame["mean"].dtype == "float64"


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_run_reads_only_the_columns_asked_for_with_the_unit_first(units, run, blocks_of):
    blocks_of(3)
    unit_blocks.write(run.pk, _table(units))
    read = RunUnits(run.pk)
    frame = read.frame(["std", "mean"])
    assert list(frame.columns) == ["unit", "mean", "std"]
    _assert_floats_identical(frame["std"], _table(units)["std"])
    assert list(read.frame(["unit", "n"]).columns) == ["unit", "n"]
    assert [list(f.columns) for f in read.blocks(["n_ns"])] == [["unit", "n_ns"]] * 3
    assert read.frame(["distribution"])["distribution"].iloc[3] is None


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_run_with_no_blocks_reads_as_no_units(units, run):
    assert unit_blocks.write(run.pk, _table([])) == 0
    read = RunUnits(run.pk)
    assert read.stored == 0 and list(read.blocks()) == []
    frame = read.frame()
    assert frame.empty and list(frame.columns) == list(COLUMNS)
    assert frame["unit"].dtype == "int64" and frame["mean"].dtype == "float64"
    assert list(read.frame(["n", "mean"]).columns) == ["unit", "n", "mean"]
    assert read.row(units[0]) is None
    assert not any(read.has(flag) for flag in ("broad", "distribution", "model_label", "model_score"))
    assert RunUnits(run.pk + 1000).frame().empty  # no such run


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_columns_come_in_the_same_order_with_units_or_without(units, run):
    empty = list(RunUnits(run.pk).frame(["std", "mean"]).columns)
    unit_blocks.write(run.pk, _table(units))
    assert list(RunUnits(run.pk).frame(["std", "mean"]).columns) == empty


@pytest.mark.both_backends
@pytest.mark.django_db
def test_storing_again_replaces_the_runs_blocks_and_no_other_runs(units, run, blocks_of):
    blocks_of(3)
    other = AnalysisRun.objects.create(campaign=run.campaign)
    unit_blocks.write(other.pk, _table(units))
    unit_blocks.write(run.pk, _table(units))
    assert unit_blocks.write(run.pk, _table(units[2:4])) == 1
    assert RunUnits(run.pk).stored == 2 and list(RunUnits(run.pk).frame()["unit"]) == units[2:4]
    assert list(UnitBlock.objects.filter(run=run).values_list("index", flat=True)) == [0]
    assert RunUnits(other.pk).stored == 8


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_runs_flags_say_what_any_of_its_units_has(units, run, blocks_of):
    blocks_of(3)
    given = _table(units)
    given["n_ns"] = np.nan
    given["model_label"] = np.nan
    given.loc[7, "model_score"] = 1.0
    given.loc[:6, "model_score"] = np.nan
    unit_blocks.write(run.pk, given)
    read = RunUnits(run.pk)
    assert [read.has(f) for f in ("broad", "distribution", "model_label", "model_score")] == [False, True, False, True]
    with pytest.raises(KeyError):
        read.has("mean")


# --- the model's columns apart ----------------------------------------------------------------------


def _own(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the model's columns: the table as a run has it before its model is fitted."""
    return frame.drop(columns=list(unit_blocks.MODEL_COLUMNS))


def _stored(run: AnalysisRun) -> list[tuple]:
    """The run's blocks as stored: bounds, flags and both fields of bytes."""
    fields = ["index", "first_unit", "last_unit", "rows", "broad", "distribution", "model_label", "model_score"]
    rows = UnitBlock.objects.filter(run=run).order_by("index").values_list(*fields, "data", "model")
    return [(*rest, bytes(data), None if model is None else bytes(model)) for *rest, data, model in rows]


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_models_columns_are_stored_apart_and_read_back_with_the_others(units, run, blocks_of):
    blocks_of(3)
    given = _table(units)
    unit_blocks.write(run.pk, given)
    for block in UnitBlock.objects.filter(run=run):
        data = unit_blocks.decode(bytes(block.data))
        assert block.model is not None and all(data.column(c).null_count == block.rows for c in MODEL_COLUMNS)
    read = RunUnits(run.pk)
    _assert_same_units(read.frame(), given)
    _assert_same_units(read.frame(["model_se", "mean"]), given)
    assert list(read.frame(["model_se", "mean"]).columns) == ["unit", "mean", "model_se"]
    _assert_same_units(read.frame(["n"]), given)
    assert read.row(units[1])["model_probability"] == 0.26 and read.row(units[1])["mean"] == 5e-324
    span = read.span(units[2], units[6], ["model_score", "n"])
    assert list(span) == ["unit", "n", "model_score"]
    _assert_floats_identical(span["model_score"], given["model_score"][2:7])
    assert [read.has(f) for f in ("model_label", "model_score")] == [True, True]


@pytest.mark.both_backends
@pytest.mark.django_db
def test_rows_stored_first_and_the_models_columns_after_are_the_blocks_stored_at_once(units, run, blocks_of):
    blocks_of(3)
    given = _table(units[::-1])  # in any order
    at_once = AnalysisRun.objects.create(campaign=run.campaign)
    unit_blocks.write(at_once.pk, given)
    unit_blocks.write(run.pk, _own(given))
    assert all(model is None for *_, model in _stored(run))
    assert not RunUnits(run.pk).has("model_label") and RunUnits(run.pk).frame()["model_score"].isna().all()
    assert unit_blocks.write_model(run.pk, given) == 3
    assert _stored(run) == _stored(at_once)
    _assert_same_units(RunUnits(run.pk).frame(), given.sort_values("unit").reset_index(drop=True))


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_models_columns_of_other_units_are_refused_and_nothing_is_written(units, run, blocks_of):
    blocks_of(3)
    unit_blocks.write(run.pk, _own(_table(units)))
    before = _stored(run)
    other = _table(units)
    other.loc[7, "unit"] = units[7] + 1000
    for given in (_table(units[:7]), other, _table(units[1:])):
        with pytest.raises(ValueError, match="not the 3 blocks the run stored"):
            unit_blocks.write_model(run.pk, given)
    assert _stored(run) == before


@pytest.mark.both_backends
@pytest.mark.django_db
def test_blocks_stored_with_every_column_in_their_data_are_read_as_they_are(units, run):
    """Blocks stored before the model's columns had a field of their own."""
    given = _table(units)
    UnitBlock.objects.bulk_create(UnitBlock(run=run, **vars(b)) for b in unit_blocks.encode(given, size=3))
    assert all(model is None for *_, model in _stored(run))
    read = RunUnits(run.pk)
    _assert_same_units(read.frame(), given)
    _assert_same_units(read.frame(["model_label", "std"]), given)
    assert read.row(units[0])["model_probability"] == 0.25
    _assert_floats_identical(read.span(units[5], units[7], ["model_se"])["model_se"], given["model_se"][5:])


@pytest.mark.both_backends
@pytest.mark.django_db
def test_the_models_columns_are_fetched_only_when_one_is_asked_for(units, run, blocks_of, monkeypatch):
    blocks_of(3)
    unit_blocks.write(run.pk, _table(units))
    read = RunUnits(run.pk)
    fetched: list[tuple[str, ...]] = []
    real = pgcopy.rows_binary

    def rows_binary(qs):
        fetched.append(tuple(qs.query.values_select))
        return real(qs)

    monkeypatch.setattr(pgcopy, "rows_binary", rows_binary)
    read.frame(["mean"])
    read.span(units[0], units[7], ["n"])
    assert fetched and all("model" not in fields for fields in fetched)
    fetched.clear()
    read.span(units[0], units[7], ["model_se"])
    assert fetched == [("pk", "data", "model")]


@pytest.mark.both_backends
@pytest.mark.django_db
def test_one_units_row_has_its_values_as_python_values(units, run, blocks_of):
    blocks_of(3)
    given = _table(units)
    unit_blocks.write(run.pk, given)
    read = RunUnits(run.pk)
    row = read.row(units[1])
    assert list(row) == list(COLUMNS)
    assert row["unit"] == units[1] and row["query"] == BIG + 1 and type(row["n"]) is int
    assert row["n_ns"] is None and row["n_ss"] == 2  # missing as None
    assert np.float64(row["median"]).tobytes() == np.float64(AWKWARD[::-1][1]).tobytes()
    assert row["distribution"] == {"a,b": 1, 'say "hi"': 1, "é\nnext": 0}
    assert read.row(units[3])["distribution"] is None
    assert read.row(units[0])["std"] is None and read.row(units[5])["mean"] is None  # NaN as None
    for unit in units:  # the first and last of each block too
        assert read.row(unit)["unit"] == unit


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_unit_the_run_did_not_store_has_no_row(units, run, blocks_of):
    blocks_of(3)
    kept = [u for i, u in enumerate(units) if i not in (1, 3)]  # blocks [0, 2, 4], [5, 6, 7]
    unit_blocks.write(run.pk, _table(kept))
    read = RunUnits(run.pk)
    assert [(b.first_unit, b.last_unit) for b in UnitBlock.objects.filter(run=run)] == [
        (units[0], units[4]),
        (units[5], units[7]),
    ]
    assert read.row(units[1]) is None  # inside a block's range, not in it
    assert read.row(units[3]) is None
    assert read.row(units[4])["unit"] == units[4]
    assert read.row(units[0] - 1) is None and read.row(units[7] + 1) is None  # outside the run's range
    other = make_campaign(n_queries=1, n_candidates=1, assign=False).units.get().pk
    assert read.row(other) is None
    assert list(read.frame()["unit"]) == kept


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_unit_in_a_gap_between_blocks_has_no_row(units, run):
    """Blocks of units stored apart (their ids not consecutive): a unit between two has none."""
    blocks = unit_blocks.encode(_table([units[0], units[1], units[5], units[6]]), size=2)
    UnitBlock.objects.bulk_create([UnitBlock(run=run, **vars(b)) for b in blocks])
    read = RunUnits(run.pk)
    for unit in units[2:5]:
        assert read.row(unit) is None
    assert read.row(units[5])["unit"] == units[5]


@pytest.mark.both_backends
@pytest.mark.django_db
def test_units_deleted_since_the_run_are_left_out_but_still_counted_as_stored(units, run, blocks_of):
    blocks_of(3)
    unit_blocks.write(run.pk, _table(units))
    for gone in (units[0], units[4], units[7]):  # the first of a block, a middle one, the last of the run
        _delete_unit(gone)
    read = RunUnits(run.pk)
    left = [units[i] for i in (1, 2, 3, 5, 6)]
    assert list(read.frame()["unit"]) == left and list(read.frame().index) == list(range(5))
    assert [list(f["unit"]) for f in read.blocks(["n"])] == [units[1:3], [units[3], units[5]], [units[6]]]
    assert read.row(units[4]) is None and read.row(units[3])["unit"] == units[3]
    assert read.stored == 8


@pytest.mark.both_backends
@pytest.mark.django_db
def test_a_run_whose_units_are_all_deleted_reads_as_no_units(units, run):
    unit_blocks.write(run.pk, _table(units[:2]))
    for unit in units[:2]:
        _delete_unit(unit)
    read = RunUnits(run.pk)
    assert read.frame().empty and list(read.frame().columns) == list(COLUMNS)
    assert [len(f) for f in read.blocks()] == [0]
    assert read.row(units[0]) is None and read.stored == 2


@pytest.mark.both_backends
@pytest.mark.django_db
def test_many_blocks_read_through_several_fetches_and_the_unit_ids_read_by_the_orm_are_the_same(
    units, run, blocks_of, monkeypatch
):
    blocks_of(1)
    unit_blocks.write(run.pk, _table(units))
    _delete_unit(units[2])
    plain = RunUnits(run.pk).frame()
    monkeypatch.setattr(unit_blocks, "_FETCH", 3)
    monkeypatch.setattr(pgcopy, "available", lambda: False)  # the units' ids not by COPY on PostgreSQL
    read = RunUnits(run.pk)
    assert [len(f) for f in read.blocks()] == [1, 1, 0, 1, 1, 1, 1, 1]  # a block of deleted units reads empty
    pd.testing.assert_frame_equal(read.frame(), plain, check_exact=True)
    assert list(plain["unit"]) == [u for u in units if u != units[2]]
    assert read.row(units[2]) is None and read.row(units[3])["unit"] == units[3]


@pytest.mark.django_db
def test_a_column_it_does_not_store_is_refused_by_name(run):
    with pytest.raises(ValueError, match="no such per-unit column: stdev"):
        RunUnits(run.pk).frame(["stdev"])
