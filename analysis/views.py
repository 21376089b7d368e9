"""Report pages: the campaign report, starting a run, CSV downloads of every table."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from analysis import selectors
from analysis.models import RunTrigger
from analysis.services import runs
from analysis.services.tables import report_plots, report_tables
from grading.models import Campaign


def _campaign(request: HttpRequest, campaign_id: int) -> Campaign:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    if not selectors.user_can_view_reports(user=request.user, campaign_id=campaign.pk):
        raise PermissionDenied("Only the campaign's organizers and admins see its report.")
    return campaign


@login_required
def report(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = _campaign(request, campaign_id)
    runs.run_sweep_stale()
    runs.runs_execute_due(campaign_id=campaign.pk)  # embedded mode: debounced automatic runs
    good = selectors.run_latest_good(campaign_id=campaign.pk)
    context = {
        "campaign": campaign, "good": good, "active": selectors.run_active(campaign_id=campaign.pk),
        "latest": selectors.run_latest(campaign_id=campaign.pk), "is_admin": request.user.is_staff,
        "tables": report_tables(good, show_names=request.user.is_staff) if good else {},
        "plots": report_plots(good.result) if good else {},
    }
    return render(request, "analysis/report.html", context)


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
