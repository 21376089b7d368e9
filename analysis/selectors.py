"""Reads for analysis: campaign data as DataFrames, overview counts, runs and their stored results.

Loading uses ``values_list`` (never model instances), through COPY on PostgreSQL and in chunks
elsewhere (analysis.pgcopy), so a million judgments become a DataFrame without a million Python
objects alive at once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Case, Count, Exists, FloatField, Max, Min, OuterRef, Q, QuerySet, Subquery, Sum, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from analysis import pgcopy, unit_blocks
from analysis.models import AnalysisRun, RunStatus, SystemEvaluation
from grading.models import (
    Assignment,
    Campaign,
    CampaignRole,
    Candidate,
    CandidateProvenance,
    GoldAnswer,
    GraderTally,
    GradingEvent,
    Judgment,
    Ordering,
    Participant,
    Query,
    RepeatAnswer,
    SystemOutput,
    Unit,
)
from grading.models.choices import ORGANIZER_EVENTS, AssignmentStatus, EventType, Role, Scheme

CHUNK = 50_000
VALUE_EVENTS = (EventType.BROAD_SET, EventType.FINE_SET, EventType.SCORE_SET, EventType.LABEL_SET)
JUDGMENT_COLUMNS = ["unit", "grader", "query", "broad", "fine", "score", "label", "verdict"]
JUDGMENT_TYPES: dict[str, pgcopy.ColumnType] = {
    "unit": "int",
    "grader": "int",
    "query": "int",
    "fine": "float",
    "score": "float",
}


def _frame(
    qs: QuerySet, columns: list[str], *, types: Mapping[str, pgcopy.ColumnType] | None = None, copy: bool = True
) -> pd.DataFrame:
    """A values_list query as a DataFrame, through COPY on PostgreSQL (see analysis.pgcopy)."""
    return pgcopy.query_frame(qs, columns, types or {}, use_copy=copy)


GraderSpan = tuple[int | None, int | None]  # graders with ids from the first (inclusive) to the second (exclusive)


def _of_graders(qs: QuerySet, span: GraderSpan | None) -> QuerySet:
    """Only the graders in ``span`` (None: all; an open end: no bound on that side)."""
    if span is not None and span[0] is not None:
        qs = qs.filter(grader_id__gte=span[0])
    if span is not None and span[1] is not None:
        qs = qs.filter(grader_id__lt=span[1])
    return qs


def in_span(grader: int, span: GraderSpan) -> bool:
    """Whether ``span`` holds the grader, as ``_of_graders`` reads it."""
    low, high = span
    return (low is None or grader >= low) and (high is None or grader < high)


def judgments_frame(*, campaign_id: int, graders: GraderSpan | None = None) -> pd.DataFrame:
    """One row per (unit, grader) judgment that is not skipped, sorted by unit then grader; of the
    graders in ``graders`` only, when given. Judgments of hidden gold units are left out (see
    ``gold_judgments_frame``)."""
    qs = (
        _of_graders(Judgment.objects.filter(campaign_id=campaign_id, skipped=False), graders)
        .filter(unit__gold__isnull=True)  # hidden gold units count toward neither truth nor agreement (§5.6)
        .order_by()
        .values_list(
            "unit_id", "grader_id", "unit__query_id", "broad", Cast("fine", FloatField()), "score", "label", "verdict"
        )
    )
    frame = _frame(qs, JUDGMENT_COLUMNS, types=JUDGMENT_TYPES)
    for column in ("fine", "score"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    for column in ("broad", "label", "verdict"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    # A fixed row order (sorting here is cheaper than ORDER BY in the database): sums, and so the
    # last bits of every mean and std, do not depend on the order the database happened to return.
    return _sorted_by_unit_grader(frame)


def _sorted_by_unit_grader(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame.sort_values(["unit", "grader"], kind="stable", ignore_index=True)``, with the frame and
    one column held at most: each column is taken in order and its unsorted self let go. (pandas'
    sort held 2.5 times the frame: at 2,000,000 judgments, 306 MiB above a frame of 122 MiB.)"""
    order = np.lexsort((frame["grader"].to_numpy(), frame["unit"].to_numpy()))  # stable, as sort_values
    columns = {column: frame.pop(column).to_numpy()[order] for column in list(frame.columns)}
    return pd.DataFrame(columns, copy=False)  # copy=False: each column its own block, not copied again


# Events of a grader on a unit once it was given back to them as a hidden repeat: from then on the
# events service records that unit's answers in the repeat (grading.services.events, §5.6).
_repeat_since = Assignment.objects.filter(
    grader=OuterRef("grader"), unit=OuterRef("unit"), repeat=True, created_at__lte=OuterRef("server_ts")
)


def unit_events_frame(*, campaign_id: int, graders: GraderSpan | None = None) -> pd.DataFrame:
    """Every event about a unit (of the graders in ``graders`` only, when given): grader, unit, type,
    ts (client time, UTC), session_seq, server_ts, value (payload.value as text) — one query serves
    both stability and engagement. ``type`` and ``value`` are categoricals (``pgcopy.code_dtype``):
    a few distinct texts over millions of events, a byte each rather than a pointer.

    An audition counts once, when it starts playing: pauses, seeks and ends become ``audition_other``.
    A page_focus event whose page was hidden becomes ``page_hidden`` (it stops time on unit).
    """
    qs = (
        _of_graders(GradingEvent.objects.filter(campaign_id=campaign_id, unit__isnull=False), graders)
        .exclude(type__in=ORGANIZER_EVENTS)  # an organizer's verdict or gold answer, not a grader's work
        .exclude(Exists(_repeat_since))  # a hidden repeat's answer is no change of the judgment (§5.6)
        .order_by()
        .values_list(
            "grader_id",
            "unit_id",
            "type",
            "client_ts",
            "seq",
            "server_ts",
            KT("payload__value"),
            # Read only where they are used (a third less JSON for the database to take apart).
            Case(When(type=EventType.AUDITION, then=KT("payload__action"))),
            Case(When(type=EventType.PAGE_FOCUS, then=KT("payload__visible"))),
        )
    )
    frame = _frame(
        qs,
        ["grader", "unit", "type", "ts", "session_seq", "server_ts", "value", "action", "visible"],
        types={
            "grader": "int",
            "unit": "int",
            "type": "code",
            "session_seq": "int",
            "ts": "timestamp",
            "server_ts": "timestamp",
            "value": "code",
            "action": "code",
            "visible": "code",
        },
    )
    ts = plausible_client_ts(frame["ts"], frame["server_ts"])
    frame["ts"] = ts.dt.as_unit("ns")  # every value now near its arrival, which nanoseconds reach
    frame.attrs["client_ts_replaced"] = ts.attrs["replaced"]
    del ts
    frame["server_ts"] = frame["server_ts"].dt.as_unit("ns")
    # Types renamed on the codes: an audition that is not a play, and (docs/design.md §5.2) a
    # page_focus whose page left view (visible false), which stops active time on unit.
    kind = frame["type"]
    dtype = pgcopy.code_dtype([*kind.cat.categories, "audition_other", "page_hidden"])
    codes = kind.cat.set_categories(dtype.categories).cat.codes.to_numpy().copy()
    action, visible = frame["action"], frame["visible"]
    not_play = ~action.isin(["play"]).to_numpy()
    codes[(kind == EventType.AUDITION).to_numpy() & not_play] = dtype.categories.get_loc("audition_other")
    hidden = [v for v in visible.cat.categories if str(v).lower() in ("false", "0")]
    codes[(kind == EventType.PAGE_FOCUS).to_numpy() & visible.isin(hidden).to_numpy()] = dtype.categories.get_loc(
        "page_hidden"
    )
    frame["type"] = pd.Categorical.from_codes(codes, dtype=dtype).remove_unused_categories()
    del frame["action"], frame["visible"]  # in place: a drop would copy the other columns
    return frame


def plausible_client_ts(client_ts: pd.Series, server_ts: pd.Series) -> pd.Series:
    """Client timestamps, with the server's in place of any outside the window events are accepted in
    (docs/design.md §2, Timestamps) relative to their arrival. Older versions stored any clock
    reading (year 1, year 9999); the count replaced is in ``.attrs["replaced"]`` for the report.
    Both series as ``pgcopy`` reads timestamps (datetime64[us, UTC], which year 1 fits)."""
    earliest = server_ts - pd.Timedelta(seconds=settings.EVENT_CLIENT_TS_MAX_AGE_SECONDS)
    latest = server_ts + pd.Timedelta(seconds=settings.EVENT_CLIENT_TS_MAX_AHEAD_SECONDS)
    bad = client_ts.isna() | (client_ts < earliest) | (client_ts > latest)
    ts = client_ts.where(~bad, server_ts)
    ts.attrs["replaced"] = int(bad.sum())
    return ts


def value_events(unit_events: pd.DataFrame) -> pd.DataFrame:
    """The value-setting events (broad_set, fine_set, score_set, label_set) in the order they were made.

    Columns: grader, unit, type, seq (0.. within each grader × unit × type, by client time, then the
    page session's sequence number, then arrival), value (text: a categorical of ``unit_events_frame``'s
    texts, a missing value as "None", as ``str`` writes it).
    """
    kind = _codes(unit_events["type"])
    wanted = kind.isin(VALUE_EVENTS).to_numpy()
    # Only the value events' keys sorted; all of them as they are when every event sets a value.
    rows = None if wanted.all() else np.flatnonzero(wanted)
    del wanted
    # The rows' order by time, then session sequence, then arrival (a stable sort, as sort_values),
    # taken from the three columns rather than from copies of the whole frame.
    keys = [_sortable(unit_events[c]) for c in ("server_ts", "session_seq", "ts")]
    order = np.lexsort(keys if rows is None else [k[rows] for k in keys])
    del keys
    if rows is not None:
        order = rows[order]
        del rows
    grader, unit = unit_events["grader"].to_numpy()[order], unit_events["unit"].to_numpy()[order]
    codes = kind.cat.codes.to_numpy()[order]
    seq = _seq(grader, unit, codes)
    value = _texts(_codes(unit_events["value"]), order)
    del order
    types = pd.Categorical.from_codes(codes, dtype=kind.dtype)
    # copy=False: the columns as they are, not copied again into one block of the three integer ones.
    return pd.DataFrame({"grader": grader, "unit": unit, "type": types, "seq": seq, "value": value}, copy=False)


def _codes(column: pd.Series) -> pd.Series:
    """A column as a categorical (``unit_events_frame`` reads its texts as one already)."""
    return column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")


def _seq(*keys: np.ndarray) -> np.ndarray:
    """0, 1, … along the rows of each distinct combination of ``keys``, in the rows' order: a
    groupby's cumcount, from one stable sort instead of a hash table of every key."""
    by = np.lexsort(keys[::-1])  # stable: within a combination, the rows stay in their order
    n = len(by)
    start = np.zeros(n, dtype=bool)  # where a combination starts, in sorted order
    for key in keys:
        sorted_key = key[by]
        start[1:] |= sorted_key[1:] != sorted_key[:-1]
        del sorted_key
    start[:1] = True
    rank = np.arange(n, dtype=np.int64)
    first = np.where(start, rank, 0)
    del start
    np.maximum.accumulate(first, out=first)  # each row's combination's first position
    rank -= first
    first[by] = rank  # the ranks back in the rows' order, in the buffer no longer needed
    return first


def _texts(column: pd.Series, order: np.ndarray) -> pd.Categorical:
    """The categorical ``column``'s values at ``order`` as text: a missing value becomes "None",
    what ``astype(str)`` makes of the None a text column reads."""
    categories = [str(c) for c in column.cat.categories]
    codes = column.cat.codes.to_numpy()[order]
    missing = codes < 0
    if missing.any():
        if "None" not in categories:
            categories.append("None")
        codes = np.where(missing, categories.index("None"), codes)
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))


def _sortable(column: pd.Series) -> np.ndarray:
    """A column's values as numpy sorts them (a time zone's timestamps as UTC datetime64, not objects)."""
    if isinstance(column.dtype, pd.DatetimeTZDtype):
        return column.to_numpy(dtype=f"datetime64[{column.dtype.unit}]")
    return column.to_numpy()


def orderings_frame(*, campaign_id: int) -> pd.DataFrame:
    """One row per submitted ordering: query, grader, items (candidate public ids, first = most)."""
    qs = (
        Ordering.objects.filter(campaign_id=campaign_id)
        .order_by("query_id", "grader_id")
        .values_list("query_id", "grader_id", "items")
    )
    return _frame(qs, ["query", "grader", "items"], types={"query": "int", "grader": "int"}, copy=False)


def system_orderings_frame(*, campaign_id: int) -> pd.DataFrame:
    """One row per system and query: query (id), system (name), ordering (candidate public ids)."""
    qs = (
        SystemOutput.objects.filter(system__campaign_id=campaign_id, unit__isnull=True)
        .order_by("query_id", "system__name")
        .values_list("query_id", "system__name", "ordering")
    )
    return _frame(qs, ["query", "system", "ordering"], types={"query": "int"}, copy=False)


ITEM_LABEL_MAX = 80


def candidate_labels(*, campaign_id: int) -> dict[str, str]:
    """Candidate public id -> what organizers see: its text (shortened), else its external id."""
    rows = list(Candidate.objects.filter(campaign_id=campaign_id).values_list("public_id", "external_id", "text"))
    texts = [_shorten(" ".join(text.split())) for _, _, text in rows]
    shared = {t for t, n in Counter(texts).items() if n > 1}
    # Two candidates with the same text are told apart by their external ids.
    return {
        public: (f"{text} ({ext})" if text in shared else text) if text else ext
        for (public, ext, _), text in zip(rows, texts, strict=True)
    }


def _shorten(text: str) -> str:
    return text if len(text) <= ITEM_LABEL_MAX else text[: ITEM_LABEL_MAX - 1].rstrip() + "…"


def query_labels(*, campaign_id: int) -> dict[int, str]:
    return {
        pk: title or ext
        for pk, ext, title in Query.objects.filter(campaign_id=campaign_id).values_list("pk", "external_id", "title")
    }


def unit_labels(*, unit_ids: list[int]) -> dict[int, dict[str, Any]]:
    rows = Unit.objects.filter(pk__in=unit_ids).values_list("pk", "external_id", "query_id", "candidate__public_id")
    return {pk: {"external_id": ext, "query": q, "candidate": cand} for pk, ext, q, cand in rows}


def comment_list(*, campaign_id: int, limit: int = 500) -> list[dict[str, Any]]:
    """Graders' comments on units (the current text of each), the first `limit` in unit order (the
    campaign's), then by grader: unit id and external id, grader id, text, last change. Read through
    the partial index of commented judgments: the cost is the comments', not the campaign's."""
    rows = (
        Judgment.objects.filter(campaign_id=campaign_id)
        .exclude(comment="")
        .order_by("unit_id", "grader_id")
        .values("unit_id", "unit__external_id", "grader_id", "comment", "updated_at")[:limit]
    )
    return [
        {
            "unit": r["unit_id"],
            "external_id": r["unit__external_id"],
            "grader": r["grader_id"],
            "text": r["comment"],
            "when": r["updated_at"],
        }
        for r in rows
    ]


def comment_count(*, campaign_id: int) -> int:
    """How many judgments of the campaign have a comment (from the same index)."""
    return Judgment.objects.filter(campaign_id=campaign_id).exclude(comment="").count()


def grader_pseudonyms(*, campaign_id: int) -> dict[int, str]:
    """user id -> pseudonym for the campaign's graders (a stable fallback when none is set)."""
    rows = CampaignRole.objects.filter(campaign_id=campaign_id, role=Role.GRADER).values_list("user_id", "pseudonym")
    return {user_id: pseudonym or f"grader-{user_id}" for user_id, pseudonym in rows}


def excluded_graders(*, campaign_id: int) -> list[dict[str, Any]]:
    """The campaign's excluded graders (grading.services.exclusion), by date: grader (user id),
    pseudonym, reason, excluded_at and by (``automatic``, or the user name of the organizer who
    excluded them; ``an organizer`` once that account is gone). The analysis leaves their judgments out."""
    rows = (
        CampaignRole.objects.filter(campaign_id=campaign_id, role=Role.GRADER, excluded_at__isnull=False)
        .order_by("excluded_at", "user_id")
        .values_list(
            "user_id", "pseudonym", "exclusion_reason", "excluded_at", "exclusion_automatic", "excluded_by__username"
        )
    )
    return [
        {
            "grader": uid,
            "pseudonym": pseudonym or f"grader-{uid}",
            "reason": reason,
            "excluded_at": at,
            "by": "automatic" if automatic else (organizer or "an organizer"),
        }
        for uid, pseudonym, reason, at, automatic, organizer in rows
    ]


def excluded_grader_ids(*, campaign_id: int) -> set[int]:
    """The user ids of the campaign's excluded graders (``excluded_graders``)."""
    return {e["grader"] for e in excluded_graders(campaign_id=campaign_id)}


def without_graders(frame: pd.DataFrame, excluded: set[int]) -> pd.DataFrame:
    """The frame without the excluded graders' rows (the frame itself when nobody is excluded):
    what an analysis reads of a campaign whose graders some are excluded."""
    if not excluded or frame.empty:
        return frame
    kept = frame[~frame["grader"].isin(excluded)].reset_index(drop=True)
    kept.attrs = dict(frame.attrs)
    return kept


@dataclass(frozen=True)
class Judged:
    """What a run read of a campaign's judgments (``judgments_frame``'s rows: not skipped, of units
    that are not hidden gold, of graders whose work counts): how many, by whom, of how many units."""

    judgments: int
    graders: frozenset[int]
    units: int


def campaign_overview(
    *,
    campaign_id: int,
    excluded: set[int] | frozenset[int] = frozenset(),
    judged: Judged | None = None,
    log: EventLog | None = None,
) -> dict[str, Any]:
    """The Evalutron 6000 summary table: counts and the time span of the event log. Judgments,
    orderings and the graders who made them count only graders whose work counts (not the
    `excluded` user ids, counted apart); events and assignments are the log's, everyone's.

    ``judged``: the judgments an analysis run read, which the counts then start from (the database
    adds the judgments of hidden gold units): counting distinct graders and units of 10^7
    judgments in the database took 3 s. ``log``: the event log as a run counted it when it planned
    its shards (``events_per_grader``), instead of counting the events again (2.8 s at 2 x 10^7
    events), with the skipped judgments and the units when it counted them (``judgments_per_grader``;
    0.8 s at 10^7 judgments in a pass of their own)."""
    campaign = Campaign.objects.get(pk=campaign_id)
    assignments = Assignment.objects.filter(campaign_id=campaign_id).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=AssignmentStatus.DONE)),
        open=Count("pk", filter=Q(status=AssignmentStatus.OPEN)),
        skipped=Count("pk", filter=Q(status=AssignmentStatus.SKIPPED)),
    )
    skips = GradingEvent.objects.filter(campaign_id=campaign_id, type=EventType.SKIP).count()
    if log is None:
        counted = (
            GradingEvent.objects.filter(campaign_id=campaign_id)
            .order_by()
            .aggregate(n=Count("pk"), first=Min("server_ts"), last=Max("server_ts"))
        )
        log = EventLog(counted["n"], _stamp(counted["first"]), _stamp(counted["last"]))
    first, last = (None if t is None else datetime.fromisoformat(t) for t in (log.first, log.last))
    read, judged = judged, Judgment.objects.filter(campaign_id=campaign_id, skipped=False)
    judgments = _judged_counts(judged, campaign_id=campaign_id, excluded=excluded, read=read)
    left_out = judged.filter(grader_id__in=excluded).count() if excluded else 0
    span = (last - first).total_seconds() if first and last else None
    orderings = (
        Ordering.objects.filter(campaign_id=campaign_id)
        .exclude(grader_id__in=excluded)
        .order_by()
        .aggregate(n=Count("pk"), graders=Count("grader_id", distinct=True), queries=Count("query_id", distinct=True))
    )
    if campaign.scheme == Scheme.ORDERING:  # graders order queries: they make orderings, not judgments
        judgments.update(graders=orderings["graders"])
    out = {
        "campaign": campaign.name,
        "scheme": campaign.scheme,
        "status": campaign.status,
        "guidelines_version": campaign.guidelines_version,
        "units": log.units if log.units is not None else campaign.units.count(),
        "queries": campaign.queries.count(),
        "graders": CampaignRole.objects.filter(campaign_id=campaign_id, role=Role.GRADER).count(),
        "graders_excluded": len(excluded),
        "active_graders": judgments["graders"],
        "judgments": judgments["n"],
        "judgments_of_excluded_graders": left_out,
        "units_judged": judgments["units"],
        "orderings": orderings["n"],
        **({"queries_ordered": orderings["queries"]} if campaign.scheme == Scheme.ORDERING else {}),
        "events": log.events,
        "assignments": assignments["total"],
        "assignments_done": assignments["done"],
        "assignments_open": assignments["open"],
        "assignments_skipped": assignments["skipped"],
        "skips": skips,
        "judgments_skipped_now": (
            log.skipped
            if log.skipped is not None
            else Judgment.objects.filter(campaign_id=campaign_id, skipped=True).count()
        ),
        "first_event": log.first,
        "last_event": log.last,
        "span_seconds": span,
    }
    if campaign.scheme == Scheme.ORDERING:
        del out["judgments"], out["units_judged"], out["judgments_of_excluded_graders"]
    return out


def _judged_counts(
    judged: QuerySet, *, campaign_id: int, excluded: set[int] | frozenset[int], read: Judged | None
) -> dict[str, int]:
    """Judgments (n), their graders and their units, of graders not ``excluded``: all from the
    database, or from what a run ``read`` plus the judgments of hidden gold units, which it does
    not read (their units are apart from the read ones)."""
    counted = judged.exclude(grader_id__in=excluded).order_by()
    if read is None:
        return counted.aggregate(
            n=Count("pk"), graders=Count("grader_id", distinct=True), units=Count("unit_id", distinct=True)
        )
    gold = counted.filter(unit_id__in=Unit.objects.filter(campaign_id=campaign_id, gold__isnull=False).values("pk"))
    counts = gold.aggregate(n=Count("pk"), units=Count("unit_id", distinct=True))
    graders = read.graders | set(gold.values_list("grader_id", flat=True).distinct())
    return {"n": read.judgments + counts["n"], "graders": len(graders), "units": read.units + counts["units"]}


# --- runs ---------------------------------------------------------------------------------------


def run_latest(*, campaign_id: int) -> AnalysisRun | None:
    """The campaign's latest run of any state, without its result (read on access): the report shows
    its state, and reads the result of the latest good run once (`run_latest_good`)."""
    return AnalysisRun.objects.filter(campaign_id=campaign_id).defer("result").order_by("-created_at", "-id").first()


def run_latest_good(*, campaign_id: int) -> AnalysisRun | None:
    return (
        AnalysisRun.objects.filter(campaign_id=campaign_id, status=RunStatus.SUCCEEDED)
        .order_by("-finished_at", "-id")
        .first()
    )


# The per-query figures make up most of a large campaign's result (2,000 queries: 400 KB of 420 KB).
_RESULT_FOR_PAGE_SQL = """
SELECT r.result - 'queries',
       jsonb_array_length(r.result -> 'queries'),
       (SELECT jsonb_agg(e.q ORDER BY e.rank)
          FROM (SELECT q, row_number() OVER (
                         ORDER BY coalesce((q ->> 'disagreement_pct')::float8, 0) DESC, i) AS rank
                  FROM jsonb_array_elements(r.result -> 'queries') WITH ORDINALITY AS a(q, i)) AS e
         WHERE e.rank <= %s)
  FROM {table} AS r
 WHERE r.id = %s AND jsonb_typeof(r.result -> 'queries') = 'array'
"""


# A campaign may have thousands of queries: the report page shows the most disagreeing ones.
PAGE_QUERIES = 40


def page_result_of(result: dict[str, Any]) -> dict[str, Any]:
    """The result as the report page reads it: ``queries`` holds only the PAGE_QUERIES queries with
    the most disagreement and ``queries_total`` says how many the result has. Stored with the run
    (``AnalysisRun.page_result``), so that the page never reads the rest."""
    queries = result.get("queries")
    if not isinstance(queries, list):
        return result
    return {**result, "queries": most_disagreeing(queries, PAGE_QUERIES), "queries_total": len(queries)}


def most_disagreeing(queries: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The `limit` queries with the most units in disagreement, most first (ties, and a missing
    figure counted as 0, in the given order): the rule _RESULT_FOR_PAGE_SQL follows too."""
    return sorted(queries, key=lambda q: -(q.get("disagreement_pct") or 0.0))[:limit]


def run_latest_good_for_page(*, campaign_id: int, page_queries: int) -> AnalysisRun | None:
    """The latest good run with its result as the report page needs it: ``queries`` holds only the
    `page_queries` queries with the most disagreement (most first; ties in the result's order) and
    ``queries_total`` says how many the result has. The page shows no more than that; the table's CSV
    reads the whole result (`run_latest_good`).

    A run stored with its page cut (``page_result``, PAGE_QUERIES queries) is read with it in one
    query. For a run stored before, on PostgreSQL the database picks the queries from the stored JSON
    (at 10^7 judgments, 20,000 queries: 41 ms a request), so the page neither receives nor decodes
    the rest; elsewhere the whole result is decoded and cut here, to the same rows."""
    runs = AnalysisRun.objects.filter(campaign_id=campaign_id, status=RunStatus.SUCCEEDED).defer("result")
    if page_queries != PAGE_QUERIES:
        runs = runs.defer("page_result")
    run = runs.order_by("-finished_at", "-id").first()
    if run is None:
        return None
    if page_queries == PAGE_QUERIES and run.page_result is not None:
        run.result = run.page_result
        return run
    row = None
    if pgcopy.available():
        with connection.cursor() as cursor:
            cursor.execute(_RESULT_FOR_PAGE_SQL.format(table=AnalysisRun._meta.db_table), [page_queries, run.pk])
            row = cursor.fetchone()
    if row is not None:
        rest, total, shown = (json.loads(v) if isinstance(v, str) else v for v in row)
        run.result = {**rest, "queries": shown or [], "queries_total": total}
    else:
        result = run.result or {}  # read on access: the whole result
        queries = result.get("queries")
        if isinstance(queries, list):
            result = {**result, "queries": most_disagreeing(queries, page_queries), "queries_total": len(queries)}
        run.result = result
    return run


def system_evaluation_get(
    *, run_id: int, aggregate: str, measure: str, threshold: float | None
) -> SystemEvaluation | None:
    """The run's stored evaluation of the uploaded system scores under these settings, if asked for."""
    key = SystemEvaluation.key_of(aggregate=aggregate, measure=measure, threshold=threshold)
    return SystemEvaluation.objects.filter(run_id=run_id, key=key).first()


def run_active(*, campaign_id: int) -> AnalysisRun | None:
    """The campaign's queued or running run, without its result (read on access)."""
    return (
        AnalysisRun.objects.filter(campaign_id=campaign_id, status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        .defer("result")
        .order_by("-created_at", "-id")
        .first()
    )


def unit_results(*, run_id: int) -> unit_blocks.RunUnits:
    """A run's stored per-unit results (``unit_blocks.RunUnits``: read a block at a time)."""
    return unit_blocks.RunUnits(run_id)


# --- permissions ----------------------------------------------------------------------------------


def campaign_get(*, campaign_id: int) -> Campaign | None:
    """The campaign, or None; who may know of it is for `user_knows_campaign` to say."""
    return Campaign.objects.filter(pk=campaign_id).first()


def runs_recent(*, campaign_id: int, limit: int = 20) -> list[AnalysisRun]:
    """The campaign's latest runs, newest first, without their results (a run's result is megabytes of
    JSON at 10^7 judgments; the list shows each run's state, not its figures)."""
    runs = AnalysisRun.objects.filter(campaign_id=campaign_id).defer("result", "page_result")
    return list(runs.order_by("-created_at", "-id")[:limit])


def run_get(*, run_id: int) -> AnalysisRun | None:
    return AnalysisRun.objects.filter(pk=run_id).first()


def judgment_rows(*, campaign_id: int, fields: list[str], chunk: int) -> Iterator[tuple[Any, ...]]:
    """The campaign's judgments, by unit then grader, as tuples of `fields`, read `chunk` rows at a time."""
    return (
        Judgment.objects.filter(campaign_id=campaign_id)
        .order_by("unit_id", "grader_id")
        .values_list(*fields)
        .iterator(chunk_size=chunk)
    )


def ordering_rows(*, campaign_id: int, chunk: int) -> Iterator[tuple[str, int, list[str]]]:
    """The campaign's orderings as (query's external id, grader id, items), by query then grader."""
    return (
        Ordering.objects.filter(campaign_id=campaign_id)
        .order_by("query__position", "query_id", "grader_id")
        .values_list("query__external_id", "grader_id", "items")
        .iterator(chunk_size=chunk)
    )


def candidate_external_ids(*, campaign_id: int) -> dict[str, str]:
    """public id -> external id of the campaign's candidates."""
    return dict(Candidate.objects.filter(campaign_id=campaign_id).values_list("public_id", "external_id"))


def user_can_view_reports(*, user: AbstractBaseUser, campaign_id: int) -> bool:
    """Organizers of the campaign and staff. Graders never see reports."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return CampaignRole.objects.filter(campaign_id=campaign_id, user=user, role=Role.ORGANIZER).exists()


def user_knows_campaign(*, user: AbstractBaseUser, campaign_id: int) -> bool:
    """Whether the user may know the campaign exists (a role in it, or staff): anyone else is
    answered 404, never 403, so that refusals do not reveal which campaigns exist."""
    if not user.is_authenticated:
        return False
    return user.is_staff or CampaignRole.objects.filter(campaign_id=campaign_id, user=user).exists()


def user_can_export(*, user: AbstractBaseUser) -> bool:
    """Ground truth and raw event logs leave the system through admins only."""
    return bool(user.is_authenticated and user.is_staff)


# --- systems in rating campaigns (docs/design.md §5.7) --------------------------------------------


def provenance_frame(*, campaign_id: int) -> pd.DataFrame:
    """Which system returned which unit's candidate for the unit's query: columns system (name),
    query (id), unit (id). Provenance without a query, or naming a query the candidate is not
    paired with in a unit, has no unit and is left out."""
    provenance = CandidateProvenance.objects.filter(system__campaign_id=campaign_id, query__isnull=False)
    rows = list(provenance.values_list("system__name", "query_id", "candidate_id"))
    if not rows:  # most campaigns: no need to read every unit (2,000,000 of them took 1.5 s and 0.7 GB)
        return pd.DataFrame([], columns=["system", "query", "unit"])
    # Only the units of queries some system returned candidates for, in the units' order: where two
    # units pair the same candidate with a query, the last one counts.
    pairs = Unit.objects.filter(campaign_id=campaign_id, query_id__in=provenance.values("query_id")).values_list(
        "query_id", "candidate_id", "pk"
    )
    unit_of = {(q, c): u for q, c, u in pairs}
    kept = [(s, q, unit_of[(q, c)]) for s, q, c in rows if (q, c) in unit_of]
    return pd.DataFrame(kept, columns=["system", "query", "unit"])


def system_unit_scores_frame(*, campaign_id: int) -> pd.DataFrame:
    """Uploaded per-unit system scores: columns system (name), unit (id), score."""
    qs = (
        SystemOutput.objects.filter(system__campaign_id=campaign_id, unit__isnull=False)
        .order_by("system__name", "unit_id")
        .values_list("system__name", "unit_id", "score")
    )
    return _frame(qs, ["system", "unit", "score"], copy=False)


def unit_results_frame(*, run_id: int) -> pd.DataFrame:
    """A run's per-unit aggregates and confusability, indexed by unit."""
    columns = ["unit", "n", "mean", "median", "majority", "dif", "std", "entropy"]
    return unit_blocks.RunUnits(run_id).frame(columns).set_index("unit").astype(float)


def unit_keys_frame(*, campaign_id: int) -> pd.DataFrame:
    """Each unit's id, external id and the external ids of its candidate(s) (candidate_b: pairwise)."""
    rows = Unit.objects.filter(campaign_id=campaign_id).values_list(
        "pk", "external_id", "candidate__external_id", "candidate_b__external_id"
    )
    return pd.DataFrame(list(rows), columns=["unit", "external_id", "candidate", "candidate_b"])


def campaign_links(*, campaign_id: int) -> tuple[int | None, int | None]:
    """The campaign's linked sibling (reproducibility) and pairwise (resolution) campaign ids."""
    row = Campaign.objects.filter(pk=campaign_id).values_list("sibling_campaign_id", "pairwise_campaign_id").first()
    return row if row else (None, None)


def campaigns_with_reports(*, user: AbstractBaseUser) -> QuerySet[Campaign]:
    """The campaigns whose reports the user sees: all for staff, else those they organize."""
    campaigns = Campaign.objects.order_by("name")
    if user.is_staff:
        return campaigns
    return campaigns.filter(roles__user=user, roles__role=Role.ORGANIZER).distinct()


# --- one unit, for the organizer's unit page ----------------------------------------------------------

UNIT_PAGE_MAX_EVENTS = 500


def unit_for_page(*, campaign_id: int, unit_id: int) -> Unit | None:
    return (
        Unit.objects.select_related("campaign", "query", "candidate", "candidate_b")
        .filter(pk=unit_id, campaign_id=campaign_id)
        .first()
    )


def unit_judgments(*, unit: Unit) -> list[Judgment]:
    """The unit's judgments by grader id, each with its grader loaded."""
    return list(Judgment.objects.filter(unit=unit).select_related("grader").order_by("grader_id"))


def unit_event_rows(*, unit: Unit, limit: int = UNIT_PAGE_MAX_EVENTS) -> list[dict[str, Any]]:
    """The unit's first ``limit`` events in arrival order, as dicts (no payload objects built twice)."""
    return list(
        GradingEvent.objects.filter(unit=unit)
        .order_by("server_ts", "seq")
        .values("grader_id", "type", "payload", "client_ts", "server_ts", "session_id", "seq")[:limit]
    )


def unit_result(*, run: AnalysisRun | None, unit: Unit) -> dict[str, Any] | None:
    """The unit's values in the run's per-unit results (``unit_blocks.COLUMNS``), or None."""
    return unit_blocks.RunUnits(run.pk).row(unit.pk) if run else None


def unit_provenance(*, unit: Unit) -> list[Any]:
    """Which systems returned the unit's candidate, for which query, at which rank."""
    return list(unit.candidate.provenance.select_related("system", "query").order_by("system__name"))


# --- hidden units (docs/design.md §5.6): graders' answers on gold units ------------------------------


def gold_judgments_frame(*, campaign_id: int, field: str) -> pd.DataFrame:
    """One row per judgment of a gold unit that gives a value: grader, unit, value (the grader's, in
    the judgment column ``field``: broad, score, label or verdict) and gold (the organizer's, as text)."""
    rows = (
        Judgment.objects.filter(
            campaign_id=campaign_id, skipped=False, unit__gold__isnull=False, **{f"{field}__isnull": False}
        )
        .order_by("unit_id", "grader_id")
        .values_list("grader_id", "unit_id", field, "unit__gold__value")
    )
    return pd.DataFrame(list(rows), columns=["grader", "unit", "value", "gold"])


def repeat_pairs_frame(*, campaign_id: int, fields: list[str]) -> pd.DataFrame:
    """One row per answered hidden repeat: grader, unit, and for each of ``fields`` (judgment columns)
    ``first_<field>`` (the grader's judgment) and ``again_<field>`` (the repeat's answer). Rows where
    either answer lacks one of the fields are left out."""
    judgment = Judgment.objects.filter(grader=OuterRef("grader"), unit=OuterRef("unit"))
    qs = (
        RepeatAnswer.objects.filter(campaign_id=campaign_id, skipped=False)
        .annotate(**{f"first_{f}": Subquery(judgment.values(f)[:1]) for f in fields})
        .order_by("grader_id", "unit_id")
        .values_list("grader_id", "unit_id", *fields, *(f"first_{f}" for f in fields))
    )
    columns = ["grader", "unit", *(f"again_{f}" for f in fields), *(f"first_{f}" for f in fields)]
    return pd.DataFrame(list(qs), columns=columns).dropna().reset_index(drop=True)


def participants_rows(*, campaign_id: int) -> list[dict[str, Any]]:
    """The campaign's crowd participants in the order they joined (three queries): their platform
    ids, pseudonym, link, when they joined, units assigned, units rated (judged, not skipped; hidden
    repeats not counted), units still open, and when their last unit was finished."""
    participants = list(
        Participant.objects.filter(campaign_id=campaign_id)
        .order_by("pk")
        .values(
            "user_id",
            "platform",
            "external_id",
            "study_id",
            "session_id",
            "link_id",
            "created_at",
            "qualified_at",
            "screened_out_at",
            "link__pay_per_unit",
            "link__pay_per_hour",
            "link__currency",
        )
    )
    roles = {
        uid: (pseudonym, excluded_at, reason)
        for uid, pseudonym, excluded_at, reason in CampaignRole.objects.filter(
            campaign_id=campaign_id, role=Role.GRADER
        ).values_list("user_id", "pseudonym", "excluded_at", "exclusion_reason")
    }
    counts = {
        row["grader_id"]: row
        for row in Assignment.objects.filter(
            campaign_id=campaign_id, repeat=False, grader_id__in=[p["user_id"] for p in participants]
        )
        .order_by()
        .values("grader_id")
        .annotate(
            assigned=Count("pk"),
            rated=Count("pk", filter=Q(status=AssignmentStatus.DONE)),
            open=Count("pk", filter=Q(status=AssignmentStatus.OPEN)),
            last=Max("completed_at"),
        )
    }
    rows = []
    for p in participants:
        c = counts.get(p["user_id"], {"assigned": 0, "rated": 0, "open": 0, "last": None})
        rows.append(
            {
                **p,
                "pseudonym": roles.get(p["user_id"], ("", None, ""))[0],
                "excluded_at": roles.get(p["user_id"], ("", None, ""))[1],
                "excluded_reason": roles.get(p["user_id"], ("", None, ""))[2],
                "units_assigned": c["assigned"],
                "units_rated": c["rated"],
                "completed_at": c["last"] if c["assigned"] and not c["open"] else None,
            }
        )
    return rows


@dataclass(frozen=True)
class GraderJudgments:
    """A grader's judgments in a campaign, counted for a run's plan."""

    grader: int
    kept: int  # not skipped: what a run's shards are cut by (analysis.services.shards)
    n: int  # all of them, and every insert, change and delete of one: what a shard's fingerprint sums up
    writes: int
    valued: int | None = None  # with a value in the scheme's value field (the report's accounting)


def judgments_per_grader(*, campaign_id: int, value_field: str | None = None) -> list[GraderJudgments]:
    """Every grader with a judgment in the campaign, by grader id, read from their ``GraderTally``
    (a row per grader, kept by the database as judgments are written: docs/analysis.md, "Counting
    where it is written"). It serves the shards' plan, their fingerprints (``shard_inputs``) and the
    report's counts (``EventLog``). ``value_field``: the scheme's value field, whose judgments with a
    value are counted too (``valued``)."""
    columns = ["grader_id", "kept", "judgments", "writes"] + ([f"with_{value_field}"] if value_field else [])
    rows = GraderTally.objects.filter(campaign_id=campaign_id, judgments__gt=0).order_by("grader_id")
    return [GraderJudgments(*row) for row in rows.values_list(*columns)]


@dataclass(frozen=True)
class GraderEvents:
    """A grader's events in a campaign, counted for a run's plan: how many (what a shard's
    fingerprint sums up), and the first and last server time (the overview's span)."""

    grader: int
    n: int
    first: str | None
    last: str | None


def events_per_grader(*, campaign_id: int) -> list[GraderEvents]:
    """Every grader with an event in the campaign, by grader id, read from their ``GraderTally``: it
    serves the shards' fingerprints (``shard_inputs``) and the overview's counts (``EventLog``)."""
    rows = (
        GraderTally.objects.filter(campaign_id=campaign_id, events__gt=0)
        .order_by("grader_id")
        .values_list("grader_id", "events", "first_event", "last_event")
    )
    return [GraderEvents(grader, n, _stamp(first), _stamp(last)) for grader, n, first, last in rows]


@dataclass(frozen=True)
class EventLog:
    """The campaign's log as the report shows it, counted when a run planned its shards
    (``AnalysisRun.event_log``): how many events, the first and the last server time (ISO 8601),
    and of the judgments how many are skipped (the overview) and how many have a value (the
    accounting; None when the run did not count them: the report then counts them itself), and
    the campaign's units (``CampaignUnits``, which the plan's fingerprints count; None: the
    overview counts them)."""

    events: int
    first: str | None
    last: str | None
    skipped: int | None = None
    valued: int | None = None
    units: int | None = None

    @classmethod
    def of(
        cls, logged: list[GraderEvents], judged: list[GraderJudgments] | None = None, units: int | None = None
    ) -> EventLog:
        firsts, lasts = [g.first for g in logged if g.first], [g.last for g in logged if g.last]
        first = min(firsts, default=None, key=datetime.fromisoformat)
        last = max(lasts, default=None, key=datetime.fromisoformat)
        skipped = None if judged is None else sum(g.n - g.kept for g in judged)
        valued = None if judged is None or any(g.valued is None for g in judged) else sum(g.valued for g in judged)
        return cls(sum(g.n for g in logged), first, last, skipped, valued, units)

    def stored(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "first": self.first,
            "last": self.last,
            "skipped": self.skipped,
            "valued": self.valued,
            "units": self.units,
        }

    @classmethod
    def loaded(cls, stored: Mapping[str, Any] | None) -> EventLog | None:
        if not stored:
            return None
        got = stored.get
        return cls(int(stored["events"]), stored["first"], stored["last"], got("skipped"), got("valued"), got("units"))


@dataclass(frozen=True)
class CampaignUnits:
    """The campaign's units, summarised so that adding, deleting or moving one to another query
    changes the summary: how many, the highest id and the sum of their query ids."""

    n: int
    last: int | None
    queries: int | None

    @classmethod
    def counted(cls, *, campaign_id: int) -> CampaignUnits:
        """One aggregate over the campaign's units (0.07 s at 2,000,000 units): the plan's
        fingerprints and the report's overview take it from the run's plan."""
        units = Unit.objects.filter(campaign_id=campaign_id).aggregate(
            n=Count("pk"), last=Max("pk"), queries=Sum(Coalesce("query_id", 0))
        )
        return cls(units["n"], units["last"], units["queries"])


def shard_inputs(
    *,
    campaign_id: int,
    judged: list[GraderJudgments] | None = None,
    logged: list[GraderEvents] | None = None,
    units: CampaignUnits | None = None,
) -> tuple[list[Any], dict[int, list[Any]]]:
    """What a shard's part is made from, summarised so that any change to it changes the summary
    (analysis.services.reuse): the campaign's units and hidden gold (which units and queries the
    judgments belong to, and which count), and per grader their judgments (any insert, change or
    delete moves the count of writes), their events (never
    changed nor deleted: the count says whether any came) and their hidden repeats (which of their
    events count). ``judged`` and ``logged``: the campaign's ``judgments_per_grader`` and
    ``events_per_grader``, and ``units``, when the caller has them."""
    units = units or CampaignUnits.counted(campaign_id=campaign_id)
    gold = GoldAnswer.objects.filter(campaign_id=campaign_id).aggregate(
        n=Count("pk"), units=Sum("unit_id"), changed=Max("updated_at")
    )
    campaign = [units.n, units.last, units.queries, gold["n"], gold["units"], _stamp(gold["changed"])]
    graders: dict[int, list[Any]] = {}
    for row in judgments_per_grader(campaign_id=campaign_id) if judged is None else judged:
        graders.setdefault(row.grader, []).extend(["judgments", row.n, row.writes])
    for row in events_per_grader(campaign_id=campaign_id) if logged is None else logged:
        graders.setdefault(row.grader, []).extend(["events", row.n])
    for grader, *summary in _per_grader(Assignment.objects.filter(campaign_id=campaign_id, repeat=True), "created_at"):
        graders.setdefault(grader, []).extend(["repeats", *summary])
    return campaign, graders


def _per_grader(qs: QuerySet, moment: str) -> Iterator[tuple[int, int, int, str | None]]:
    """Per grader of ``qs``'s rows: (grader, how many, the highest id, the latest ``moment``)."""
    rows = (
        qs.order_by()
        .values("grader_id")
        .annotate(n=Count("pk"), last=Max("pk"), latest=Max(moment))
        .values_list("grader_id", "n", "last", "latest")
    )
    return ((grader, n, last, _stamp(latest)) for grader, n, last, latest in rows)


def _stamp(moment: Any) -> str | None:
    return None if moment is None else moment.isoformat()
