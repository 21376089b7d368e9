"""The campaign's Activity tab: what its organizers and the admins did to it, newest first, a page at
a time, each entry in words (who, when, what, and what changed from what to what)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from grading import selectors_organizer
from grading.activity import activity_line
from grading.views.organizer import organized

PER_PAGE = 50


@login_required
def activity(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    page = Paginator(selectors_organizer.audit_entries_of(campaign=campaign), PER_PAGE).get_page(
        request.GET.get("page")
    )
    lines = [activity_line(entry) for entry in page.object_list]
    return render(request, "grading/organizer/activity.html", {"campaign": campaign, "page": page, "lines": lines})
