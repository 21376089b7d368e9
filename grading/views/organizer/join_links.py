"""Join links of a campaign (crowd studies): create one, pause or reopen it. They are listed on the
campaign's page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from grading import selectors_organizer
from grading.errors import GradingError
from grading.forms import JoinLinkForm
from grading.services import join_links
from grading.views.organizer import campaign as campaign_views
from grading.views.organizer import error_list, organized


@login_required
@require_POST
def join_link_create(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    form = JoinLinkForm(request.POST)
    if not form.is_valid():
        return campaign_views.page(request, campaign, link_form=form, status=400)
    try:
        link = join_links.join_link_create(campaign=campaign, actor=request.user, **form.cleaned_data)
    except GradingError as exc:
        # A problem with the qualification rule goes next to its field; any other above the form.
        fields = {f"qualification.{rule}": name for name, rule in JoinLinkForm.QUALIFICATION_FIELDS.items()}
        if exc.field in fields:
            form.add_error(fields[exc.field], exc.message)
            return campaign_views.page(request, campaign, link_form=form, link_errors=["No link was made."], status=400)
        return campaign_views.page(
            request, campaign, link_form=form, link_errors=[*error_list(exc), "No link was made."], status=400
        )
    messages.success(request, f"Join link {link.pk} made: copy its address below into your recruitment platform.")
    return redirect(f"{reverse('grading:campaign', args=[campaign.pk])}#link-{link.pk}")


@login_required
@require_POST
def join_link_pause(request: HttpRequest, campaign_id: int, link_id: int, to: str) -> HttpResponse:
    """`to` is "pause" or "reopen"."""
    campaign = organized(request, campaign_id)
    link = selectors_organizer.join_link_get(campaign=campaign, link_id=link_id)
    if link is None or to not in ("pause", "reopen"):
        raise Http404("No such join link in this campaign.")
    join_links.join_link_pause(link=link, paused=to == "pause", actor=request.user)
    messages.success(
        request,
        f"Join link {link.pk} is paused: nobody new can join; participants already in keep working."
        if to == "pause"
        else f"Join link {link.pk} is open again.",
    )
    return redirect(f"{reverse('grading:campaign', args=[campaign.pk])}#link-{link.pk}")
