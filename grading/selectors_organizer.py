"""Reads for organizers: the home page's campaign summaries and the live progress dashboard.

Each summary or dashboard is a fixed number of grouped queries, however many campaigns, graders
or units there are (the home page's query count is asserted in the tests).
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils import timezone

from grading import hooks
from grading.models import (
    Assignment,
    AuditEntry,
    Campaign,
    CampaignRole,
    GoldAnswer,
    GradingEvent,
    JoinLink,
    Participant,
    Unit,
)
from grading.models.choices import ORGANIZER_EVENTS, AssignmentStatus, EventType, Role, Scheme

# A grader with open work and no event for this long is "idle" on the home page.
IDLE_AFTER = timedelta(days=2)
# The pace behind the time-left estimate: judgments completed in this recent window.
PACE_WINDOW = timedelta(hours=1)
WAITING_SHOWN = 25
_OPEN = Q(status=AssignmentStatus.OPEN)


def organized_campaign_ids(
    *, user: AbstractBaseUser, campaigns: list[Campaign], roles: dict[int, set[str]]
) -> list[int]:
    return [c.pk for c in campaigns if user.is_staff or Role.ORGANIZER in roles.get(c.pk, set())]


def user_roles(*, user: AbstractBaseUser) -> dict[int, set[str]]:
    roles: dict[int, set[str]] = {}
    for campaign_id, role in CampaignRole.objects.filter(user=user).values_list("campaign_id", "role"):
        roles.setdefault(campaign_id, set()).add(role)
    return roles


def campaign_summaries(*, campaigns: list[Campaign], now: datetime | None = None) -> list[dict[str, Any]]:
    """Status, progress, latest agreement, last activity and what needs attention, per campaign."""
    now = now or timezone.now()
    ids = [c.pk for c in campaigns]
    if not ids:
        return []
    work = {
        r["campaign_id"]: r
        for r in Assignment.objects.filter(campaign_id__in=ids)
        .order_by()
        .values("campaign_id")
        .annotate(
            assigned=Count("pk"),
            done=Count("pk", filter=~_OPEN),
            waiting=Count("unit_id", filter=_OPEN, distinct=True)
            + Count("query_id", filter=_OPEN & Q(unit__isnull=True), distinct=True),
        )
    }
    last_seen: dict[tuple[int, int], datetime] = {
        (c, g): ts
        for c, g, ts in GradingEvent.objects.filter(campaign_id__in=ids)
        .exclude(type__in=ORGANIZER_EVENTS)  # grading activity: an organizer's gold answer or verdict is none
        .order_by()
        .values("campaign_id", "grader_id")
        .annotate(last=Max("server_ts"))
        .values_list("campaign_id", "grader_id", "last")
    }
    with_open_work = (
        Assignment.objects.filter(campaign_id__in=ids, status=AssignmentStatus.OPEN)
        .order_by()
        .values_list("campaign_id", "grader_id")
        .distinct()
    )
    last_by_campaign: dict[int, datetime] = {}
    for (c, _), ts in last_seen.items():
        last_by_campaign[c] = max(ts, last_by_campaign.get(c, ts))
    idle: dict[int, int] = {}
    for c, g in with_open_work:
        if last_seen.get((c, g)) is None or last_seen[(c, g)] < now - IDLE_AFTER:
            idle[c] = idle.get(c, 0) + 1
    graders = dict(
        CampaignRole.objects.filter(campaign_id__in=ids, role=Role.GRADER)
        .order_by()
        .values("campaign_id")
        .annotate(n=Count("pk"))
        .values_list("campaign_id", "n")
    )
    runs = hooks.runs_headline(campaign_ids=ids)
    out = []
    for c in campaigns:
        w = work.get(c.pk, {"assigned": 0, "done": 0, "waiting": 0})
        last = last_by_campaign.get(c.pk)
        run = runs.get(c.pk, {})
        attention = []
        if idle.get(c.pk) and c.is_open:
            attention.append(f"{idle[c.pk]} grader(s) with open work idle for {IDLE_AFTER.days}+ days")
        if w["waiting"] and c.is_open:
            attention.append(f"{w['waiting']} unit(s) waiting for judgments")
        if run.get("failed"):
            attention.append(f"analysis #{run.get('failed_number')} failed")
        if not graders.get(c.pk):
            attention.append("no graders yet")
        out.append(
            {
                "campaign": c,
                "assigned": w["assigned"],
                "done": w["done"],
                "graders": graders.get(c.pk, 0),
                "last_activity": last,
                "agreement": run.get("agreement"),
                "attention": attention,
            }
        )
    return out


# --- the progress dashboard ---------------------------------------------------------------------


def campaign_dashboard(*, campaign: Campaign, now: datetime | None = None) -> dict[str, Any]:
    """Everything the live dashboard shows, as plain JSON-ready data (organizers see user names)."""
    now = now or timezone.now()
    assignments = Assignment.objects.filter(campaign=campaign).order_by()
    totals = assignments.aggregate(
        assigned=Count("pk"),
        done=Count("pk", filter=Q(status=AssignmentStatus.DONE)),
        skipped=Count("pk", filter=Q(status=AssignmentStatus.SKIPPED)),
        open=Count("pk", filter=_OPEN),
        first=Min("completed_at"),
    )
    recent = assignments.filter(completed_at__gte=now - PACE_WINDOW).count()
    return {
        "campaign": campaign.pk,
        "status": campaign.status,
        "generated_at": now.isoformat(),
        "totals": {k: totals[k] for k in ("assigned", "done", "skipped", "open")},
        "estimate": _estimate(
            open_=totals["open"],
            finished=totals["done"] + totals["skipped"],
            recent=recent,
            first=totals["first"],
            now=now,
        ),
        "graders": _per_grader(campaign, assignments),
        **_per_target(campaign, assignments),
    }


def _estimate(*, open_: int, finished: int, recent: int, first: datetime | None, now: datetime) -> dict[str, Any]:
    """Time left at the recent pace (the last hour), else at the average pace since the first completion."""
    if open_ == 0:
        return {"seconds": 0, "basis": "nothing is left open"}
    if recent:
        rate, basis = recent / PACE_WINDOW.total_seconds(), f"{recent} completed in the last hour"
    elif finished and first and now > first:
        rate, basis = finished / (now - first).total_seconds(), f"{finished} completed since {first:%Y-%m-%d %H:%M} UTC"
    else:
        return {"seconds": None, "basis": "no judgments yet, so no pace to go by"}
    return {"seconds": round(open_ / rate), "basis": basis}


def _per_grader(campaign: Campaign, assignments: Any) -> list[dict[str, Any]]:
    counts = {
        r["grader_id"]: r
        for r in assignments.values("grader_id").annotate(
            assigned=Count("pk"),
            done=Count("pk", filter=Q(status=AssignmentStatus.DONE)),
            skipped=Count("pk", filter=Q(status=AssignmentStatus.SKIPPED)),
            open=Count("pk", filter=_OPEN),
        )
    }
    spans: dict[int, list[float]] = {}
    last: dict[int, datetime] = {}
    events = (
        GradingEvent.objects.filter(campaign=campaign)
        .exclude(type__in=ORGANIZER_EVENTS)  # an organizer who also grades: gold and adjudication are no grading
        .order_by()
        .values("grader_id", "unit_id", "query_id")
        .annotate(first=Min("client_ts"), last=Max("client_ts"), seen=Max("server_ts"))
    )
    for row in events:
        if row["unit_id"] or row["query_id"]:
            spans.setdefault(row["grader_id"], []).append((row["last"] - row["first"]).total_seconds())
        if row["seen"] > last.get(row["grader_id"], row["seen"] - timedelta(1)):
            last[row["grader_id"]] = row["seen"]
    out = []
    for role in (
        CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).select_related("user").order_by("pseudonym")
    ):
        c = counts.get(role.user_id, {})
        times = spans.get(role.user_id)
        out.append(
            {
                "user": role.user.get_username(),
                "pseudonym": role.pseudonym,
                "user_id": role.user_id,
                **{k: c.get(k, 0) for k in ("assigned", "done", "skipped", "open")},
                "last_active": last[role.user_id].isoformat() if role.user_id in last else None,
                "median_seconds": round(statistics.median(times), 1) if times else None,
            }
        )
    return out


def _per_target(campaign: Campaign, assignments: Any) -> dict[str, Any]:
    """Per query: units (or, ordering campaigns, graders) covered by the initial overlap; the units
    still waiting for judgments."""
    need = campaign.initial_overlap
    ordering = campaign.scheme == Scheme.ORDERING
    key = "query_id" if ordering else "unit_id"
    done = dict(assignments.exclude(_OPEN).values(key).annotate(n=Count("pk")).values_list(key, "n"))
    targets = (
        campaign.queries.values_list("pk", "pk", "external_id", "title")
        if ordering
        else Unit.objects.filter(campaign=campaign).values_list("pk", "query_id", "external_id", "query__title")
    )
    queries = dict(campaign.queries.values_list("pk", "external_id"))
    per_query: dict[Any, dict[str, Any]] = {}
    waiting, n_waiting = [], 0
    for pk, query_id, external_id, _ in targets.order_by("pk"):
        row = per_query.setdefault(query_id, {"query": queries.get(query_id, "(no query)"), "units": 0, "covered": 0})
        row["units"] += 1
        if done.get(pk, 0) >= need:
            row["covered"] += 1
        else:
            n_waiting += 1
            if len(waiting) < WAITING_SHOWN:
                waiting.append({"unit": external_id, "done": done.get(pk, 0), "needed": need})
    return {"queries": list(per_query.values()), "waiting": waiting, "n_waiting": n_waiting}


# --- guidelines versions a grader has read ----------------------------------------------------------


def _last_read(grader: AbstractBaseUser, campaign_ids: list[int]) -> dict[int, int]:
    return dict(
        GradingEvent.objects.filter(grader=grader, campaign_id__in=campaign_ids, type=EventType.GUIDELINES_VIEWED)
        .order_by()
        .values("campaign_id")
        .annotate(v=Max("guidelines_version"))
        .values_list("campaign_id", "v")
    )


def guidelines_last_read(*, grader: AbstractBaseUser, campaign: Campaign) -> int:
    """The newest guidelines version the grader has opened (0: never)."""
    return _last_read(grader, [campaign.pk]).get(campaign.pk, 0)


def guidelines_changed_for(*, grader: AbstractBaseUser, campaigns: list[Campaign]) -> set[int]:
    """Campaigns whose guidelines changed since the grader last opened them (one query)."""
    read = _last_read(grader, [c.pk for c in campaigns])
    return {c.pk for c in campaigns if 0 < read.get(c.pk, 0) < c.guidelines_version}


def campaign_counts(*, campaign: Campaign) -> dict[str, int]:
    """How many queries, candidates, units, systems and assignments the campaign has."""
    return {
        "queries": campaign.queries.count(),
        "candidates": campaign.candidates.count(),
        "units": campaign.units.count(),
        "systems": campaign.systems.count(),
        "assignments": campaign.assignments.count(),
    }


def gold_answers_of(*, campaign: Campaign) -> QuerySet[GoldAnswer]:
    """The campaign's gold units by external id, each with `judged`: how many graders answered it."""
    return (
        GoldAnswer.objects.filter(campaign=campaign)
        .select_related("unit")
        .order_by("unit__external_id")
        .annotate(judged=Count("unit__judgments", filter=Q(unit__judgments__skipped=False)))
    )


def audit_entries_of(*, campaign: Campaign) -> QuerySet[AuditEntry]:
    """The campaign's audit trail, newest first (read a page at a time)."""
    return AuditEntry.objects.filter(campaign=campaign).order_by("-id")


def members_of(*, campaign: Campaign) -> list[CampaignRole]:
    """The campaign's roles with their users, by role then pseudonym, each with `open_work`: how many
    open assignments the member has (two queries)."""
    roles = list(
        CampaignRole.objects.filter(campaign=campaign)
        .select_related("user", "excluded_by")
        .order_by("role", "pseudonym", "user__username")
    )
    open_work = dict(
        campaign.assignments.order_by()
        .values("grader_id")
        .annotate(n=Count("pk", filter=_OPEN))
        .values_list("grader_id", "n")
    )
    for role in roles:
        role.open_work = open_work.get(role.user_id, 0)
    return roles


def member_get(*, campaign: Campaign, user_id: int, role: str) -> CampaignRole | None:
    """One member's role in the campaign, with the user, or None."""
    return CampaignRole.objects.filter(campaign=campaign, user_id=user_id, role=role).select_related("user").first()


def site_organizers() -> list[AbstractBaseUser]:
    """The users who may create campaigns without being staff (the `grading.add_campaign`
    permission, given directly or through a group), by user name."""
    perm = Q(user_permissions__codename="add_campaign", user_permissions__content_type__app_label="grading")
    group = Q(groups__permissions__codename="add_campaign", groups__permissions__content_type__app_label="grading")
    return list(
        get_user_model().objects.filter(perm | group, is_active=True, is_staff=False).distinct().order_by("username")
    )


def join_links_of(*, campaign: Campaign) -> list[JoinLink]:
    """The campaign's join links, each with `n_participants` and `closed` (why it takes nobody new,
    a key of grading.services.join_links.CLOSED_WORDS, or None). One query."""
    links = list(_links_counted(campaign).order_by("pk"))
    now = timezone.now()
    n_gold = GoldAnswer.objects.filter(campaign=campaign).count() if any(link.qualification for link in links) else 0
    for link in links:
        link.campaign = campaign
        link.closed = link.closed_reason(n_participants=link.n_participants, now=now)
        # A rule asking for more gold units than the campaign has now (answers removed since): nobody joins.
        link.gold_short = bool(link.qualification) and link.qualification.get("units", 0) > n_gold
    return links


def _links_counted(campaign: Campaign) -> QuerySet[JoinLink]:
    """The campaign's links with `n_participants`, and how many passed their qualification
    (`n_qualified`) or were screened out by it (`n_screened_out`)."""
    return JoinLink.objects.filter(campaign=campaign).annotate(
        n_participants=Count("participants"),
        n_qualified=Count("participants", filter=Q(participants__qualified_at__isnull=False)),
        n_screened_out=Count("participants", filter=Q(participants__screened_out_at__isnull=False)),
    )


def join_link_get(*, campaign: Campaign, link_id: int) -> JoinLink | None:
    """The campaign's link with its participant counts (as join_links_of has them), or None."""
    link = _links_counted(campaign).filter(pk=link_id).first()
    if link is not None:
        link.campaign = campaign
    return link


def join_link_by_key(*, key: str) -> JoinLink | None:
    """The link with this address key, with its campaign, or None."""
    return JoinLink.objects.filter(key=key).select_related("campaign").first()


def participant_find(*, campaign: Campaign, platform: str, external_id: str) -> Participant | None:
    """The campaign's participant with this platform id, with their account and link, or None."""
    return (
        Participant.objects.filter(campaign=campaign, platform=platform, external_id=external_id)
        .select_related("user", "link")
        .first()
    )


def join_link_participants(*, link: JoinLink) -> int:
    return Participant.objects.filter(link=link).count()
