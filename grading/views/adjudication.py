"""The organizer's adjudication page (docs/design.md §5.6): the units the graders could not settle,
most confusable or most uncertain first, each with its content and a form to record a value."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from grading.errors import GradingError
from grading.models import Adjudication, Campaign, CampaignAllocation, Judgment, Unit, UnitAllocation
from grading.models.choices import Scheme
from grading.services.adjudication import VALUE_KIND, adjudication_record, can_adjudicate
from grading.services.allocation_state import allocation_state_get, categories_of
from grading.services.grader_model import posterior_entropy
from grading.services.payloads import VALUE_FIELD

PAGE = 30
SORTS = {"confusability": "Most confusable first", "uncertainty": "Most uncertain first (model)"}


@login_required
def adjudicate(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    if not can_adjudicate(user=request.user, campaign_id=campaign.pk):
        raise PermissionDenied("Only the campaign's organizers adjudicate its units.")
    errors: dict[int, str] = {}
    if request.method == "POST":
        unit = get_object_or_404(Unit, pk=request.POST.get("unit"), campaign=campaign)
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
            return redirect(f"{request.path}?sort={request.POST.get('sort', 'confusability')}#unit-{unit.pk}")
    sort = request.GET.get("sort") if request.GET.get("sort") in SORTS else "confusability"
    rows = _low_consensus(campaign, sort) if campaign.scheme in VALUE_KIND else []
    context = {
        "campaign": campaign,
        "rows": rows,
        "sort": sort,
        "sorts": SORTS,
        "errors": errors,
        "choices": _choices(campaign),
        "numeric": campaign.scheme == Scheme.NUMERIC,
    }
    return render(request, "grading/organizer/adjudicate.html", context, status=400 if errors else 200)


def _choices(campaign: Campaign) -> list[str]:
    return [] if campaign.scheme == Scheme.NUMERIC else categories_of(campaign)


def _low_consensus(campaign: Campaign, sort: str) -> list[dict[str, Any]]:
    """The units whose judgments disagree (two or more judgments, not all alike), in the chosen order."""
    allocation_state_get(campaign=campaign)
    states = list(
        UnitAllocation.objects.filter(campaign=campaign, disagree=True).order_by("-spread", "unit_id")[: 10 * PAGE]
    )
    field = VALUE_FIELD[campaign.scheme]
    judged: dict[int, list[tuple[int, Any]]] = {}
    for unit_id, grader_id, value in Judgment.objects.filter(
        unit_id__in=[s.unit_id for s in states], **{f"{field}__isnull": False}
    ).values_list("unit_id", "grader_id", field):
        judged.setdefault(unit_id, []).append((grader_id, value))
    model = getattr(CampaignAllocation.objects.filter(campaign=campaign).first(), "model", {}) or {}
    numeric = campaign.scheme == Scheme.NUMERIC
    categories = categories_of(campaign)
    rows = [
        {
            "state": s,
            "values": sorted(str(v) for _, v in judged.get(s.unit_id, [])),
            "uncertainty": None
            if numeric
            else posterior_entropy(model, judged.get(s.unit_id, []), categories=categories),
        }
        for s in states
    ]
    if sort == "uncertainty" and not numeric:
        rows.sort(key=lambda r: (-r["uncertainty"], r["state"].unit_id))
    rows = rows[:PAGE]
    units = {
        u.pk: u
        for u in Unit.objects.filter(pk__in=[r["state"].unit_id for r in rows]).select_related(
            "candidate", "candidate_b", "query"
        )
    }
    done = {a.unit_id: a for a in Adjudication.objects.filter(unit_id__in=units)}
    for row in rows:
        row["unit"], row["adjudication"] = units[row["state"].unit_id], done.get(row["state"].unit_id)
    return rows
