"""Checking ``GraderTally`` against the tables, and putting it right (docs/analysis.md, "Counting
where it is written"). The triggers keep the rows true on every path that writes; only writes made
with triggers set aside (``session_replication_role = replica``, a data-only restore with
``--disable-triggers``) can leave them wrong, and a wrong row could let a run take a stale shard."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Count, Max, Min, Q

from grading.models import GraderTally, GradingEvent, Judgment

COUNTED = ("judgments", "kept", "with_broad", "with_score", "with_label", "with_verdict")
COUNTED += ("events", "first_event", "last_event")
NOTHING = dict.fromkeys(COUNTED, 0) | {"first_event": None, "last_event": None}  # a grader with neither


@dataclass(frozen=True)
class TallyDifference:
    """A row that does not say what the tables hold: ``kept`` and ``counted`` by column."""

    campaign: int
    grader: int
    kept: dict
    counted: dict

    def __str__(self) -> str:
        if not self.kept:
            counts = ", ".join(f"{name} {value}" for name, value in self.counted.items() if value)
            return f"campaign {self.campaign}, grader {self.grader}: no row kept; counted {counts}"
        wrong = ", ".join(
            f"{name} {self.kept.get(name)} kept, {self.counted[name]} counted"
            for name in COUNTED
            if self.kept.get(name) != self.counted[name]
        )
        return f"campaign {self.campaign}, grader {self.grader}: {wrong}"


def tally_check(*, campaign_id: int | None = None, fix: bool = False) -> list[TallyDifference]:
    """Count every grader's judgments and events in the tables (one campaign's, or all) and compare
    with their ``GraderTally``. With ``fix``, rewrite each row that differs, moving its ``writes``
    so that a run's fingerprint of that grader changes, with writers held off meanwhile (PostgreSQL:
    a SHARE lock on both tables). Returns the differences found."""
    with transaction.atomic():
        if fix and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("LOCK TABLE grading_judgment, grading_gradingevent IN SHARE MODE")
        counted = tally_counted(campaign_id=campaign_id)
        rows = GraderTally.objects.all() if campaign_id is None else GraderTally.objects.filter(campaign_id=campaign_id)
        kept = {(r["campaign_id"], r["grader_id"]): r for r in rows.values("campaign_id", "grader_id", *COUNTED)}
        differences = []
        for key in sorted(counted.keys() | kept.keys()):
            have = {name: kept[key][name] for name in COUNTED} if key in kept else {}
            should = counted.get(key, NOTHING)
            if have != should and (have or should != NOTHING):
                differences.append(TallyDifference(*key, kept=have, counted=should))
        if fix:
            for difference in differences:
                row, _ = GraderTally.objects.select_for_update().get_or_create(
                    campaign_id=difference.campaign, grader_id=difference.grader
                )
                for name, value in difference.counted.items():
                    setattr(row, name, value)
                row.writes += 1
                row.save()
    return differences


def tally_counted(*, campaign_id: int | None = None) -> dict[tuple[int, int], dict]:
    """What ``GraderTally`` should hold, counted in the tables: per (campaign, grader) with a
    judgment or an event, the row's counted columns (``COUNTED``)."""
    judgments, events = Judgment.objects.all(), GradingEvent.objects.all()
    if campaign_id is not None:
        judgments, events = judgments.filter(campaign_id=campaign_id), events.filter(campaign_id=campaign_id)
    judged = (
        judgments.order_by()
        .values("campaign_id", "grader_id")
        .annotate(
            judgments=Count("pk"),
            kept=Count("pk", filter=Q(skipped=False)),
            with_broad=Count("broad"),
            with_score=Count("score"),
            with_label=Count("label"),
            with_verdict=Count("verdict"),
        )
    )
    logged = (
        events.order_by()
        .values("campaign_id", "grader_id")
        .annotate(events=Count("pk"), first_event=Min("server_ts"), last_event=Max("server_ts"))
    )
    counted: dict[tuple[int, int], dict] = {}
    for row in [*judged, *logged]:
        key = (row.pop("campaign_id"), row.pop("grader_id"))
        counted.setdefault(key, dict(NOTHING)).update(row)
    return counted
