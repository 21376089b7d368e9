"""One unit, as organizers see it: what was judged, by whom (pseudonyms), how, and its statistics."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from analysis import selectors
from analysis.models import UnitResult
from grading.models import GradingEvent, Judgment, Unit

MAX_EVENTS = 500


def _grader_name(pseudonyms: dict[int, str], usernames: dict[int, str], user_id: int, *, admin: bool) -> str:
    pseudonym = pseudonyms.get(user_id, f"grader-{user_id}")
    return f"{pseudonym} ({usernames.get(user_id, '?')})" if admin else pseudonym


def _payload_text(payload: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(payload.items()))


@login_required
def unit_detail(request: HttpRequest, campaign_id: int, unit_id: int) -> HttpResponse:
    unit = get_object_or_404(Unit.objects.select_related("campaign", "query", "candidate", "candidate_b"),
                             pk=unit_id, campaign_id=campaign_id)
    if not selectors.user_knows_campaign(user=request.user, campaign_id=campaign_id):
        raise Http404("No unit matches the given query.")  # as for a unit that does not exist
    if not selectors.user_can_view_reports(user=request.user, campaign_id=campaign_id):
        raise PermissionDenied("Only the campaign's organizers and admins see its units.")
    admin = request.user.is_staff
    pseudonyms = selectors.grader_pseudonyms(campaign_id=campaign_id)
    judgments = list(Judgment.objects.filter(unit=unit).select_related("grader").order_by("grader_id"))
    usernames = {j.grader_id: j.grader.get_username() for j in judgments}
    events = list(GradingEvent.objects.filter(unit=unit).order_by("server_ts", "seq")
                  .values("grader_id", "type", "payload", "client_ts", "server_ts", "session_id", "seq")[:MAX_EVENTS])
    good = selectors.run_latest_good(campaign_id=campaign_id)
    stats = UnitResult.objects.filter(run=good, unit=unit).first() if good else None
    context = {
        "campaign": unit.campaign, "unit": unit, "stats": stats, "run": good,
        "provenance": unit.candidate.provenance.select_related("system", "query").order_by("system__name"),
        "judgments": [{"grader": _grader_name(pseudonyms, usernames, j.grader_id, admin=admin), "j": j} for j in judgments],
        "events": [{**e, "grader": _grader_name(pseudonyms, usernames, e["grader_id"], admin=admin),
                    "payload_text": _payload_text(e["payload"])} for e in events],
        "events_cut": len(events) == MAX_EVENTS,
    }
    return render(request, "analysis/unit.html", context)
