"""A campaign's own page for its organizers: overview, settings, lifecycle."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from grading import selectors, selectors_organizer
from grading.errors import GradingError
from grading.forms import EXCLUSION_FIELDS, CampaignEditForm, JoinLinkForm
from grading.models import Campaign
from grading.models.choices import CampaignStatus
from grading.services import lifecycle
from grading.services.join_links import ORGANIZER_WORDS, link_url_path
from grading.services.qualification import rule_words
from grading.views.organizer import error_list, organized

STATUS_VERBS = {CampaignStatus.OPEN: "Open", CampaignStatus.CLOSED: "Close"}


def _initial(campaign: Campaign) -> dict:
    current = selectors.guidelines_current(campaign=campaign)
    return {
        "name": campaign.name,
        "description": campaign.description,
        "scheme_params": _json(campaign.scheme_params),
        "guidelines": current.text if current else "",
        "initial_overlap": campaign.initial_overlap,
        "max_overlap": campaign.max_overlap,
        "budget": campaign.budget,
        "policy": campaign.policy,
        **{name: (campaign.policy_params or {}).get(name) for name in EXCLUSION_FIELDS},
    }


def _with_thresholds(campaign: Campaign, fields: dict) -> dict:
    """The form's fields with the automatic-exclusion thresholds moved into the campaign's
    policy_params (an empty one removed); policy_params only when that changes them."""
    params = dict(campaign.policy_params or {})
    for name in EXCLUSION_FIELDS:
        if name not in fields:
            continue
        value = fields.pop(name)
        if value is None:
            params.pop(name, None)
        else:
            params[name] = value
    if params != (campaign.policy_params or {}):
        fields["policy_params"] = params
    return fields


def _field_errors(form: CampaignEditForm, exc: GradingError) -> bool:
    """Put a service's error beside the form field it names (``policy_params.<name>``); whether it could."""
    name = (getattr(exc, "field", "") or "").removeprefix("policy_params.")
    if name not in EXCLUSION_FIELDS or name not in form.fields:
        return False
    form.add_error(name, f"{getattr(exc, 'message', str(exc))} Nothing was changed.")
    return True


def _json(value: dict) -> str:
    return json.dumps(value) if value else ""


def page(
    request: HttpRequest,
    campaign: Campaign,
    form: CampaignEditForm | None = None,
    errors: list[str] | None = None,
    status: int = 200,
    *,
    link_form: JoinLinkForm | None = None,
    link_errors: list[str] | None = None,
) -> HttpResponse:
    """The campaign's page; `errors` go next to the settings form, `link_errors` next to the
    join-link form."""
    started = lifecycle.grading_started(campaign)
    form = form or CampaignEditForm(initial=_initial(campaign), scheme=campaign.scheme)
    if started:  # shown, not editable (a disabled input is not sent: the service keeps the parameters)
        form.fields["scheme_params"].widget.attrs["disabled"] = True
        form.fields["scheme_params"].help_text = f"Locked: {lifecycle.LOCK_REASON}."
    steps = [
        (s, "Reopen" if campaign.status == CampaignStatus.CLOSED else STATUS_VERBS[s])
        for s in lifecycle.TRANSITIONS.get(campaign.status, ())
    ]
    return render(
        request,
        "grading/organizer/campaign.html",
        {
            "campaign": campaign,
            "form": form,
            "errors": errors or [],
            "started": started,
            "lock_reason": lifecycle.LOCK_REASON,
            "steps": steps,
            "counts": selectors_organizer.campaign_counts(campaign=campaign),
            "link_form": link_form or JoinLinkForm(),
            "link_errors": link_errors or [],
            "join_links": [
                (
                    link,
                    request.build_absolute_uri(link_url_path(link)),
                    ORGANIZER_WORDS.get(link.closed or "", ""),
                    rule_words(link.qualification, scheme=campaign.scheme),
                )
                for link in selectors_organizer.join_links_of(campaign=campaign)
            ],
        },
        status=status,
    )


@login_required
def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = organized(request, campaign_id)
    if request.method != "POST":
        return page(request, campaign)
    form = CampaignEditForm(request.POST, scheme=campaign.scheme)
    if not form.is_valid():
        return page(request, campaign, form=form, status=400)
    fields = _with_thresholds(campaign, dict(form.cleaned_data))
    if not fields["scheme_params"]:
        fields.pop("scheme_params")  # left empty: keep the current parameters
    try:
        lifecycle.campaign_settings_update(campaign=campaign, actor=request.user, **fields)
    except GradingError as exc:
        if _field_errors(form, exc):
            return page(request, campaign, form=form, status=400)
        return page(request, campaign, form=form, errors=[*error_list(exc), "Nothing was changed."], status=400)
    messages.success(request, "Settings saved.")
    return redirect("grading:campaign", campaign_id=campaign.pk)


@login_required
def campaign_status(request: HttpRequest, campaign_id: int, to: str) -> HttpResponse:
    """GET asks for confirmation; POST changes the status."""
    campaign = organized(request, campaign_id)
    if request.method == "POST":
        try:
            lifecycle.campaign_transition(campaign=campaign, to=to, actor=request.user)
        except GradingError as exc:
            return page(request, campaign, errors=error_list(exc), status=400)
        messages.success(request, f"{campaign.name} is now {to}.")
        return redirect("grading:campaign", campaign_id=campaign.pk)
    verb = (
        "Reopen" if campaign.status == CampaignStatus.CLOSED and to == CampaignStatus.OPEN else STATUS_VERBS.get(to, to)
    )
    return render(
        request,
        "grading/organizer/confirm.html",
        {
            "campaign": campaign,
            "verb": verb,
            "to": to,
            "consequence": {
                CampaignStatus.OPEN: "Graders can start (or resume) grading. Once anyone has graded, the scheme "
                "and the items are locked.",
                CampaignStatus.CLOSED: "Graders can no longer change their judgments; they can still look at them. "
                "You can reopen it later.",
            }.get(to, ""),
        },
    )
