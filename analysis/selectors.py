"""Reads for analysis: campaign data as DataFrames, overview counts, runs and their stored results.

Loading uses ``values_list`` in chunks (never model instances), so a million judgments become a
DataFrame without a million Python objects alive at once.
"""
from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from typing import Any

import pandas as pd
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Count, FloatField, Max, Min, Q, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from analysis.models import AnalysisRun, RunStatus, UnitResult
from grading.models import (
    Assignment,
    Campaign,
    CampaignRole,
    Candidate,
    GradingEvent,
    Judgment,
    Ordering,
    Query,
    SystemOutput,
    Unit,
)
from grading.models.choices import AssignmentStatus, EventType, Role

CHUNK = 50_000
VALUE_EVENTS = (EventType.BROAD_SET, EventType.FINE_SET, EventType.SCORE_SET, EventType.LABEL_SET)
JUDGMENT_COLUMNS = ["unit", "grader", "query", "broad", "fine", "score", "label", "verdict"]


def _chunks(rows: Iterator[tuple], size: int = CHUNK) -> Iterator[list[tuple]]:
    while batch := list(islice(rows, size)):
        yield batch


def _frame(qs: QuerySet, columns: list[str], *, copy: bool = True) -> pd.DataFrame:
    """A values_list query as a DataFrame: on PostgreSQL through COPY … TO STDOUT and pandas' CSV
    parser (a temporary file, not memory, holds the text); elsewhere in chunks of tuples.

    Through COPY every column arrives as its text form (NULL as NaN): callers convert timestamps.
    """
    if copy and connection.vendor == "postgresql":
        sql, params = qs.query.sql_with_params()
        with tempfile.TemporaryFile() as buffer, connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", params) as stream:
                for block in stream:
                    buffer.write(block)
            buffer.seek(0)
            return pd.read_csv(buffer, header=None, names=columns, keep_default_na=False, na_values=[""])
    parts = [pd.DataFrame.from_records(batch, columns=columns) for batch in _chunks(qs.iterator(chunk_size=CHUNK))]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def judgments_frame(*, campaign_id: int) -> pd.DataFrame:
    """One row per (unit, grader) judgment that is not skipped, sorted by unit then grader."""
    qs = (
        Judgment.objects.filter(campaign_id=campaign_id, skipped=False)
        .order_by()
        .values_list("unit_id", "grader_id", "unit__query_id", "broad", Cast("fine", FloatField()), "score",
                     "label", "verdict")
    )
    frame = _frame(qs, JUDGMENT_COLUMNS)
    for column in ("fine", "score"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    for column in ("broad", "label", "verdict"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    # A fixed row order (sorting here is cheaper than ORDER BY in the database): sums, and so the
    # last bits of every mean and std, do not depend on the order the database happened to return.
    return frame.sort_values(["unit", "grader"], kind="stable", ignore_index=True)


def unit_events_frame(*, campaign_id: int) -> pd.DataFrame:
    """Every event about a unit: grader, unit, type, ts (client time, UTC), session_seq, server_ts,
    value (payload.value as text) — one query serves both stability and engagement.

    An audition counts once, when it starts playing: pauses, seeks and ends become ``audition_other``.
    """
    qs = (
        GradingEvent.objects.filter(campaign_id=campaign_id, unit__isnull=False)
        .exclude(type=EventType.ADJUDICATED)  # an organizer's verdict, not a grader's work
        .order_by()
        .values_list("grader_id", "unit_id", "type", "client_ts", "seq", "server_ts", KT("payload__value"),
                     KT("payload__action"))
    )
    frame = _frame(qs, ["grader", "unit", "type", "ts", "session_seq", "server_ts", "value", "action"])
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True, format="ISO8601")
    frame["server_ts"] = pd.to_datetime(frame["server_ts"], utc=True, format="ISO8601")
    frame.loc[(frame["type"] == EventType.AUDITION) & (frame["action"] != "play"), "type"] = "audition_other"
    return frame.drop(columns="action")


def value_events(unit_events: pd.DataFrame) -> pd.DataFrame:
    """The value-setting events (broad_set, fine_set, score_set, label_set) in the order they were made.

    Columns: grader, unit, type, seq (0.. within each grader × unit × type, by client time, then the
    page session's sequence number, then arrival), value (text).
    """
    frame = unit_events[unit_events["type"].isin(VALUE_EVENTS)]
    frame = frame.sort_values(["ts", "session_seq", "server_ts"], kind="stable")
    frame = frame.assign(seq=frame.groupby(["grader", "unit", "type"]).cumcount(), value=frame["value"].astype(str))
    return frame[["grader", "unit", "type", "seq", "value"]].reset_index(drop=True)


def orderings_frame(*, campaign_id: int) -> pd.DataFrame:
    """One row per submitted ordering: query, grader, items (candidate public ids, first = most)."""
    qs = Ordering.objects.filter(campaign_id=campaign_id).order_by("query_id", "grader_id").values_list(
        "query_id", "grader_id", "items")
    return _frame(qs, ["query", "grader", "items"], copy=False)


def system_orderings_frame(*, campaign_id: int) -> pd.DataFrame:
    """One row per system and query: query (id), system (name), ordering (candidate public ids)."""
    qs = SystemOutput.objects.filter(system__campaign_id=campaign_id, unit__isnull=True).order_by(
        "query_id", "system__name").values_list("query_id", "system__name", "ordering")
    return _frame(qs, ["query", "system", "ordering"], copy=False)


ITEM_LABEL_MAX = 80


def candidate_labels(*, campaign_id: int) -> dict[str, str]:
    """Candidate public id -> what organizers see: its text (shortened), else its external id."""
    rows = list(Candidate.objects.filter(campaign_id=campaign_id).values_list("public_id", "external_id", "text"))
    texts = [_shorten(" ".join(text.split())) for _, _, text in rows]
    shared = {t for t, n in Counter(texts).items() if n > 1}
    # Two candidates with the same text are told apart by their external ids.
    return {public: (f"{text} ({ext})" if text in shared else text) if text else ext
            for (public, ext, _), text in zip(rows, texts, strict=True)}


def _shorten(text: str) -> str:
    return text if len(text) <= ITEM_LABEL_MAX else text[:ITEM_LABEL_MAX - 1].rstrip() + "…"


def query_labels(*, campaign_id: int) -> dict[int, str]:
    return {pk: title or ext for pk, ext, title in
            Query.objects.filter(campaign_id=campaign_id).values_list("pk", "external_id", "title")}


def unit_labels(*, unit_ids: list[int]) -> dict[int, dict[str, Any]]:
    rows = Unit.objects.filter(pk__in=unit_ids).values_list("pk", "external_id", "query_id", "candidate__public_id")
    return {pk: {"external_id": ext, "query": q, "candidate": cand} for pk, ext, q, cand in rows}


def grader_pseudonyms(*, campaign_id: int) -> dict[int, str]:
    """user id -> pseudonym for the campaign's graders (a stable fallback when none is set)."""
    rows = CampaignRole.objects.filter(campaign_id=campaign_id, role=Role.GRADER).values_list("user_id", "pseudonym")
    return {user_id: pseudonym or f"grader-{user_id}" for user_id, pseudonym in rows}


def campaign_overview(*, campaign_id: int) -> dict[str, Any]:
    """The Evalutron 6000 summary table: counts and the time span of the event log."""
    campaign = Campaign.objects.get(pk=campaign_id)
    assignments = Assignment.objects.filter(campaign_id=campaign_id).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(status=AssignmentStatus.DONE)),
        open=Count("pk", filter=Q(status=AssignmentStatus.OPEN)),
        skipped=Count("pk", filter=Q(status=AssignmentStatus.SKIPPED)),
    )
    events = GradingEvent.objects.filter(campaign_id=campaign_id).order_by().aggregate(
        n=Count("pk"), first=Min("server_ts"), last=Max("server_ts"))
    judgments = Judgment.objects.filter(campaign_id=campaign_id, skipped=False).order_by().aggregate(
        n=Count("pk"), graders=Count("grader_id", distinct=True), units=Count("unit_id", distinct=True))
    span = (events["last"] - events["first"]).total_seconds() if events["first"] else None
    return {
        "campaign": campaign.name, "scheme": campaign.scheme, "status": campaign.status,
        "guidelines_version": campaign.guidelines_version,
        "units": campaign.units.count(), "queries": campaign.queries.count(),
        "graders": CampaignRole.objects.filter(campaign_id=campaign_id, role=Role.GRADER).count(),
        "active_graders": judgments["graders"], "judgments": judgments["n"], "units_judged": judgments["units"],
        "orderings": Ordering.objects.filter(campaign_id=campaign_id).count(),
        "events": events["n"], "assignments": assignments["total"], "assignments_done": assignments["done"],
        "assignments_open": assignments["open"], "assignments_skipped": assignments["skipped"],
        "first_event": events["first"].isoformat() if events["first"] else None,
        "last_event": events["last"].isoformat() if events["last"] else None,
        "span_seconds": span,
    }


# --- runs ---------------------------------------------------------------------------------------

def run_latest(*, campaign_id: int) -> AnalysisRun | None:
    return AnalysisRun.objects.filter(campaign_id=campaign_id).order_by("-created_at", "-id").first()


def run_latest_good(*, campaign_id: int) -> AnalysisRun | None:
    return (AnalysisRun.objects.filter(campaign_id=campaign_id, status=RunStatus.SUCCEEDED)
            .order_by("-finished_at", "-id").first())


def run_active(*, campaign_id: int) -> AnalysisRun | None:
    return (AnalysisRun.objects.filter(campaign_id=campaign_id, status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
            .order_by("-created_at", "-id").first())


def unit_results(*, run_id: int) -> QuerySet[UnitResult]:
    return UnitResult.objects.filter(run_id=run_id).order_by("unit_id")


def unit_results_extremes(*, run_id: int, measure: str = "std", limit: int = 10) -> dict[str, list[dict[str, Any]]]:
    """The most and least confusable units of a run by ``measure`` (units with ≥ 2 judgments)."""
    base = UnitResult.objects.filter(run_id=run_id, n__gte=2, **{f"{measure}__isnull": False})
    fields = ["unit_id", "unit__external_id", "query_id", "n", "mean", "dif", "std", "entropy"]
    most = list(base.order_by(f"-{measure}", "unit_id").values(*fields)[:limit])
    least = list(base.order_by(measure, "unit_id").values(*fields)[:limit])
    return {"most": most, "least": least}


# --- permissions ----------------------------------------------------------------------------------

def user_can_view_reports(*, user: AbstractBaseUser, campaign_id: int) -> bool:
    """Organizers of the campaign and staff. Graders never see reports."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return CampaignRole.objects.filter(campaign_id=campaign_id, user=user, role=Role.ORGANIZER).exists()


def user_can_export(*, user: AbstractBaseUser) -> bool:
    """Ground truth and raw event logs leave the system through admins only."""
    return bool(user.is_authenticated and user.is_staff)
