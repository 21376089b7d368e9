"""Gold units (docs/design.md §5.6, "Hidden units"): the organizer sets a unit's known answer; the
graders are served it like any other unit and their accuracy on it appears in the report."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from grading import selectors_organizer
from grading.errors import GradingError
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.adjudication import VALUE_KIND
from grading.services.allocation_state import categories_of
from grading.services.gold import gold_remove, gold_set
from grading.views.organizer import error_list, organized


@login_required
def gold(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    errors: list[str] = []
    if request.method == "POST":
        unit_id = request.POST.get("unit", "")
        try:
            if request.POST.get("action") == "remove":
                gold_remove(organizer=request.user, campaign=campaign, unit_external_id=unit_id)
                messages.success(request, f"Unit {unit_id} is an ordinary unit again.")
            else:
                gold_set(
                    organizer=request.user,
                    campaign=campaign,
                    unit_external_id=unit_id,
                    value=request.POST.get("value", ""),
                )
                messages.success(request, f"Unit {unit_id} is a gold unit.")
        except GradingError as exc:
            errors = error_list(exc)
        else:
            return redirect("grading:gold", campaign.pk)
    return _page(request, campaign, errors=errors, posted=request.POST if errors else None)


def _page(request: HttpRequest, campaign: Campaign, *, errors: list[str], posted) -> HttpResponse:
    rows = selectors_organizer.gold_answers_of(campaign=campaign)
    numeric = campaign.scheme == Scheme.NUMERIC
    return render(
        request,
        "grading/organizer/gold.html",
        {
            "campaign": campaign,
            "rows": rows,
            "errors": errors,
            "numeric": numeric,
            "takes_values": campaign.scheme in VALUE_KIND,
            "choices": [] if numeric else categories_of(campaign),
            "posted": posted or {},
        },
        status=400 if errors else 200,
    )
