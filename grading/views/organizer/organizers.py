"""The site's organizers (who may create campaigns), managed by admins."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from grading import selectors_organizer
from grading.errors import GradingError
from grading.forms import OrganizerForm
from grading.services.organizers import organizer_set
from grading.views.organizer import error_list


def _page(
    request: HttpRequest, *, form: OrganizerForm | None = None, errors: list[str] | None = None, status: int = 200
) -> HttpResponse:
    return render(
        request,
        "grading/organizer/organizers.html",
        {"form": form or OrganizerForm(), "organizers": selectors_organizer.site_organizers(), "errors": errors or []},
        status=status,
    )


@login_required
def organizers(request: HttpRequest) -> HttpResponse:
    """GET lists the organizers; POST (a user name, and `organizer` 1 or 0) grants or withdraws."""
    if not request.user.is_staff:
        raise PermissionDenied("Only admins (staff users) make people organizers.")
    if request.method != "POST":
        return _page(request)
    form = OrganizerForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    grant = request.POST.get("organizer", "1") != "0"
    try:
        user = organizer_set(username=form.cleaned_data["username"], organizer=grant, actor=request.user)
    except GradingError as exc:
        return _page(request, form=form, errors=[*error_list(exc), "Nothing was changed."], status=400)
    if grant:
        messages.success(request, f"{user.get_username()} is an organizer: they can now create campaigns.")
    else:
        messages.success(
            request,
            f"{user.get_username()} is no longer an organizer: the campaigns they "
            "organize stay theirs, but they cannot create new ones.",
        )
    return redirect("grading:organizers")
