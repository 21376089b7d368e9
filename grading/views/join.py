"""A crowd participant's way in: the join link (docs/design.md §2, "Join links").

GET shows what will happen and writes nothing (docs/design.md §4): the consent text, or a welcome
back, or a form asking for the platform id, or why the link takes nobody new. The button (a POST)
makes or finds the participant's grader, logs them in on this browser, and goes on to the
guidelines. Every visit counts against the per-address rate of THROTTLE_RATES["join"].
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from evalutron.limits import visit_allowed
from grading import selectors_organizer
from grading.errors import InvalidValue
from grading.models import JoinLink, Platform
from grading.services import join_links
from grading.services.join_links import Identity, LinkClosed

BACKEND = "django.contrib.auth.backends.ModelBackend"


def _render(request: HttpRequest, link: JoinLink, status: int = 200, **context: Any) -> HttpResponse:
    context.setdefault("platforms", Platform.choices)
    return render(request, "grading/join.html", {"link": link, "campaign": link.campaign, **context}, status=status)


def _hidden(identity: Identity) -> list[tuple[str, str]]:
    """The identity as the form's hidden fields, under the platform's own parameter names."""
    names = join_links.PARAMETERS[identity.platform if identity.platform in join_links.PARAMETERS else "generic"]
    values = (identity.external_id, identity.study_id, identity.session_id)
    fields = [(name, value) for name, value in zip(names, values, strict=True) if name and value]
    if identity.platform not in (Platform.PROLIFIC, Platform.MTURK) or names[0] == "pid":
        fields.append(("platform", identity.platform))
    return fields


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, key: str) -> HttpResponse:
    allowed, wait = visit_allowed(request, "join")
    if not allowed:
        response = render(request, "grading/join_busy.html", {"minutes": max(1, wait // 60)}, status=429)
        response["Retry-After"] = str(wait)
        return response
    link = selectors_organizer.join_link_by_key(key=key[:64])
    if link is None:
        raise Http404("No such study link: check the address the platform gave you.")
    params = request.POST if request.method == "POST" else request.GET
    try:
        identity = join_links.identity_from(params)
    except InvalidValue as exc:
        return _render(request, link, status=400, ask_id=True, id_error=exc.message)
    if identity is None:
        return _render(request, link, ask_id=True)
    found = selectors_organizer.participant_find(
        campaign=link.campaign, platform=identity.platform, external_id=identity.external_id
    )
    if request.method == "GET":
        if found is None:
            closed = join_links.closed_reason(link)
            if closed is not None:
                return _render(request, link, status=403, closed=join_links.CLOSED_WORDS[closed])
        other = request.user.is_authenticated and (found is None or found.user_id != request.user.pk)
        return _render(
            request,
            link,
            identity=identity,
            hidden=_hidden(identity),
            returning=found is not None,
            other_account=other,
        )
    try:
        joined = join_links.participant_join(link=link, identity=identity, consent=request.POST.get("consent") == "yes")
    except LinkClosed as exc:
        return _render(request, link, status=403, closed=exc.message)
    except InvalidValue as exc:  # no agreement to the consent text: it is shown again, with the reason
        return _render(
            request, link, status=400, identity=identity, hidden=_hidden(identity), consent_error=exc.message
        )
    login(request, joined.participant.user, backend=BACKEND)
    if joined.created:
        return redirect("grading:guidelines", campaign_id=link.campaign_id)
    return redirect("grading:continue", campaign_id=link.campaign_id)
