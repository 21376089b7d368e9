"""A run split into shards of graders (docs/analysis.md, "Sharded runs").

A shard is a span of grader ids. It reads only those graders' judgments and events, and reduces the
events, most of a campaign's rows, to what the report needs of them (``sections.behaviour``:
stability counts and time on unit per grader); the events themselves never leave the shard. The
combining step (``report.report_compute``) reads the shards' parts as exactly the data one process
reading the whole campaign would have had: the judgments merged by unit a slice at a time
(``judgments.StoredJudgments``), every per-grader figure from the one shard that holds the grader,
campaign-wide figures summed from counts or taken from every opportunity's value.

Graders and not units: time on unit follows a grader from one event to their next, on whatever
unit, so a grader's events must stay together; no figure needs a unit's judgments together before
the shards are combined.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings

from analysis import selectors
from analysis.selectors import GraderSpan
from analysis.services.sections.behaviour import (
    Behaviour,
    Opportunities,
    behaviour_combine,
    behaviour_reduce,
    stability_reduce,
)
from analysis.services.values import arrow_memory_release, large_allocations_mapped, scheme_columns
from grading.models import Campaign


@dataclass
class ShardPart:
    """What one shard found: its graders' judgments (``selectors.judgments_frame`` rows, excluded
    graders and the value columns the scheme leaves empty left out) and their behaviour."""

    span: GraderSpan
    judgments: pd.DataFrame
    behaviour: Behaviour
    # The judgments as Parquet, when the part came as bytes and its frame was left unmade
    # (``part_loads(..., judgments=False)``; ``judgments`` then has the columns and no row):
    # ``judgments.StoredJudgments`` reads them a slice at a time.
    stored: bytes | None = None
    # The graders with a judgment in the part (sorted), when it came as bytes: ``part_dumps``
    # lists them, so that the combining step learns who judged without reading every grader id.
    graders: np.ndarray | None = None

    @property
    def rows(self) -> int:
        """How many judgments the part holds."""
        return len(self.judgments) if self.stored is None else _parquet_rows(self.stored)

    def column(self, name: str) -> np.ndarray:
        """One column of the part's judgments."""
        if self.stored is None:
            return self.judgments[name].to_numpy()
        import pyarrow.parquet as pq

        # the column as to_pandas makes it, without a frame: ids are int64 with no value missing
        return pq.read_table(io.BytesIO(self.stored), columns=[name]).column(name).to_numpy()


def judgments_per_shard() -> int:
    return int(settings.ANALYSIS_SHARD_JUDGMENTS)


def shard_plan(
    *, campaign_id: int, per_shard: int | None = None, judged: list[selectors.GraderJudgments] | None = None
) -> list[GraderSpan]:
    """The campaign's graders cut into spans of consecutive ids with about ``per_shard`` judgments
    each (ANALYSIS_SHARD_JUDGMENTS by default); one span of everyone when they all fit in one.
    ``judged``: the campaign's ``selectors.judgments_per_grader``, when the caller has it.

    A grader is never split, so a grader with more than ``per_shard`` judgments makes a shard of
    their own. The first span is open below and the last open above: graders with events but no
    judgment yet belong to a shard too."""
    per_shard = per_shard or judgments_per_shard()
    judged = selectors.judgments_per_grader(campaign_id=campaign_id) if judged is None else judged
    cuts: list[int] = []
    held = 0
    for row in judged:
        if not row.kept:  # only skips: no judgment to read, so no cut before the grader
            continue
        if held and held + row.kept > per_shard:
            cuts.append(row.grader)
            held = 0
        held += row.kept
    bounds: list[int | None] = [None, *cuts, None]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def shard_compute(*, campaign_id: int, span: GraderSpan, excluded: set[int], tolerance: float) -> ShardPart:
    """Read the graders of ``span`` (less the ``excluded``) and reduce their events."""
    with large_allocations_mapped():
        return _shard_compute(campaign_id=campaign_id, span=span, excluded=excluded, tolerance=tolerance)


def _shard_compute(*, campaign_id: int, span: GraderSpan, excluded: set[int], tolerance: float) -> ShardPart:
    events = selectors.without_graders(selectors.unit_events_frame(campaign_id=campaign_id, graders=span), excluded)
    values = selectors.value_events(events)
    events = _kept(events, ["grader", "unit", "ts", "type"])  # what time on unit reads; the rest can go
    arrow_memory_release()  # columns read without a copy were Arrow's: its pool would keep them
    stability = stability_reduce(values, tolerance=tolerance)
    del values  # the events are the largest thing a shard holds: each goes once it is reduced
    behaviour = behaviour_reduce(events, stability)
    del events
    arrow_memory_release()  # before the judgments' read: 150 MiB lower than where it would start
    judgments = selectors.without_graders(selectors.judgments_frame(campaign_id=campaign_id, graders=span), excluded)
    judgments = scheme_columns(judgments, Campaign.objects.values_list("scheme", flat=True).get(pk=campaign_id))
    return ShardPart(span=span, judgments=judgments, behaviour=behaviour)


def _kept(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The frame with only ``columns``: the others deleted in place, the kept ones not copied."""
    for column in [c for c in frame.columns if c not in columns]:
        del frame[column]
    return frame


def parts_behaviour(parts: list[ShardPart]) -> Behaviour:
    """The behaviour of all the parts' graders, as one shard of them all would have found it
    (``parts`` in the order of their spans); each part gives its own up once it is in the whole."""
    behaviour = behaviour_combine([p.behaviour for p in parts])
    if len(parts) > 1:
        for part in parts:
            part.behaviour = _behaviour_emptied(part.behaviour)
    return behaviour


def _emptied(frame: Any) -> Any:
    """No rows of ``frame``, with its columns and dtypes: a copy, since ``iloc[0:0]`` is a view that
    keeps every row of the frame alive."""
    return frame.iloc[0:0].copy()


def _behaviour_emptied(b: Behaviour) -> Behaviour:
    return Behaviour(
        stability={},
        opportunities=Opportunities(),
        by_grader=_emptied(b.by_grader),
        events=_emptied(b.events),
        client_ts_replaced=0,
    )


# --- a part as bytes, to travel from a worker to the combining step through the database ----------


def part_dumps(part: ShardPart) -> bytes:
    """A zip of Parquet tables (the frames, with their dtypes) and JSON (the rest)."""
    b = part.behaviour
    meta = {
        "span": list(part.span),
        "stability": {
            label: {"tolerance": s["tolerance"], "per_grader": [[g, c] for g, c in s["per_grader"].items()]}
            for label, s in b.stability.items()
        },
        "client_ts_replaced": b.client_ts_replaced,
        "graders": np.sort(pd.unique(part.column("grader"))).tolist(),
    }
    out = io.BytesIO()
    # The tables are compressed inside (``_parquet``): the zip only holds them, stored as they are,
    # so that reading a part does not inflate what the Parquet then decompresses again.
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("meta.json", json.dumps(meta))
        for name, frame in (
            ("judgments", part.judgments),
            ("opportunities", b.opportunities.frame()),
            ("by_grader", b.by_grader),
            ("events", b.events.rename("events").to_frame()),
        ):
            z.writestr(f"{name}.parquet", _parquet(frame))
    return out.getvalue()


def part_loads(data: bytes, *, judgments: bool = True) -> ShardPart:
    """The part ``part_dumps`` gave; ``judgments=False`` leaves its judgments and opportunities as
    Parquet (the part's ``stored``), for ``judgments.StoredJudgments`` to read a slice at a time:
    the combining step never holds every judgment."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        meta = json.loads(z.read("meta.json"))
        stored = z.read("judgments.parquet")
        frames: dict[str, Any] = {name: pd.read_parquet(io.BytesIO(z.read(f"{name}.parquet"))) for name in _FRAMES[2:]}
        opportunities = z.read("opportunities.parquet")
    if judgments:
        frames["judgments"], stored = pd.read_parquet(io.BytesIO(stored)), None
        frames["opportunities"] = pd.read_parquet(io.BytesIO(opportunities))
    else:  # the opportunities too are read when their figure is (sections.behaviour.Opportunities)
        frames["judgments"], frames["opportunities"] = _parquet_empty(stored), Opportunities([opportunities])
    stability = {
        label: {"tolerance": s["tolerance"], "per_grader": {int(g): _counts(c) for g, c in s["per_grader"]}}
        for label, s in meta["stability"].items()
    }
    behaviour = Behaviour(
        stability=stability,
        opportunities=frames["opportunities"],
        by_grader=frames["by_grader"],
        events=frames["events"]["events"].rename(None),
        client_ts_replaced=int(meta["client_ts_replaced"]),
    )
    graders = meta.get("graders")  # a part stored before they were listed has none
    return ShardPart(
        span=(meta["span"][0], meta["span"][1]),
        judgments=frames["judgments"],
        behaviour=behaviour,
        stored=stored,
        graders=None if graders is None else np.asarray(graders, dtype=np.int64),
    )


_FRAMES = ("judgments", "opportunities", "by_grader", "events")


def _parquet_rows(data: bytes) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(io.BytesIO(data)).metadata.num_rows


def _parquet_empty(data: bytes) -> pd.DataFrame:
    """The Parquet table's columns with their dtypes, and no row."""
    import pyarrow.parquet as pq

    return pq.read_schema(io.BytesIO(data)).empty_table().to_pandas()


def _parquet(frame: pd.DataFrame) -> bytes:
    """The frame as Parquet compressed with zstd, its integer id columns delta-encoded (a part's
    units come sorted, its graders in runs). At 10^7 judgments a part of 2,000,000 judgments took
    2.2 MB, against 2.9 MB as lz4 in a deflated zip; the six parts of the bench's run after new work
    were loaded in 0.035 s instead of 0.18 s, and the first pass over them was 0.1-0.2 s faster."""
    ids = [c for c in _DELTA if c in frame.columns and pd.api.types.is_integer_dtype(frame[c].dtype)]
    buffer = io.BytesIO()
    frame.to_parquet(
        buffer,
        engine="pyarrow",
        compression="zstd",
        use_dictionary=[c for c in frame.columns if c not in ids],
        column_encoding=dict.fromkeys(ids, "DELTA_BINARY_PACKED"),
    )
    return buffer.getvalue()


_DELTA = ("unit", "grader", "query")


def _counts(counts: dict) -> dict:
    """Stability counts back from JSON (whose keys are text)."""
    return {**counts, "sizes": {int(k): int(v) for k, v in counts["sizes"].items()}}
