"""Report pages: the campaign report, starting a run, CSV downloads of every table."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from analysis import selectors
from analysis.models import RunTrigger
from analysis.services import runs
from analysis.services.tables import report_plots, report_tables
from analysis.services.uploads import system_orderings_upload
from grading.errors import InvalidValue
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.system_outputs import system_orderings_rows_from_csv

UPLOAD_MAX_BYTES = 20 * 1024 * 1024


def _campaign(request: HttpRequest, campaign_id: int) -> Campaign:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    if not selectors.user_knows_campaign(user=request.user, campaign_id=campaign.pk):
        raise Http404("No campaign matches the given query.")  # as for a campaign that does not exist
    if not selectors.user_can_view_reports(user=request.user, campaign_id=campaign.pk):
        raise PermissionDenied("Only the campaign's organizers and admins see its report.")
    return campaign


@login_required
def report(request: HttpRequest, campaign_id: int) -> HttpResponse:
    return _report(request, _campaign(request, campaign_id))


def _report(request: HttpRequest, campaign: Campaign, *, upload_error: str = "", status: int = 200) -> HttpResponse:
    runs.run_sweep_stale()
    runs.runs_execute_due(campaign_id=campaign.pk)  # embedded mode: debounced automatic runs
    good = selectors.run_latest_good(campaign_id=campaign.pk)
    context = {
        "campaign": campaign, "good": good, "active": selectors.run_active(campaign_id=campaign.pk),
        "latest": selectors.run_latest(campaign_id=campaign.pk), "is_admin": request.user.is_staff,
        "tables": report_tables(good, show_names=request.user.is_staff) if good else {},
        "plots": report_plots(good.result) if good else {},
        "takes_system_orderings": campaign.scheme == Scheme.ORDERING, "upload_error": upload_error,
    }
    return render(request, "analysis/report.html", context, status=status)


@login_required
@require_POST
def report_run(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = _campaign(request, campaign_id)
    runs.run_create(campaign_id=campaign.pk, trigger=RunTrigger.MANUAL, user=request.user)
    return redirect("analysis:report", campaign_id=campaign.pk)


@login_required
def report_csv(request: HttpRequest, campaign_id: int, table: str) -> HttpResponse:
    campaign = _campaign(request, campaign_id)
    good = selectors.run_latest_good(campaign_id=campaign.pk)
    tables = report_tables(good, show_names=request.user.is_staff) if good else {}
    if table not in tables:
        raise Http404(f"no table {table!r} in the latest report")
    response = HttpResponse(tables[table].csv(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-{table}.csv"'
    return response


@login_required
@require_POST
def report_system_orderings(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Upload systems' orderings (CSV query,system,rank,item); a malformed file stores nothing."""
    campaign = _campaign(request, campaign_id)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise InvalidValue("choose a CSV file with the header query,system,rank,item", field="file")
        if upload.size > UPLOAD_MAX_BYTES:
            raise InvalidValue(f"the file is larger than {UPLOAD_MAX_BYTES // 2**20} MB", field="file")
        rows = system_orderings_rows_from_csv(upload.read())
        summary, run = system_orderings_upload(campaign=campaign, rows=rows, trigger=RunTrigger.MANUAL,
                                               user=request.user)
    except InvalidValue as exc:
        name = upload.name if upload is not None else "the upload"
        return _report(request, campaign, upload_error=f"{name}: {exc.message}. Nothing was imported.", status=400)
    messages.success(request, f"Imported {summary.orderings} orderings of {summary.queries} queries for "
                              f"{', '.join(summary.systems)}; analysis #{run.pk} scores them.")
    return redirect("analysis:report", campaign_id=campaign.pk)
