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

from grading import schemes, selectors
from grading.errors import GradingError
from grading.models import Campaign
from grading.models.choices import Broad, CampaignStatus, EventType, PairwiseVerdict, Role, Scheme
from grading.services import allocation
from grading.services.events import EventInput, event_record

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
    campaigns = list(selectors.campaign_list_for_user(user=request.user))
    roles: dict[int, set[str]] = {}
    for c in campaigns:
        roles[c.pk] = selectors.roles_of(user=request.user, campaign=c)
    grading = [c for c in campaigns if Role.GRADER in roles[c.pk]]
    organizing = [
        {"campaign": c, "progress": selectors.campaign_progress(campaign=c)}
        for c in campaigns if Role.ORGANIZER in roles[c.pk] or request.user.is_staff
    ]
    return render(request, "grading/home.html", {"grading": grading, "organizing": organizing})


@login_required
def continue_grading(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Where the grader left off: the first page with open work."""
    campaign = _campaign_for(request, campaign_id)
    number = selectors.page_to_continue(grader=request.user, campaign=campaign)
    if number is None:
        return render(request, "grading/nothing.html", {"campaign": campaign})
    return redirect("grading:grade", campaign_id=campaign.pk, page=number)


@login_required
@require_POST
def more_work(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A grader who has finished asks for more: the campaign's allocation policy may have a unit
    that needs one more judgment (docs/design.md §5.6)."""
    campaign = _campaign_for(request, campaign_id)
    try:
        assignment = allocation.assignment_next(grader=request.user, campaign=campaign)
    except GradingError as exc:
        messages.info(request, exc.message)
        return redirect("grading:home")
    if assignment is None:
        messages.info(request, f"No unit of {campaign.name} needs you right now. Thank you!")
        return redirect("grading:home")
    return redirect("grading:continue", campaign_id=campaign.pk)


@login_required
def grade(request: HttpRequest, campaign_id: int, page: int) -> HttpResponse:
    campaign = _campaign_for(request, campaign_id)
    try:
        grading_page, n_pages = selectors.grading_page_get(grader=request.user, campaign=campaign, number=page)
    except GradingError:
        raise Http404("No such page.") from None
    cards = [
        {"assignment": a, "unit": a.unit, "judgment": grading_page.judgments.get(a.unit_id), "n": i + 1}
        for i, a in enumerate(grading_page.assignments)
    ]
    progress = selectors.campaign_list_for_user(user=request.user).get(pk=campaign.pk)
    guidelines = selectors.guidelines_current(campaign=campaign)
    context = {
        "campaign": campaign, "page": grading_page, "n_pages": n_pages, "cards": cards,
        "query": grading_page.query, "guidelines": guidelines,
        "n_done": progress.n_done, "n_assigned": progress.n_assigned,
        "percent": round(100 * progress.n_done / progress.n_assigned) if progress.n_assigned else 0,
        "readonly": campaign.status != CampaignStatus.OPEN,
        "config": _page_config(request, campaign, grading_page, page, n_pages),
        "broad_choices": [(i + 1, b.value, b.label) for i, b in enumerate(Broad)],
        "verdicts": [("A", "A is more", "1"), ("equal", "Equal", "2"), ("B", "B is more", "3")],
        "params": schemes.normalise_params(campaign.scheme, campaign.scheme_params),
    }
    if campaign.scheme == Scheme.ORDERING:
        context["order"] = grading_page.ordering
        context["submitted"] = all(a.status == "done" for a in grading_page.assignments)
    return render(request, TEMPLATES[campaign.scheme], context)


def _page_config(request: HttpRequest, campaign: Campaign, page: Any, number: int, n_pages: int) -> dict[str, Any]:
    def page_url(n: int) -> str | None:
        return reverse("grading:grade", args=[campaign.pk, n]) if 1 <= n <= n_pages else None

    return {
        "campaign": campaign.pk,
        "scheme": campaign.scheme,
        "params": schemes.normalise_params(campaign.scheme, campaign.scheme_params),
        "query": page.query.pk if page.query else None,
        "guidelinesVersion": campaign.guidelines_version,
        "eventsUrl": reverse("grading-api:events"),
        "prevUrl": page_url(number - 1),
        "nextUrl": page_url(number + 1),
        "readonly": campaign.status != CampaignStatus.OPEN,
        "verdicts": PairwiseVerdict.values,
    }


@login_required
def guidelines(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The current guidelines as a page of their own (the grading page opens them in a dialog).
    Opening them is an event, recorded here for visits without JavaScript."""
    campaign = _campaign_for(request, campaign_id)
    current = selectors.guidelines_current(campaign=campaign)
    if campaign.is_open:
        event_record(grader=request.user, data=EventInput(
            id=uuid4(), campaign_id=campaign.pk, type=EventType.GUIDELINES_VIEWED, client_ts=datetime.now(UTC),
            payload={"version": campaign.guidelines_version, "via": "page"}, session_id="server",
        ))
    return render(request, "grading/guidelines.html", {"campaign": campaign, "guidelines": current})
