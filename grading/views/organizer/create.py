"""New campaign: upload a campaign file, or items plus a form; preview; confirm."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from grading.errors import GradingError
from grading.forms import CampaignFileForm, CampaignItemsForm, CampaignRunsForm
from grading.services import campaign_upload
from grading.services.campaign_files import CampaignFileError
from grading.services.organizers import can_create_campaigns
from grading.views.organizer import error_list


def _render(
    request: HttpRequest,
    *,
    file_form: CampaignFileForm | None = None,
    items_form: CampaignItemsForm | None = None,
    runs_form: CampaignRunsForm | None = None,
    error: GradingError | None = None,
    errors_for: str = "",
    preview: campaign_upload.Preview | None = None,
    status: int = 200,
) -> HttpResponse:
    """The page; with `error`, or a form that did not validate, every problem is listed next to the form
    it came from (the form's action points the browser at that list, which takes the focus)."""
    invalid = next((f for f in (file_form, items_form, runs_form) if f is not None and f.is_bound and f.errors), None)
    errors = error_list(error) if error else _field_problems(invalid) if invalid else []
    not_shown = getattr(error, "not_shown", 0)
    return render(
        request,
        "grading/organizer/new.html",
        {
            "file_form": file_form or CampaignFileForm(),
            "items_form": items_form or CampaignItemsForm(),
            "runs_form": runs_form or CampaignRunsForm(),
            "errors": errors,
            "not_shown": not_shown,
            "problem_count": len(errors) + not_shown,
            "located": isinstance(error, CampaignFileError),
            "errors_for": errors_for,
            "preview": preview,
        },
        status=status,
    )


def _field_problems(form: CampaignFileForm | CampaignItemsForm | CampaignRunsForm) -> list[str]:
    return [
        f"{form[name].label}: {message}" if name in form.fields else message
        for name, messages in form.errors.items()
        for message in messages
    ]


@login_required
def campaign_new(request: HttpRequest) -> HttpResponse:
    """GET: the three ways in. POST (`source` = file | form | runs): check everything, then show a preview."""
    if not can_create_campaigns(request.user):
        raise PermissionDenied("Creating campaigns needs an organizer: an admin makes you one on the Organizers page.")
    if request.method != "POST":
        return _render(request)
    source = request.POST.get("source")
    if source == "file":
        form = CampaignFileForm(request.POST, request.FILES)
        if not form.is_valid():
            return _render(request, file_form=form, errors_for="file", status=400)
        stage = {"definition_file": form.cleaned_data["file"], "media_zip": form.cleaned_data["media"]}
        forms = {"file_form": form}
    elif source == "runs":
        form = CampaignRunsForm(request.POST, request.FILES)
        if not form.is_valid():
            return _render(request, runs_form=form, errors_for="runs", status=400)
        data = form.cleaned_data
        stage = {
            "settings_fields": form.campaign_fields(),
            "runs": campaign_upload.RunsUpload(
                runs=data["runs"], depth=data["depth"], topics=data["topics"], docs=data["docs"]
            ),
        }
        forms = {"runs_form": form}
    else:
        form = CampaignItemsForm(request.POST, request.FILES)
        if not form.is_valid():
            return _render(request, items_form=form, errors_for="form", status=400)
        stage = {
            "settings_fields": form.campaign_fields(),
            "items_csv": form.cleaned_data["items"],
            "media_zip": form.cleaned_data["media"],
        }
        forms = {"items_form": form}
    try:
        preview = campaign_upload.campaign_upload_stage(user=request.user, **stage)
    except GradingError as exc:
        errors_for = source if source in ("file", "runs") else "form"
        return _render(request, **forms, error=exc, errors_for=errors_for, status=400)
    return _render(request, **forms, preview=preview)


@login_required
@require_POST
def campaign_new_confirm(request: HttpRequest) -> HttpResponse:
    token = request.POST.get("token", "")
    if request.POST.get("action") == "cancel":
        try:
            campaign_upload.campaign_upload_discard(token=token)
        except GradingError:
            pass
        messages.info(request, "Nothing was imported.")
        return redirect("grading:campaign-new")
    try:
        campaign = campaign_upload.campaign_upload_confirm(user=request.user, token=token)
    except GradingError as exc:
        return _render(request, error=exc, errors_for="file", status=400)
    messages.success(
        request,
        f"Created {campaign.name}: {campaign.units.count()} units, "
        f"{campaign.assignments.count()} assignments. Add graders, then open it.",
    )
    return redirect("grading:campaign", campaign_id=campaign.pk)
