"""One unit, as organizers see it: what was judged, by whom (pseudonyms), how, and its statistics."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from analysis import selectors

MAX_EVENTS = selectors.UNIT_PAGE_MAX_EVENTS


def _grader_name(pseudonyms: dict[int, str], usernames: dict[int, str], user_id: int, *, admin: bool) -> str:
    pseudonym = pseudonyms.get(user_id, f"grader-{user_id}")
    return f"{pseudonym} ({usernames.get(user_id, '?')})" if admin else pseudonym


def _payload_text(payload: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(payload.items()))


@login_required
def unit_detail(request: HttpRequest, campaign_id: int, unit_id: int) -> HttpResponse:
    unit = selectors.unit_for_page(campaign_id=campaign_id, unit_id=unit_id)
    if unit is None:
        raise Http404("no such unit in this campaign")
    if not selectors.user_knows_campaign(user=request.user, campaign_id=campaign_id):
        raise Http404("No unit matches the given query.")  # as for a unit that does not exist
    if not selectors.user_can_view_reports(user=request.user, campaign_id=campaign_id):
        raise PermissionDenied("Only the campaign's organizers and admins see its units.")
    admin = request.user.is_staff
    pseudonyms = selectors.grader_pseudonyms(campaign_id=campaign_id)
    judgments = selectors.unit_judgments(unit=unit)
    usernames = {j.grader_id: j.grader.get_username() for j in judgments}
    events = selectors.unit_event_rows(unit=unit, limit=MAX_EVENTS)
    good = selectors.run_latest_good(campaign_id=campaign_id)
    context = {
        "campaign": unit.campaign,
        "unit": unit,
        "stats": selectors.unit_result(run=good, unit=unit),
        "run": good,
        "provenance": selectors.unit_provenance(unit=unit),
        "judgments": [
            {"grader": _grader_name(pseudonyms, usernames, j.grader_id, admin=admin), "j": j} for j in judgments
        ],
        "events": [
            {
                **e,
                "grader": _grader_name(pseudonyms, usernames, e["grader_id"], admin=admin),
                "payload_text": _payload_text(e["payload"]),
            }
            for e in events
        ],
        "events_cut": len(events) == MAX_EVENTS,
        "comments": [
            {
                "grader": _grader_name(pseudonyms, usernames, j.grader_id, admin=admin),
                "text": j.comment,
                "when": j.updated_at,
            }
            for j in judgments
            if j.comment
        ],
    }
    return render(request, "analysis/unit.html", context)
