"""Members of a campaign: add (one or many, inviting new accounts), remove, assign initial work."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from grading import selectors_organizer
from grading.errors import GradingError
from grading.forms import MembersForm
from grading.models import Campaign
from grading.services import exclusion
from grading.services import members as members_service
from grading.services.organizer import assignments_initial
from grading.views.organizer import error_list, organized


def _page(
    request: HttpRequest,
    campaign: Campaign,
    *,
    form: MembersForm | None = None,
    added: list | None = None,
    errors: list[str] | None = None,
    exclusion_error: tuple[int, list[str], str] | None = None,
    status: int = 200,
) -> HttpResponse:
    roles = selectors_organizer.members_of(campaign=campaign)
    if exclusion_error is not None:  # shown beside the form it came from, with what was typed
        for role in roles:
            if role.pk == exclusion_error[0]:
                role.exclusion_errors, role.reason_given = exclusion_error[1], exclusion_error[2]
    return render(
        request,
        "grading/organizer/members.html",
        {
            "campaign": campaign,
            "form": form or MembersForm(),
            "roles": roles,
            "added": added or [],
            "errors": errors or [],
            "email_enabled": settings.EMAIL_ENABLED,
        },
        status=status,
    )


@login_required
def members(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    if request.method != "POST":
        return _page(request, campaign)
    form = MembersForm(request.POST)
    if not form.is_valid():
        return _page(request, campaign, form=form, status=400)
    try:
        added = members_service.members_add(
            campaign=campaign,
            people=form.cleaned_data["people"],
            role=form.cleaned_data["role"],
            absolute_url=request.build_absolute_uri,
            actor=request.user,
        )
    except GradingError as exc:
        return _page(request, campaign, form=form, errors=[*error_list(exc), "Nobody was added."], status=400)
    return _page(request, campaign, added=added)


@login_required
def member_remove(request: HttpRequest, campaign_id: int, user_id: int, role: str) -> HttpResponse:
    """GET asks for confirmation; POST removes."""
    campaign = organized(request, campaign_id)
    member = selectors_organizer.member_get(campaign=campaign, user_id=user_id, role=role)
    if member is None:
        raise Http404("No such member.")
    if request.method == "POST":
        try:
            returned = members_service.member_remove(campaign=campaign, user_id=user_id, role=role, actor=request.user)
        except GradingError as exc:
            return _page(request, campaign, errors=error_list(exc), status=400)
        messages.success(
            request,
            f"Removed {member.user.username} as {role}. Their judgments stay; "
            f"{returned} open assignment(s) went back to the pool.",
        )
        return redirect("grading:members", campaign_id=campaign.pk)
    return render(request, "grading/organizer/remove.html", {"campaign": campaign, "member": member})


@login_required
@require_POST
def member_exclusion(request: HttpRequest, campaign_id: int, user_id: int) -> HttpResponse:
    """Exclude a grader from the analysis, with a reason (`action=exclude`), or include them again."""
    campaign = organized(request, campaign_id)
    try:
        role = exclusion.grader_role_find(campaign=campaign, grader=str(user_id))
    except GradingError:
        raise Http404("No such grader.") from None
    reason = request.POST.get("reason", "")
    try:
        if request.POST.get("action") == "include":
            exclusion.grader_include(campaign=campaign, role=role, actor=request.user)
            messages.success(request, f"Included {role.pseudonym} again: their judgments count in the next analysis.")
        else:
            exclusion.grader_exclude(campaign=campaign, role=role, reason=reason, actor=request.user)
            messages.success(
                request,
                f"Excluded {role.pseudonym}: their judgments stay in the log but leave the next analysis.",
            )
    except GradingError as exc:
        return _page(request, campaign, exclusion_error=(role.pk, error_list(exc), reason[:500]), status=400)
    return redirect("grading:members", campaign_id=campaign.pk)


@login_required
@require_POST
def assign_initial(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    try:
        made = assignments_initial(campaign=campaign, actor=request.user, seed=0)
    except GradingError as exc:
        return _page(request, campaign, errors=error_list(exc), status=400)
    messages.success(request, f"Created {made} assignment(s): every unit now has {campaign.initial_overlap} grader(s).")
    return redirect("grading:members", campaign_id=campaign.pk)
