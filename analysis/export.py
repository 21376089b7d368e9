"""Ground truth (CSV / JSON / Parquet with a metadata block) and the raw event log (streamed CSV / JSONL).

Ground truth comes from one succeeded AnalysisRun: the per-unit rows it stored and the campaign's
kappa / alpha with their intervals from its result, so the numbers in the metadata and in the rows
were computed together. Formats:

- CSV: leading ``# key: value`` lines (values JSON-encoded), then a header row and one row per unit.
  Floats are written with Python's shortest round-trip repr; read them back exactly with
  ``pd.read_csv(f, comment="#", float_precision="round_trip")``.
- JSON: ``{"metadata": {...}, "units": [{...}, ...]}``.
- Parquet: the table, with the metadata as JSON under the schema metadata key ``evalutron``.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import partial
from json.encoder import encode_basestring
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis import pgcopy, unit_blocks
from analysis.metrics.consensus import consensus_category
from analysis.models import AnalysisRun
from analysis.services.values import value_spec
from grading.models import Adjudication, GradingEvent, Unit

Format = Literal["csv", "json", "parquet"]
FORMATS: dict[str, str] = {"csv": "text/csv", "json": "application/json", "parquet": "application/vnd.apache.parquet"}
EVENT_FORMATS: dict[str, str] = {"csv": "text/csv", "jsonl": "application/x-ndjson"}
MEASURES = ("std", "dif", "entropy")
COLUMNS = ["unit", "unit_id", "query", "candidate", "n", "mean", "median", "majority", "dif", "std", "entropy"]
BROAD_COLUMNS = ["n_ns", "n_ss", "n_vs"]
BROAD_LABELS = ["NS", "SS", "VS"]
MODEL_COLUMNS = ["model_label", "model_probability", "model_score", "model_se"]
EVENT_COLUMNS = [
    "id",
    "server_ts",
    "client_ts",
    "grader",
    "unit",
    "query",
    "type",
    "payload",
    "session_id",
    "seq",
    "guidelines_version",
]
EVENT_CHUNK = 5_000


@dataclass(frozen=True)
class Filters:
    min_judgments: int = 1
    max_confusability: float | None = None
    measure: str = "std"

    def __post_init__(self) -> None:
        if self.min_judgments < 1:
            raise ValueError(f"min_judgments must be at least 1; got {self.min_judgments}")
        if self.measure not in MEASURES:
            raise ValueError(f"measure must be one of {', '.join(MEASURES)}; got {self.measure!r}")
        if self.max_confusability is not None and not self.max_confusability >= 0:
            raise ValueError(f"max_confusability must be a number ≥ 0; got {self.max_confusability!r}")


def _kept(units: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """The units the filters keep. A unit with one judgment has no std: it is not "above" the
    threshold, so it stays."""
    keep = units["n"].to_numpy() >= filters.min_judgments
    if filters.max_confusability is not None:
        measure = units[filters.measure].to_numpy(dtype=float, na_value=np.nan)
        keep &= np.isnan(measure) | (measure <= filters.max_confusability)
    return units if keep.all() else units[keep]


_STORED = ["unit", "n", "mean", "median", "majority", "dif", "std", "entropy", *BROAD_COLUMNS, "distribution"]
_STORED += MODEL_COLUMNS
_KEYS = ["unit_id", "unit", "query", "candidate"]
_GT_COLUMNS = [*COLUMNS, *BROAD_COLUMNS, "distribution", *MODEL_COLUMNS]


@dataclass(frozen=True)
class _Shape:
    """Which optional columns the export has, decided once for all its rows (chunks share columns)."""

    broad: bool
    distribution: bool
    model_label: bool
    model_score: bool
    categories: tuple[Any, ...]
    adjudicated: dict[int, str]


def _shape_of(run: AnalysisRun, units: unit_blocks.RunUnits) -> _Shape:
    """From what the run stored (its blocks' flags), whatever the filters keep."""
    broad = units.has("broad")
    return _Shape(
        broad=broad,
        distribution=not broad and units.has("distribution"),
        model_label=units.has("model_label"),
        model_score=units.has("model_score"),
        categories=tuple(value_spec(run.campaign).categories),
        # as they stand at export time (adjudicated units are few)
        adjudicated=dict(Adjudication.objects.filter(campaign_id=run.campaign_id).values_list("unit_id", "value")),
    )


def ground_truth_frame(run: AnalysisRun, filters: Filters) -> pd.DataFrame:
    """One row per unit of the run, filtered; floats exactly as the metrics computed them."""
    frames = list(ground_truth_chunks(run, filters, size=1 << 62))
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def ground_truth_chunks(run: AnalysisRun, filters: Filters, *, size: int = 50_000) -> Iterator[pd.DataFrame]:
    """The rows of :func:`ground_truth_frame` as frames of at most `size` rows (at least one frame,
    perhaps empty), with the same columns throughout: memory stays flat however many units. The
    run's blocks are read one after another, and the units' keys (external ids) once a frame."""
    units = unit_blocks.RunUnits(run.pk)
    shape = _shape_of(run, units)
    pending: list[pd.DataFrame] = []
    held = 0
    first = True
    for block in units.blocks(_STORED):
        block = _kept(block, filters)
        if block.empty:
            continue
        pending.append(block)
        held += len(block)
        while held >= size:
            rows = pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]
            pending, held = ([rows.iloc[size:]], held - size) if held > size else ([], 0)
            yield _ground_truth_shape(_with_keys(rows.iloc[:size], run.campaign_id), shape)
            first = False
    if pending or first:
        rows = pd.concat(pending, ignore_index=True) if pending else pd.DataFrame(columns=_STORED)
        yield _ground_truth_shape(_with_keys(rows, run.campaign_id), shape)


def ground_truth_counts(run: AnalysisRun, filters: Filters) -> tuple[int, int]:
    """The units the export holds and those the run has (its units deleted since left out): one
    pass over the blocks, reading the columns the filters need."""
    exported = in_run = 0
    for block in unit_blocks.RunUnits(run.pk).blocks(["n", filters.measure]):
        exported += len(_kept(block, filters))
        in_run += len(block)
    return exported, in_run


def _with_keys(units: pd.DataFrame, campaign_id: int) -> pd.DataFrame:
    """The units with their external ids, the query's and the candidate's, in ``_GT_COLUMNS``' order."""
    units = units.rename(columns={"unit": "unit_id"}).reset_index(drop=True)
    if units.empty:
        keys = pd.DataFrame({c: pd.Series(dtype="int64" if c == "unit_id" else object) for c in _KEYS})
    else:
        ids = units["unit_id"].to_numpy()
        qs = Unit.objects.filter(campaign_id=campaign_id, pk__gte=int(ids[0]), pk__lte=int(ids[-1])).order_by("pk")
        keys = _unit_frame(qs.values_list("pk", "external_id", "query__external_id", "candidate__public_id"), _KEYS)
    units["unit_id"] = units["unit_id"].astype("int64")
    keys["unit_id"] = keys["unit_id"].astype("int64")
    return units.merge(keys, on="unit_id", how="inner", sort=False)[_GT_COLUMNS]


def _ground_truth_shape(frame: pd.DataFrame, shape: _Shape) -> pd.DataFrame:
    frame = _model_columns(frame, shape)
    frame = _adjudicated_columns(frame, shape)
    if shape.broad:
        frame = frame.drop(columns="distribution")
        frame[BROAD_COLUMNS] = frame[BROAD_COLUMNS].astype("Int64")
        frame["majority_broad"] = _majority_broad(frame)
    else:
        frame = frame.drop(columns=BROAD_COLUMNS)
        if shape.distribution:
            frame["distribution"] = frame["distribution"].map(_distribution_json)
        else:
            frame = frame.drop(columns="distribution")
    for column in ("mean", "median", "majority", "dif", "std", "entropy"):
        frame[column] = frame[column].astype(float)
    for column in ("unit_id", "n"):
        frame[column] = frame[column].astype("int64")
    return frame


def _majority_broad(frame: pd.DataFrame) -> list[str | None]:
    """The consensus BROAD per unit (majority; ties toward the mean BROAD, then the lower)."""
    if frame.empty:
        return []
    counts = frame[BROAD_COLUMNS].fillna(0).to_numpy(dtype=np.int64)
    return consensus_category(counts, BROAD_LABELS)


def _model_columns(frame: pd.DataFrame, shape: _Shape) -> pd.DataFrame:
    """The model-based label (as the category's name) with its posterior probability, and the model
    score with its standard error; a pair the campaign's scheme has no model for is left out."""
    for pair, present in (
        (["model_label", "model_probability"], shape.model_label),
        (["model_score", "model_se"], shape.model_score),
    ):
        if not present:
            frame = frame.drop(columns=pair)
            continue
        values = frame[pair[0]].astype(float)
        frame[pair[1]] = frame[pair[1]].astype(float)
        if pair[0] == "model_label":
            frame["model_label"] = [None if np.isnan(v) else str(shape.categories[int(v)]) for v in values]
        else:
            frame[pair[0]] = values
    return frame


def _adjudicated_columns(frame: pd.DataFrame, shape: _Shape) -> pd.DataFrame:
    """The organizer's adjudicated value where there is one, and a flag."""
    unit_ids = frame["unit_id"].astype("int64")
    frame["adjudicated_value"] = [shape.adjudicated.get(u) for u in unit_ids]
    frame["adjudicated"] = unit_ids.isin(shape.adjudicated.keys())
    return frame


def _distribution_json(value: Any) -> str | None:
    if isinstance(value, str):  # jsonb text from COPY: its key order is jsonb's, not ours
        value = json.loads(value)
    return json.dumps(value, sort_keys=True) if value else None


TEXT_COLUMNS = ("unit", "query", "candidate", "distribution", "majority_broad")
INT_COLUMNS = ("unit_id", "n", *BROAD_COLUMNS)


def _unit_frame(qs: Any, columns: list[str]) -> pd.DataFrame:
    """The query's rows as a DataFrame, through COPY on PostgreSQL (floats to the last bit)."""
    types: dict[str, pgcopy.ColumnType] = {
        c: "text" if c in TEXT_COLUMNS else "int" if c in INT_COLUMNS else "float" for c in columns
    }
    return pgcopy.query_frame(qs, columns, types)


def ground_truth_metadata(run: AnalysisRun, filters: Filters, *, exported: int, in_run: int) -> dict[str, Any]:
    result = run.result or {}
    agreement = result.get("agreement", {})
    kappas = {level["name"]: level["kappa"] for level in agreement.get("levels", [])}
    campaign = run.campaign
    return {
        "campaign": campaign.name,
        "campaign_slug": campaign.slug,
        "campaign_id": campaign.pk,
        "scheme": campaign.scheme,
        "guidelines_version": campaign.guidelines_version,
        "analysis_run": run.pk,
        "analysis_finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "seed": run.seed,
        "n_boot": (run.parameters or {}).get("n_boot"),
        "fleiss_kappa": kappas,
        "krippendorff_alpha": agreement.get("alpha"),
        "confusability": (result.get("confusability") or {}).get("summary"),
        "filters": asdict(filters),
        "units_exported": exported,
        "units_in_run": in_run,
        "exported_at": datetime.now(UTC).isoformat(),
    }


def ground_truth_bytes(run: AnalysisRun, filters: Filters, fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    frame = ground_truth_frame(run, filters)
    meta = ground_truth_metadata(run, filters, exported=len(frame), in_run=ground_truth_counts(run, filters)[1])
    if fmt == "csv":
        head = "".join(f"# {key}: {json.dumps(value, ensure_ascii=False)}\n" for key, value in meta.items())
        return (head + frame_to_csv(frame)).encode()
    if fmt == "json":
        head = json.dumps(meta, ensure_ascii=False, allow_nan=False)
        return ('{"metadata": ' + head + ', "units": [' + frame_to_json_objects(frame) + "]}").encode()
    return _parquet(frame, meta)


_CSV_SPECIAL = (",", '"', "\r", "\n")


def frame_to_csv(frame: pd.DataFrame) -> str:
    """The same text as ``frame.to_csv(index=False)``, several times faster.

    Each column is formatted once per distinct value (floats by ``repr``: the shortest text that
    reads back to the same double, as pandas writes them), then the rows are joined in C.
    """
    header = ",".join(_csv_field(str(c)) for c in frame.columns) + "\n"
    if frame.empty:
        return header
    columns = [_column_text(frame[c]) for c in frame.columns]
    return header + "\n".join(map(",".join, zip(*columns, strict=True))) + "\n"


def _csv_field(text: str) -> str:
    """Quoted as Python's csv module does with QUOTE_MINIMAL."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in _CSV_SPECIAL) else text


def _column_text(column: pd.Series) -> list[str]:
    if column.dtype == "int64":
        return list(map(str, column.tolist()))
    if column.dtype == object and column.notna().all():
        values = list(map(str, column.tolist()))
        joined = "".join(values)
        return values if not any(c in joined for c in _CSV_SPECIAL) else list(map(_csv_field, values))
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    if pd.api.types.is_float_dtype(column.dtype):
        texts = [repr(float(v)) for v in uniques]
    elif pd.api.types.is_integer_dtype(column.dtype):
        texts = [str(int(v)) for v in uniques]
    else:
        texts = [_csv_field(str(v)) for v in uniques]
    return np.array([*texts, ""], dtype=object)[codes].tolist()  # code -1 (missing) takes the last: ""


def frame_to_json_objects(frame: pd.DataFrame) -> str:
    """The rows as JSON objects joined by ", ": the same text as ``json.dumps`` of each row (keys in
    column order, missing values and NaN as null, numpy scalars as Python's, ``ensure_ascii=False``,
    infinities refused), several times faster.

    As in :func:`frame_to_csv`, each column is formatted on its own, once per distinct value (floats
    by ``repr``, as ``json.dumps`` writes them) with its key in front, then the rows are joined in C.
    """
    return "{" + frame_to_json_body(frame) + "}" if not frame.empty else ""


def frame_to_json_body(frame: pd.DataFrame) -> str:
    """:func:`frame_to_json_objects` without its first "{" and last "}" ('' for no rows): a stream
    sends those apart rather than copy megabytes of text to add two characters."""
    if frame.empty:
        return ""
    columns = []
    for i, name in enumerate(frame.columns):
        key = json.dumps(str(name), ensure_ascii=False) + ": "
        columns.append(_column_json(frame[name], prefix=key if i == 0 else ", " + key))
    return "}, {".join(map("".join, zip(*columns, strict=True)))


def _column_json(column: pd.Series, *, prefix: str) -> list[str]:
    """Each value of the column as json.dumps writes it, after `prefix`."""
    add = prefix.__add__
    if column.dtype == "bool":
        return np.where(column.to_numpy(), prefix + "true", prefix + "false").astype(object).tolist()
    if isinstance(column.dtype, np.dtype) and column.dtype.kind == "f":
        values = column.to_numpy(dtype=np.float64)
        if np.isinf(values).any():
            raise ValueError(f"Out of range float values are not JSON compliant (column {column.name!r})")
        # Factorized by bit pattern, so that -0.0 keeps its sign; every NaN is null.
        codes, uniques = pd.factorize(values.view(np.int64))
        texts = [prefix + ("null" if v != v else repr(v)) for v in uniques.view(np.float64).tolist()]
    elif pd.api.types.is_integer_dtype(column.dtype):  # int64, or Int64 with missing values
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        texts = list(map(add, map(str, np.asarray(uniques, dtype=np.int64).tolist())))
    elif pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
        # encode_basestring is what json.dumps writes a str with (ensure_ascii=False), without its overhead.
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        texts = list(map(add, map(encode_basestring, uniques)))
    else:
        plain = column.astype(object).where(column.notna(), None).tolist()
        dumps = partial(json.dumps, ensure_ascii=False, allow_nan=False)
        return [prefix + dumps(v.item() if hasattr(v, "item") else v) for v in plain]
    if len(texts) == len(codes):  # every value distinct and none missing: factorize numbered them in order
        return texts
    texts.append(prefix + "null")  # code -1 (missing) takes the last
    return np.array(texts, dtype=object)[codes].tolist()


def _parquet(frame: pd.DataFrame, meta: dict[str, Any]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"evalutron": json.dumps(meta).encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def read_parquet_metadata(source: Any) -> dict[str, Any]:
    """The metadata block of a ground-truth Parquet file (path or file object)."""
    import pyarrow.parquet as pq

    return json.loads(pq.read_schema(source).metadata[b"evalutron"])


# --- the raw event log, streamed ----------------------------------------------------------------------


def _event_rows(campaign_id: int) -> Iterator[tuple]:
    qs = (
        GradingEvent.objects.filter(campaign_id=campaign_id)
        .order_by("server_ts", "seq", "id")
        .values_list(
            *[
                "id",
                "server_ts",
                "client_ts",
                "grader_id",
                "unit_id",
                "query_id",
                "type",
                "payload",
                "session_id",
                "seq",
                "guidelines_version",
            ]
        )
    )
    return qs.iterator(chunk_size=EVENT_CHUNK)


def _event_dict(row: tuple) -> dict[str, Any]:
    out = dict(zip(EVENT_COLUMNS, row, strict=True))
    out["id"] = str(out["id"])
    out["server_ts"], out["client_ts"] = out["server_ts"].isoformat(), out["client_ts"].isoformat()
    return out


def events_stream(campaign_id: int, fmt: str) -> Iterator[str]:
    """The campaign's event log, oldest first, as CSV or JSON lines, a chunk of rows at a time.

    Rows come from a database iterator (a server-side cursor on PostgreSQL), so memory stays flat
    however long the log is.
    """
    if fmt not in EVENT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EVENT_FORMATS)}; got {fmt!r}")
    if fmt == "csv" and pgcopy.available():
        yield from _events_csv_copy(campaign_id)
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer) if fmt == "csv" else None
    if writer is not None:
        writer.writerow(EVENT_COLUMNS)
    for i, row in enumerate(_event_rows(campaign_id), start=1):
        event = _event_dict(row)
        if writer is not None:
            event["payload"] = json.dumps(event["payload"], ensure_ascii=False, sort_keys=True)
            writer.writerow(event.values())
        else:
            buffer.write(json.dumps(event, ensure_ascii=False) + "\n")
        if i % 1000 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _events_csv_copy(campaign_id: int) -> Iterator[str]:
    """PostgreSQL: the database writes the CSV (COPY … TO STDOUT), blocks pass straight through."""
    table = GradingEvent._meta.db_table
    sql = (
        f"SELECT id, to_json(server_ts) #>> '{{}}', to_json(client_ts) #>> '{{}}', grader_id, unit_id, "
        f"query_id, type, payload::text, session_id, seq, guidelines_version FROM {table} "
        f"WHERE campaign_id = %s ORDER BY server_ts, seq, id"
    )
    yield ",".join(EVENT_COLUMNS) + "\r\n"
    decoder = codecs.getincrementaldecoder("utf-8")()  # a block may end inside a character
    for block in pgcopy.copy_out(sql, [campaign_id]):
        yield decoder.decode(block)
    yield decoder.decode(b"", final=True)
