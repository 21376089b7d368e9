"""Reads: what a grader or an organizer may see. Writes live in grading.services."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet

from grading.errors import InvalidValue, NotFound, NotOrganizer
from grading.models import (
    Assignment,
    Campaign,
    CampaignRole,
    Candidate,
    GuidelinesVersion,
    Judgment,
    Ordering,
    Participant,
    Query,
    RepeatAnswer,
    Unit,
)
from grading.models.choices import AssignmentSource, AssignmentStatus, Role, Scheme

# Units without a query are shown this many to a page.
UNITS_PER_PAGE = 10


# --- campaigns ----------------------------------------------------------------------------------
def campaign_list_for_user(*, user: AbstractBaseUser) -> QuerySet[Campaign]:
    """Campaigns in which the user has a role (staff: all), with the user's own progress."""
    campaigns = Campaign.objects.all() if user.is_staff else Campaign.objects.filter(roles__user=user).distinct()
    mine = Q(assignments__grader=user)
    return campaigns.annotate(
        n_assigned=Count("assignments", filter=mine, distinct=True),
        n_done=Count("assignments", filter=mine & ~Q(assignments__status=AssignmentStatus.OPEN), distinct=True),
    ).order_by("-created_at", "pk")


def roles_of(*, user: AbstractBaseUser, campaign: Campaign) -> set[str]:
    return set(CampaignRole.objects.filter(campaign=campaign, user=user).values_list("role", flat=True))


def campaign_get_for_grader(*, grader: AbstractBaseUser, campaign_id: Any) -> Campaign:
    """The campaign, if the user grades in it; NotFound otherwise (never says whether it exists)."""
    campaign_id = parse_id(campaign_id, field="campaign")
    # Whether the grader is a crowd participant screened out by a qualification rule, in the same
    # statement: taking work (grading.services.allocation) gives them none, at no cost to others.
    screened = Participant.objects.filter(campaign=OuterRef("pk"), user=grader.pk, screened_out_at__isnull=False)
    try:  # get(), not first(): no ORDER BY to compile for every request of a grader
        return Campaign.objects.annotate(grader_screened_out=Exists(screened)).get(
            pk=campaign_id, roles__user=grader, roles__role=Role.GRADER
        )
    except Campaign.DoesNotExist:
        raise NotFound(
            f"campaign {campaign_id} does not exist or you do not grade in it.", field="campaign", value=campaign_id
        ) from None


def user_has_role(*, user: AbstractBaseUser, campaign_id: int) -> bool:
    """Whether the user has any role in the campaign."""
    return CampaignRole.objects.filter(campaign_id=campaign_id, user=user).exists()


def candidate_with_media(*, public_id: str) -> Candidate | None:
    """The candidate with this public id, if it has a media file."""
    return Candidate.objects.filter(public_id=public_id).exclude(media_file="").first()


def campaign_get_for_member(*, user: AbstractBaseUser, campaign_id: Any) -> Campaign:
    campaign_id = parse_id(campaign_id, field="campaign")
    campaigns = Campaign.objects.all() if user.is_staff else Campaign.objects.filter(roles__user=user)
    campaign = campaigns.filter(pk=campaign_id).first()
    if campaign is None:
        raise NotFound(
            f"campaign {campaign_id} does not exist or you have no role in it.", field="campaign", value=campaign_id
        )
    return campaign


def parse_id(value: Any, *, field: str) -> int:
    """An id from a query string or body: a positive integer, else InvalidValue naming the field."""
    if value is None or value == "":
        raise InvalidValue(f"{field} is required.", field=field, value=None)
    if isinstance(value, bool):
        raise InvalidValue(f"{field} must be an integer id, got {value!r}.", field=field, value=value)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidValue(f"{field} must be an integer id, got {value!r}.", field=field, value=value) from None
    if not 1 <= number < 2**63 or (isinstance(value, float) and value != number):
        raise InvalidValue(f"{field} must be a positive integer id, got {value!r}.", field=field, value=value)
    return number


def guidelines_current(*, campaign: Campaign) -> GuidelinesVersion | None:
    return campaign.guidelines.order_by("-version").first()


# --- a grader's work ----------------------------------------------------------------------------
def assignment_list_for_grader(*, grader: AbstractBaseUser, campaign: Campaign) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(grader=grader, campaign=campaign)
        .select_related("unit__candidate", "unit__candidate_b", "unit__query", "query")
        .order_by("position", "pk")
    )


def assignment_next_position(*, grader: AbstractBaseUser, campaign: Campaign) -> int:
    """The position after every assignment the grader has in the campaign (1 when there is none):
    where work added for them goes."""
    return (Assignment.objects.filter(campaign=campaign, grader=grader).aggregate(m=Max("position"))["m"] or 0) + 1


def unit_with_items(*, unit_id: int) -> Unit:
    """A unit with its candidates and query, as a grader's assignment shows them."""
    return Unit.objects.select_related("candidate", "candidate_b", "query").get(pk=unit_id)


def unit_get_in_campaign(*, campaign: Campaign, unit_id: Any) -> Unit:
    """One of the campaign's units; InvalidValue for an id that is not one, NotFound for another's."""
    unit_id = parse_id(unit_id, field="unit")
    unit = Unit.objects.filter(pk=unit_id, campaign=campaign).first()
    if unit is None:
        raise NotFound(f"unit {unit_id} is not in campaign {campaign.pk}.", field="unit", value=unit_id)
    return unit


def judgment_list_for_grader(*, grader: AbstractBaseUser, campaign: Campaign) -> QuerySet[Judgment]:
    return Judgment.objects.filter(grader=grader, campaign=campaign).order_by("unit_id")


def judgments_by_unit(
    *,
    grader: AbstractBaseUser,
    campaign: Campaign,
    unit_ids: list[int | None] | None = None,
) -> dict[int, Judgment]:
    """The grader's judgments by unit id; only of `unit_ids` when given (a bounded read)."""
    judgments = judgment_list_for_grader(grader=grader, campaign=campaign)
    if unit_ids is not None:
        judgments = judgments.filter(unit_id__in=[u for u in unit_ids if u is not None])
    return {j.unit_id: j for j in judgments}


@dataclass
class GradingPage:
    """One screen of work: a query's assignments (or a chunk of query-less units)."""

    number: int
    query: Query | None
    assignments: list[Assignment]
    judgments: dict[int, Judgment] = field(default_factory=dict)
    ordering: list[Any] = field(default_factory=list)
    qualification: bool = False  # a crowd participant's qualification units (always pages of their own)

    @property
    def open_count(self) -> int:
        return sum(a.status == AssignmentStatus.OPEN for a in self.assignments)


def grading_pages(
    *, grader: AbstractBaseUser, campaign: Campaign, qualification_only: bool = False
) -> list[GradingPage]:
    """The grader's assignments grouped into pages, in the grader's own shuffled order. A crowd
    participant's qualification units come first, on pages of their own; `qualification_only`: just
    those pages (while the participant is qualifying, docs/design.md §2)."""
    pages: list[GradingPage] = []
    by_query: dict[tuple[int, bool, bool], GradingPage] = {}
    assignments = assignment_list_for_grader(grader=grader, campaign=campaign)
    if qualification_only:
        assignments = assignments.filter(source=AssignmentSource.QUALIFY)
    for a in assignments:
        query = a.query or (a.unit.query if a.unit_id else None)
        qualifying = a.source == AssignmentSource.QUALIFY
        if query is not None:
            # A hidden repeat comes back later on a page of its own, never beside the first judgment (§5.6).
            key = (query.pk, a.repeat, qualifying)
            page = by_query.get(key)
            if page is None:
                page = by_query[key] = GradingPage(
                    number=len(pages) + 1, query=query, assignments=[], qualification=qualifying
                )
                pages.append(page)
        elif (
            pages
            and pages[-1].query is None
            and pages[-1].qualification == qualifying
            and len(pages[-1].assignments) < UNITS_PER_PAGE
        ):
            page = pages[-1]
        else:
            page = GradingPage(number=len(pages) + 1, query=None, assignments=[], qualification=qualifying)
            pages.append(page)
        page.assignments.append(a)
    return pages


def grading_page_get(
    *, grader: AbstractBaseUser, campaign: Campaign, number: int, qualification_only: bool = False
) -> tuple[GradingPage, int]:
    """Page `number` (1-based) with the grader's judgments or ordering, and the page count."""
    pages = grading_pages(grader=grader, campaign=campaign, qualification_only=qualification_only)
    if not 1 <= number <= len(pages):
        raise NotFound(f"page {number} does not exist: you have {len(pages)} pages.", field="page", value=number)
    page = pages[number - 1]
    if campaign.scheme == Scheme.ORDERING:
        page.ordering = ordering_for_grader(grader=grader, query=page.query)
    else:
        unit_ids = [a.unit_id for a in page.assignments]
        page.judgments = {j.unit_id: j for j in Judgment.objects.filter(grader=grader, unit_id__in=unit_ids)}
        repeats = repeat_answers_of(assignments=page.assignments)
        page.judgments.update({a.unit_id: repeats[a.pk] for a in page.assignments if a.pk in repeats})
    return page, len(pages)


def page_to_continue(*, grader: AbstractBaseUser, campaign: Campaign) -> int | None:
    """Where the grader left off: the first page with open work, else the last page; None if no work."""
    pages = grading_pages(grader=grader, campaign=campaign)
    if not pages:
        return None
    return next((p.number for p in pages if p.open_count), pages[-1].number)


@dataclass(frozen=True)
class Completion:
    """A crowd participant's progress on their share. `code` and `return_url` are filled only once
    every unit of the share is rated or skipped: the completion code is never shown earlier, nor to
    a participant screened out by the link's qualification, who is given `screen_out_code` and
    `screen_out_url` instead (never before that decision, never to anyone who passed)."""

    participant: Participant
    total: int
    open: int
    completed_at: Any = None
    code: str = ""
    return_url: str = ""
    screen_out_code: str = ""
    screen_out_url: str = ""

    @property
    def qualifying(self) -> bool:
        """Given qualification units and not decided yet: the pages show only those units."""
        p = self.participant
        return p.qualification_units is not None and p.qualified_at is None and p.screened_out_at is None

    @property
    def screened_out(self) -> bool:
        return self.participant.screened_out_at is not None

    @property
    def done(self) -> bool:
        return self.total > 0 and self.open == 0 and not self.screened_out and not self.qualifying


def participant_completion(*, grader: AbstractBaseUser, campaign: Campaign) -> Completion | None:
    """The grader's completion as a crowd participant of the campaign, or None when they joined
    otherwise (two queries)."""
    participant = Participant.objects.filter(user=grader, campaign=campaign).select_related("link").first()
    if participant is None:
        return None
    counts = Assignment.objects.filter(campaign=campaign, grader=grader).aggregate(
        total=Count("pk"), open=Count("pk", filter=Q(status=AssignmentStatus.OPEN)), last=Max("completed_at")
    )
    if participant.screened_out_at is not None:
        link = participant.link
        return Completion(
            participant=participant,
            total=counts["total"],
            open=counts["open"],
            screen_out_code=link.screen_out_code(),
            screen_out_url=link.screen_out_url(),
        )
    qualifying = participant.qualification_units is not None and participant.qualified is None
    if not counts["total"] or counts["open"] or qualifying:
        return Completion(participant=participant, total=counts["total"], open=counts["open"])
    link = participant.link
    return Completion(
        participant=participant,
        total=counts["total"],
        open=0,
        completed_at=counts["last"],
        code=link.completion_code,
        return_url=link.completion_url(),
    )


def ordering_for_grader(*, grader: AbstractBaseUser, query: Query | None) -> list[Any]:
    """The candidates of a query in the grader's current order: their submitted ordering, else a
    shuffle seeded by grader and query so that every grader starts from a different order."""
    if query is None:
        return []
    units = list(Unit.objects.filter(query=query).select_related("candidate").order_by("position", "pk"))
    candidates = {u.candidate.public_id: u.candidate for u in units}
    saved = Ordering.objects.filter(grader=grader, query=query).values_list("items", flat=True).first()
    if saved and set(saved) == set(candidates):
        return [candidates[c] for c in saved]
    order = list(candidates.values())
    random.Random(f"{grader.pk}:{query.pk}").shuffle(order)
    return order


# --- organizers -----------------------------------------------------------------------------------
def campaign_progress(*, campaign: Campaign) -> dict[str, Any]:
    """Progress per unit and per grader; graders appear under their pseudonyms only."""
    pseudonyms = dict(
        CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).values_list("user_id", "pseudonym")
    )
    done = ~Q(assignments__status=AssignmentStatus.OPEN)
    target = campaign.queries if campaign.scheme == Scheme.ORDERING else campaign.units
    per_target = (
        target.annotate(
            n_assigned=Count("assignments", distinct=True), n_done=Count("assignments", filter=done, distinct=True)
        )
        .order_by("pk")
        .values("pk", "external_id", "n_assigned", "n_done")
    )
    per_grader = (
        Assignment.objects.filter(campaign=campaign)
        .values("grader_id")
        .annotate(n_assigned=Count("pk"), n_done=Count("pk", filter=~Q(status=AssignmentStatus.OPEN)))
        .order_by("grader_id")
    )
    key = "query" if campaign.scheme == Scheme.ORDERING else "unit"
    totals = Assignment.objects.filter(campaign=campaign).aggregate(
        n_assigned=Count("pk"), n_done=Count("pk", filter=~Q(status=AssignmentStatus.OPEN))
    )
    return {
        "campaign": campaign.pk,
        **totals,
        "per_unit": [
            {key: row["pk"], "external_id": row["external_id"], "assigned": row["n_assigned"], "done": row["n_done"]}
            for row in per_target
        ],
        "per_grader": [
            {
                "grader": pseudonyms.get(row["grader_id"]) or f"#{row['grader_id']}",
                "assigned": row["n_assigned"],
                "done": row["n_done"],
            }
            for row in per_grader
        ],
    }


def campaign_get_for_organizer(*, user: AbstractBaseUser, campaign_id: Any) -> Campaign:
    """The campaign, if the user organizes it (or is staff). A member without the organizer role
    gets NotOrganizer (403); anyone else NotFound (404), which says nothing about its existence."""
    campaign = campaign_get_for_member(user=user, campaign_id=campaign_id)
    if not user.is_staff and Role.ORGANIZER not in roles_of(user=user, campaign=campaign):
        raise NotOrganizer(f"you do not organize campaign {campaign.pk}.", field="campaign", value=campaign.pk)
    return campaign


def repeat_answers_of(*, assignments: list[Assignment]) -> dict[int, Any]:
    """For the hidden repeats among `assignments`, by assignment id: the repeat's own answer (shaped
    like a Judgment), or None while unanswered, so that a repeat never shows the first judgment (§5.6)."""
    repeats = [a.pk for a in assignments if a.repeat]
    if not repeats:
        return {}
    answers = {r.pk: r for r in RepeatAnswer.objects.filter(pk__in=repeats)}
    return {pk: answers.get(pk) for pk in repeats}
