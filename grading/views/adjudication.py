"""The organizer's adjudication page (docs/design.md §5.6): the units the graders could not settle,
most confusable or most uncertain first, each with its content and a form to record a value."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from grading import selectors
from grading.errors import GradingError
from grading.models.choices import Scheme
from grading.selectors_adjudication import SORTS, adjudication_choices, units_in_dispute
from grading.services.adjudication import VALUE_KIND, adjudication_record
from grading.views.organizer import organized


@login_required
def adjudicate(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The page sits beside the graders' pages (/campaigns/<id>/…), where a campaign one may not
    see answers 404 exactly like a missing one: so does this page to its graders too."""
    try:
        campaign = organized(request, campaign_id)
    except PermissionDenied:
        raise Http404("No such campaign among those you organize.") from None
    errors: dict[int, str] = {}
    if request.method == "POST":
        try:
            unit = selectors.unit_get_in_campaign(campaign=campaign, unit_id=request.POST.get("unit"))
        except GradingError:
            raise Http404("No such unit in this campaign.") from None
        try:
            adjudication_record(
                organizer=request.user,
                unit=unit,
                value=request.POST.get("value", ""),
                note=request.POST.get("note", ""),
            )
        except GradingError as exc:
            errors[unit.pk] = exc.message
        else:
            messages.success(request, f"Unit {unit.external_id} adjudicated.")
            sort = request.POST.get("sort") if request.POST.get("sort") in SORTS else "confusability"
            return redirect(f"{request.path}?sort={sort}#unit-{unit.pk}")
    sort = request.GET.get("sort") if request.GET.get("sort") in SORTS else "confusability"
    context = {
        "campaign": campaign,
        "rows": units_in_dispute(campaign=campaign, sort=sort) if campaign.scheme in VALUE_KIND else [],
        "sort": sort,
        "sorts": SORTS,
        "errors": errors,
        "choices": adjudication_choices(campaign=campaign),
        "numeric": campaign.scheme == Scheme.NUMERIC,
    }
    return render(request, "grading/organizer/adjudicate.html", context, status=400 if errors else 200)
