"""Pages for the organizers of a campaign: creating it, its settings and lifecycle, its members,
and its live progress. Views are thin: a form checks the input's shape, one service or selector
does the work."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from grading import selectors
from grading.errors import InvalidValue, NotFound, NotOrganizer
from grading.models import Campaign


def organized(request: HttpRequest, campaign_id: int) -> Campaign:
    """The campaign if the user organizes it. Whoever has no role in it gets 404 (its existence is
    not revealed), as does an id no campaign can have (0, beyond 2**63); a grader of it gets 403."""
    try:
        return selectors.campaign_get_for_organizer(user=request.user, campaign_id=campaign_id)
    except (NotFound, InvalidValue):
        raise Http404("No such campaign among those you organize.") from None
    except NotOrganizer:
        raise PermissionDenied("Only the campaign's organizers manage it.") from None


def error_list(exc: Exception) -> list[str]:
    """Every problem an error carries (a checker may collect several), each naming where it is."""
    many = getattr(exc, "errors", None)
    if many:
        return [getattr(e, "message", str(e)) for e in many]
    return [getattr(exc, "message", str(exc))]
