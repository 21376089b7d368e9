"""A run split into shards of graders (docs/analysis.md, "Sharded runs").

A shard is a span of grader ids. It reads only those graders' judgments and events, and reduces the
events, most of a campaign's rows, to what the report needs of them (``sections.behaviour``:
stability counts and time on unit per grader); the events themselves never leave the shard. The
combining step (``report.report_compute``) puts the shards' parts together into exactly the data
one process reading the whole campaign would have had: the judgments concatenated and sorted as the
loader sorts them, every per-grader figure from the one shard that holds the grader, campaign-wide
figures summed from counts or taken from every opportunity's value.

Graders and not units: time on unit follows a grader from one event to their next, on whatever
unit, so a grader's events must stay together; no figure needs a unit's judgments together before
the shards are combined.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.conf import settings

from analysis import selectors
from analysis.selectors import GraderSpan
from analysis.services.sections.behaviour import Behaviour, behaviour_combine, behaviour_reduce, stability_reduce
from analysis.services.values import scheme_columns
from grading.models import Campaign


@dataclass
class ShardPart:
    """What one shard found: its graders' judgments (``selectors.judgments_frame`` rows, excluded
    graders and the value columns the scheme leaves empty left out) and their behaviour."""

    span: GraderSpan
    judgments: pd.DataFrame
    behaviour: Behaviour


def judgments_per_shard() -> int:
    return int(settings.ANALYSIS_SHARD_JUDGMENTS)


def shard_plan(*, campaign_id: int, per_shard: int | None = None) -> list[GraderSpan]:
    """The campaign's graders cut into spans of consecutive ids with about ``per_shard`` judgments
    each (ANALYSIS_SHARD_JUDGMENTS by default); one span of everyone when they all fit in one.

    A grader is never split, so a grader with more than ``per_shard`` judgments makes a shard of
    their own. The first span is open below and the last open above: graders with events but no
    judgment yet belong to a shard too."""
    per_shard = per_shard or judgments_per_shard()
    counts = selectors.judgments_per_grader(campaign_id=campaign_id)
    cuts: list[int] = []
    held = 0
    for grader, n in counts:
        if held and held + n > per_shard:
            cuts.append(grader)
            held = 0
        held += n
    bounds: list[int | None] = [None, *cuts, None]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def shard_compute(*, campaign_id: int, span: GraderSpan, excluded: set[int], tolerance: float) -> ShardPart:
    """Read the graders of ``span`` (less the ``excluded``) and reduce their events."""
    events = selectors.without_graders(selectors.unit_events_frame(campaign_id=campaign_id, graders=span), excluded)
    values = selectors.value_events(events)
    events = _kept(events, ["grader", "unit", "ts", "type"])  # what time on unit reads; the rest can go
    stability = stability_reduce(values, tolerance=tolerance)
    del values  # the events are the largest thing a shard holds: each goes once it is reduced
    behaviour = behaviour_reduce(events, stability)
    del events
    judgments = selectors.without_graders(selectors.judgments_frame(campaign_id=campaign_id, graders=span), excluded)
    judgments = scheme_columns(judgments, Campaign.objects.values_list("scheme", flat=True).get(pk=campaign_id))
    return ShardPart(span=span, judgments=judgments, behaviour=behaviour)


def _kept(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The frame with only ``columns``: the others deleted in place, the kept ones not copied."""
    for column in [c for c in frame.columns if c not in columns]:
        del frame[column]
    return frame


def parts_combine(parts: list[ShardPart]) -> tuple[pd.DataFrame, Behaviour]:
    """The judgments and the behaviour of all the parts' graders, as one shard of them all would
    have found them. ``parts`` in the order of their spans; each gives its judgments up (its frame
    is left empty) once they are in the combined frame."""
    if len(parts) == 1:
        return parts[0].judgments, parts[0].behaviour
    frames = [p.judgments for p in parts if len(p.judgments)] or [parts[0].judgments]
    stacked = _stacked(frames)
    del frames
    for part in parts:  # the parts give their rows up to the combined frame: one copy, not two
        part.judgments = part.judgments.iloc[0:0]
    judgments = stacked.sort_values(["unit", "grader"], kind="stable", ignore_index=True)
    return judgments, behaviour_combine([p.behaviour for p in parts])


def _stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames one after another, column by column: ``pd.concat`` tests every value of an object
    column for being missing (1.7 s at 10^6 judgments, where this takes milliseconds). A column
    that holds integers in one part and floats in another (a NULL query) becomes float, as
    ``pd.concat`` makes it."""
    if len(frames) == 1:
        return frames[0]
    return pd.DataFrame({c: np.concatenate([f[c].to_numpy() for f in frames]) for c in frames[0].columns})


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
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("meta.json", json.dumps(meta))
        for name, frame in (
            ("judgments", part.judgments),
            ("opportunities", b.opportunities),
            ("by_grader", b.by_grader),
            ("events", b.events.rename("events").to_frame()),
        ):
            z.writestr(f"{name}.parquet", _parquet(frame))
    return out.getvalue()


def part_loads(data: bytes) -> ShardPart:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        meta = json.loads(z.read("meta.json"))
        frames = {name: pd.read_parquet(io.BytesIO(z.read(f"{name}.parquet"))) for name in _FRAMES}
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
    return ShardPart(span=(meta["span"][0], meta["span"][1]), judgments=frames["judgments"], behaviour=behaviour)


_FRAMES = ("judgments", "opportunities", "by_grader", "events")


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, engine="pyarrow", compression="lz4")
    return buffer.getvalue()


def _counts(counts: dict) -> dict:
    """Stability counts back from JSON (whose keys are text)."""
    return {**counts, "sizes": {int(k): int(v) for k, v in counts["sizes"].items()}}
