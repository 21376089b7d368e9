"""Grader pages: server-rendered, then enhanced by static/js (events, outbox, keyboard)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from grading import schemes, selectors, selectors_organizer
from grading.errors import GradingError
from grading.models import Campaign, Judgment
from grading.models.choices import (
    AssignmentStatus,
    Broad,
    CampaignStatus,
    EventType,
    PairwiseVerdict,
    Policy,
    Role,
    Scheme,
)
from grading.services.events import EventInput, event_record
from grading.services.lifecycle import guidelines_changes
from grading.services.more_work import batch_size, more_work_request, reason_message
from grading.services.organizers import can_create_campaigns
from grading.services.qualification import outcome_words

TEMPLATES = {
    Scheme.BROAD_FINE: "grading/grade_broad_fine.html",
    Scheme.NUMERIC: "grading/grade_numeric.html",
    Scheme.CATEGORICAL: "grading/grade_categorical.html",
    Scheme.PAIRWISE: "grading/grade_pairwise.html",
    Scheme.ORDERING: "grading/grade_ordering.html",
}


def _campaign_for(request: HttpRequest, campaign_id: int) -> Campaign:
    try:
        return selectors.campaign_get_for_grader(grader=request.user, campaign_id=campaign_id)
    except GradingError:
        raise Http404("No such campaign among yours.") from None


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Graders: their work. Organizers: their campaigns at a glance. A fixed number of queries."""
    campaigns = list(selectors.campaign_list_for_user(user=request.user))
    roles = selectors_organizer.user_roles(user=request.user)
    grading = [c for c in campaigns if Role.GRADER in roles.get(c.pk, set())]
    organized = set(selectors_organizer.organized_campaign_ids(user=request.user, campaigns=campaigns, roles=roles))
    changed = selectors_organizer.guidelines_changed_for(grader=request.user, campaigns=grading)
    for c in grading:
        c.guidelines_changed = c.pk in changed
    return render(
        request,
        "grading/home.html",
        {
            "grading": grading,
            "organizing": selectors_organizer.campaign_summaries(campaigns=[c for c in campaigns if c.pk in organized]),
            "can_create": can_create_campaigns(request.user),
        },
    )


@login_required
def continue_grading(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Where the grader left off: the first page with open work."""
    campaign = _campaign_for(request, campaign_id)
    if selectors_organizer.guidelines_changed_for(grader=request.user, campaigns=[campaign]):
        messages.info(request, "The guidelines changed since you last read them: here is what changed.")
        return redirect("grading:guidelines", campaign_id=campaign.pk)
    if getattr(campaign, "grader_screened_out", False):  # screened out by a qualification: their result
        return redirect("grading:completion", campaign_id=campaign.pk)
    number = selectors.page_to_continue(grader=request.user, campaign=campaign)
    if number is None:
        return render(request, "grading/nothing.html", {"campaign": campaign})
    return redirect("grading:grade", campaign_id=campaign.pk, page=number)


@login_required
@require_POST
def more_work(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A grader who has finished asks for more: a batch of units the campaign's allocation policy
    says need another judgment (docs/design.md §5.6), and the page holding the first of them."""
    campaign = _campaign_for(request, campaign_id)
    try:
        result = more_work_request(grader=request.user, campaign=campaign)
    except GradingError as exc:
        messages.info(request, exc.message)
        return redirect("grading:home")
    if not result.added:
        words = reason_message(campaign=campaign, reason=result.reason)
        messages.info(request, f"No more units for you in {campaign.name}. {words}")
        return redirect("grading:continue", campaign_id=campaign.pk)
    first = result.assignments[0].pk
    pages = selectors.grading_pages(grader=request.user, campaign=campaign)
    number = next(p.number for p in pages if any(a.pk == first for a in p.assignments))
    n = result.added
    messages.success(
        request,
        f"{n} more unit{'s' if n != 1 else ''} added for "
        f"you{' (all the campaign has for now)' if n < batch_size(campaign) else ''}. Here is the first.",
    )
    return redirect("grading:grade", campaign_id=campaign.pk, page=number)


@login_required
def grade(request: HttpRequest, campaign_id: int, page: int) -> HttpResponse:
    campaign = _campaign_for(request, campaign_id)
    completion = selectors.participant_completion(grader=request.user, campaign=campaign)
    # A crowd participant who is qualifying sees only the qualification units (docs/design.md §2).
    only = completion is not None and completion.qualifying
    try:
        grading_page, n_pages = selectors.grading_page_get(
            grader=request.user, campaign=campaign, number=page, qualification_only=only
        )
    except GradingError:
        if only:  # a page of the share, not given yet: back to the qualification
            return redirect("grading:continue", campaign_id=campaign.pk)
        raise Http404("No such page.") from None
    pages = selectors.grading_pages(grader=request.user, campaign=campaign, qualification_only=only)
    screened_out = completion is not None and completion.screened_out
    readonly = campaign.status != CampaignStatus.OPEN or screened_out
    cards = [
        _card(campaign, a, grading_page.judgments.get(a.unit_id), i + 1) for i, a in enumerate(grading_page.assignments)
    ]
    params = schemes.normalise_params(campaign.scheme, campaign.scheme_params)
    counts = _counts(pages, grading_page)
    context = {
        "campaign": campaign,
        "page": grading_page,
        "n_pages": n_pages,
        "cards": cards,
        "query": grading_page.query,
        "guidelines": selectors.guidelines_current(campaign=campaign),
        "counts": counts,
        "readonly": readonly,
        "config": _page_config(request, campaign, grading_page, page, n_pages, pages, counts, readonly=readonly),
        "broad_choices": [(i + 1, b.value, b.label) for i, b in enumerate(Broad)],
        "verdicts": [("A", "A", "1"), ("equal", "Equal", "2"), ("B", "B", "3")],
        "params": params,
        "wording": schemes.wording(campaign.scheme, params),
        "can_ask_for_more": campaign.is_open
        and campaign.policy != Policy.FIXED
        and campaign.scheme != Scheme.ORDERING
        and not screened_out,
        "completion": completion,
        "outcome": outcome_words(completion.participant, scheme=campaign.scheme) if screened_out else "",
    }
    if campaign.scheme == Scheme.ORDERING:
        context["order"] = grading_page.ordering
        context["submitted"] = all(a.status == "done" for a in grading_page.assignments)
        context["counted_as"] = "submitted"
    return render(request, TEMPLATES[campaign.scheme], context)


@login_required
def completion(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A crowd participant's end: the completion code (and the platform's return link) once their
    whole share is rated, else how much is left. Other graders have no such page."""
    campaign = _campaign_for(request, campaign_id)
    done = selectors.participant_completion(grader=request.user, campaign=campaign)
    if done is None:
        raise Http404("You did not join this campaign through a study link.")
    outcome = outcome_words(done.participant, scheme=campaign.scheme) if done.screened_out else ""
    return render(request, "grading/completion.html", {"campaign": campaign, "completion": done, "outcome": outcome})


STATE_TEXT = {"unrated": "Not rated yet", "saved": "Saved", "skipped": "Skipped"}


def _card(campaign: Campaign, assignment: Any, judgment: Judgment | None, n: int) -> dict[str, Any]:
    """One unit's card: what the page says about it must be what is stored."""
    if judgment is not None and judgment.skipped:
        state, text = "skipped", STATE_TEXT["skipped"]
    elif assignment.status == AssignmentStatus.DONE:
        state, text = "saved", STATE_TEXT["saved"]
    elif (
        judgment is not None and campaign.scheme == Scheme.BROAD_FINE and (judgment.broad or judgment.fine is not None)
    ):
        state, text = "partial", f"Partly rated: {'FINE' if judgment.fine is None else 'BROAD'} missing"
    else:
        state, text = "unrated", STATE_TEXT["unrated"]
    return {
        "assignment": assignment,
        "unit": assignment.unit,
        "judgment": judgment,
        "n": n,
        "state": state,
        "state_text": text,
        "status": {"saved": "done", "skipped": "skipped"}.get(state, "open"),
    }


def _counts(pages: list[Any], here: Any) -> dict[str, int]:
    """Rated (done) units on this page and in the whole campaign, for the live counter."""
    every = [a for p in pages for a in p.assignments]
    return {
        "here_done": sum(a.status == AssignmentStatus.DONE for a in here.assignments),
        "here": len(here.assignments),
        "here_open": sum(a.status == AssignmentStatus.OPEN for a in here.assignments),
        "all_done": sum(a.status == AssignmentStatus.DONE for a in every),
        "all": len(every),
        "all_skipped": sum(a.status == AssignmentStatus.SKIPPED for a in every),
    }


def _page_config(
    request: HttpRequest,
    campaign: Campaign,
    page: Any,
    number: int,
    n_pages: int,
    pages: list[Any],
    counts: dict[str, int],
    *,
    readonly: bool,
) -> dict[str, Any]:
    def page_url(n: int) -> str | None:
        return reverse("grading:grade", args=[campaign.pk, n]) if 1 <= n <= n_pages else None

    # The next page with a unit still open, looking forward first, then from the start.
    later = [p for p in pages[number:] + pages[: number - 1] if p.open_count]
    return {
        "campaign": campaign.pk,
        "scheme": campaign.scheme,
        "params": schemes.normalise_params(campaign.scheme, campaign.scheme_params),
        "query": page.query.pk if page.query else None,
        "guidelinesVersion": campaign.guidelines_version,
        "eventsUrl": reverse("grading-api:events"),
        "prevUrl": page_url(number - 1),
        "nextUrl": page_url(number + 1),
        "nextUnratedUrl": page_url(later[0].number) if later else None,
        "readonly": readonly,
        "verdicts": PairwiseVerdict.values,
        "counts": counts,
    }


@login_required
def guidelines(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The current guidelines as a page of their own (the grading page opens them in a dialog), with
    what changed since the grader last read them. Leaving by its button (a POST) records that they
    were read, for visits without JavaScript; looking changes nothing."""
    campaign = _campaign_for(request, campaign_id)
    if request.method == "POST":
        if campaign.is_open:
            event_record(
                grader=request.user,
                data=EventInput(
                    id=uuid4(),
                    campaign_id=campaign.pk,
                    type=EventType.GUIDELINES_VIEWED,
                    client_ts=datetime.now(UTC),
                    payload={"version": campaign.guidelines_version, "via": "page"},
                    session_id="server",
                ),
            )
        return redirect("grading:continue", campaign_id=campaign.pk)
    current = selectors.guidelines_current(campaign=campaign)
    last_read = selectors_organizer.guidelines_last_read(grader=request.user, campaign=campaign)
    changes = guidelines_changes(campaign=campaign, since_version=last_read)
    return render(request, "grading/guidelines.html", {"campaign": campaign, "guidelines": current, "changes": changes})
