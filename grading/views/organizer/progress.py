"""The live progress dashboard: a page, and the JSON it polls."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from grading import selectors_organizer
from grading.views.organizer import organized


@login_required
def progress(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    data = selectors_organizer.campaign_dashboard(campaign=campaign)
    return render(request, "grading/organizer/progress.html", {"campaign": campaign, "data": data})


@login_required
def progress_json(request: HttpRequest, campaign_id: int) -> JsonResponse:
    campaign = organized(request, campaign_id)
    response = JsonResponse(selectors_organizer.campaign_dashboard(campaign=campaign))
    response["Cache-Control"] = "no-store"
    return response
