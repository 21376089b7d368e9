"""Downloads for a campaign's organizers, written a chunk at a time so that memory stays flat at
millions of rows: ground truth (CSV, JSON, Parquet), judgments as a long CSV, the event log (CSV,
Parquet), and for ordering campaigns the ordering ground truth.

CSV and JSON are generators of text; Parquet is written row group by row group into a temporary
file, which the response then streams.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Iterator
from itertools import islice
from typing import IO, Any

import numpy as np

from analysis import export, selectors
from analysis.metrics.orderings import kendall_tau, rba_consensus
from analysis.models import AnalysisRun
from grading.models import Campaign

CHUNK = 20_000
# The judgments CSV: each column and the field it is read from (the grader becomes a pseudonym).
JUDGMENT_FIELDS = [
    ("unit", "unit__external_id"),
    ("query", "unit__query__external_id"),
    ("candidate", "unit__candidate__external_id"),
    ("candidate_b", "unit__candidate_b__external_id"),
    ("grader", "grader_id"),
    *((name, name) for name in ["broad", "fine", "score", "label", "verdict", "skipped", "comment"]),
    ("guidelines_version", "guidelines_version"),
    ("updated_at", "updated_at"),
]
JUDGMENT_COLUMNS = [column for column, _ in JUDGMENT_FIELDS]
ORDERING_COLUMNS = ["query", "grader", "kendall_tau", "ordering"]


def _csv_text(rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


# --- ground truth ----------------------------------------------------------------------------------


def ground_truth_csv(run: AnalysisRun, filters: export.Filters) -> Iterator[str]:
    """The same text as ``export.ground_truth_bytes(..., "csv")``, a chunk at a time."""
    exported, in_run = export.ground_truth_counts(run, filters)
    meta = export.ground_truth_metadata(run, filters, exported=exported, in_run=in_run)
    yield "".join(f"# {key}: {json.dumps(value, ensure_ascii=False)}\n" for key, value in meta.items())
    for i, frame in enumerate(export.ground_truth_chunks(run, filters, size=CHUNK)):
        text = export.frame_to_csv(frame)
        yield text if i == 0 else text.split("\n", 1)[1]


def ground_truth_json(run: AnalysisRun, filters: export.Filters) -> Iterator[str]:
    exported, in_run = export.ground_truth_counts(run, filters)
    meta = export.ground_truth_metadata(run, filters, exported=exported, in_run=in_run)
    yield '{"metadata": ' + json.dumps(meta, ensure_ascii=False) + ', "units": ['
    first = True
    for frame in export.ground_truth_chunks(run, filters, size=CHUNK):
        if frame.empty:
            continue
        yield "{" if first else ", {"  # (apart from the chunk's text: joining would copy it once more)
        yield export.frame_to_json_body(frame)
        yield "}"
        first = False
    yield "]}"


def _arrow_type(column: str) -> Any:
    import pyarrow as pa

    if column in export.TEXT_COLUMNS or column in ("model_label", "adjudicated_value"):
        return pa.string()
    if column == "adjudicated":
        return pa.bool_()
    if column in export.INT_COLUMNS:
        return pa.int64()
    return pa.float64()


def ground_truth_parquet(run: AnalysisRun, filters: export.Filters) -> IO[bytes]:
    """A temporary file holding the Parquet table (metadata under the key ``evalutron``), rewound."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    exported, in_run = export.ground_truth_counts(run, filters)
    meta = export.ground_truth_metadata(run, filters, exported=exported, in_run=in_run)
    out = tempfile.TemporaryFile()
    writer = None
    for frame in export.ground_truth_chunks(run, filters, size=CHUNK):
        if writer is None:
            schema = pa.schema(
                [(c, _arrow_type(c)) for c in frame.columns], metadata={b"evalutron": json.dumps(meta).encode()}
            )
            writer = pq.ParquetWriter(out, schema)
        writer.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False))
    writer.close()
    out.seek(0)
    return out


# --- judgments and events ----------------------------------------------------------------------------


def judgments_csv(campaign: Campaign) -> Iterator[str]:
    """One row per grader and unit: the current value of each judgment (graders by pseudonym)."""
    names = selectors.grader_pseudonyms(campaign_id=campaign.pk)
    yield ",".join(JUDGMENT_COLUMNS) + "\n"
    rows = selectors.judgment_rows(campaign_id=campaign.pk, fields=[field for _, field in JUDGMENT_FIELDS], chunk=CHUNK)
    while batch := list(islice(rows, CHUNK)):
        yield _csv_text([[*r[:4], names.get(r[4]) or f"#{r[4]}", *r[5:13], r[13].isoformat()] for r in batch])


EVENT_ARROW = [
    ("id", "string"),
    ("server_ts", "timestamp"),
    ("client_ts", "timestamp"),
    ("grader", "int64"),
    ("unit", "int64"),
    ("query", "int64"),
    ("type", "string"),
    ("payload", "string"),
    ("session_id", "string"),
    ("seq", "int64"),
    ("guidelines_version", "int64"),
]


def events_parquet(campaign: Campaign) -> IO[bytes]:
    """The event log as Parquet (payload as JSON text, times in UTC), written a row group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"string": pa.string(), "int64": pa.int64(), "timestamp": pa.timestamp("us", tz="UTC")}
    schema = pa.schema([(name, types[kind]) for name, kind in EVENT_ARROW])
    out = tempfile.TemporaryFile()
    with pq.ParquetWriter(out, schema) as writer:
        rows = export._event_rows(campaign.pk)
        while batch := list(islice(rows, CHUNK)):
            columns = list(zip(*batch, strict=True))
            data = {name: list(col) for (name, _), col in zip(EVENT_ARROW, columns, strict=True)}
            data["id"] = [str(v) for v in data["id"]]
            data["payload"] = [json.dumps(v, ensure_ascii=False, sort_keys=True) for v in data["payload"]]
            writer.write_table(pa.table(data, schema=schema))
    out.seek(0)
    return out


# --- ordering ground truth -----------------------------------------------------------------------------


def ordering_ground_truth_csv(campaign: Campaign) -> Iterator[str]:
    """Per query: a row with the consensus ordering (sum of ranks, docs/design.md §5.4), then one row
    per grader with their ordering and Kendall's τ against the consensus. Items by external id."""
    names = selectors.grader_pseudonyms(campaign_id=campaign.pk)
    external = selectors.candidate_external_ids(campaign_id=campaign.pk)
    yield ",".join(ORDERING_COLUMNS) + "\n"
    current, group = None, []
    rows = selectors.ordering_rows(campaign_id=campaign.pk, chunk=CHUNK)
    for query, grader, items in [*rows, (None, None, None)]:
        if query != current and group:
            yield _csv_text(_ordering_rows(current, group, names, external))
            group = []
        current = query
        if query is not None:
            group.append((grader, items))


def _ordering_rows(query: str, group: list, names: dict, external: dict) -> list[list[Any]]:
    complete = [(g, items) for g, items in group if sorted(items) == sorted(group[0][1])]
    golds = np.array([items for _, items in complete], dtype=object)
    consensus = list(rba_consensus(golds))
    show = lambda items: " ".join(external.get(i, i) for i in items)  # noqa: E731
    rows = [[query, "consensus", "", show(consensus)]]
    for grader, items in complete:
        tau = kendall_tau(consensus, items) if len(items) > 1 else ""
        rows.append([query, names.get(grader) or f"#{grader}", tau if tau == "" else round(tau, 6), show(items)])
    return rows
