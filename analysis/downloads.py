"""Downloads for a campaign's organizers (and admins), linked from the campaign and report pages.

Whoever does not organize the campaign gets 404 (a grader of it 403), as on the organizer pages.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect

from analysis import export, qrels, selectors, streams
from analysis.models import AnalysisRun
from analysis.services.participants import participants_csv, participants_report
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.audit import export_record
from grading.views.organizer import organized

DOWNLOADS: dict[tuple[str, str], str] = {
    ("ground-truth", "csv"): "text/csv; charset=utf-8",
    ("ground-truth", "json"): "application/json",
    ("ground-truth", "parquet"): "application/vnd.apache.parquet",
    ("ground-truth", "qrels"): qrels.CONTENT_TYPE,
    ("judgments", "csv"): "text/csv; charset=utf-8",
    ("events", "csv"): "text/csv; charset=utf-8",
    ("events", "parquet"): "application/vnd.apache.parquet",
    ("ordering-ground-truth", "csv"): "text/csv; charset=utf-8",
    ("participants", "csv"): "text/csv; charset=utf-8",
}


@login_required
def download(request: HttpRequest, campaign_id: int, what: str, fmt: str) -> HttpResponse:
    campaign = organized(request, campaign_id)
    content_type = DOWNLOADS.get((what, fmt))
    if content_type is None or (what == "ordering-ground-truth" and campaign.scheme != Scheme.ORDERING):
        raise Http404(f"No download {what}.{fmt} for this campaign.")
    filename = f"{campaign.slug}-{what}.{fmt}"
    run = selectors.run_latest_good(campaign_id=campaign.pk) if what == "ground-truth" else None
    if what == "ground-truth" and run is None:
        messages.info(request, "The ground truth comes from an analysis: run one first, then download it.")
        return redirect("analysis:report", campaign_id=campaign.pk)
    if fmt == "qrels":
        return _qrels(request, campaign, run, filename)
    export_record(actor=request.user, campaign=campaign, what=what, fmt=fmt, analysis=run.number if run else None)
    if what == "participants":
        response = HttpResponse(participants_csv(participants_report(campaign=campaign)), content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    if what == "ground-truth":
        filters = export.Filters()
        body = {
            "csv": streams.ground_truth_csv,
            "json": streams.ground_truth_json,
            "parquet": streams.ground_truth_parquet,
        }[fmt](run, filters)
    elif what == "judgments":
        body = streams.judgments_csv(campaign)
    elif what == "events":
        body = export.events_stream(campaign.pk, "csv") if fmt == "csv" else streams.events_parquet(campaign)
    else:
        body = streams.ordering_ground_truth_csv(campaign)
    if fmt == "parquet":
        return FileResponse(body, as_attachment=True, filename=filename, content_type=content_type)
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _qrels(request: HttpRequest, campaign: Campaign, run: AnalysisRun, filename: str) -> HttpResponse:
    """The ground truth as TREC qrels with the scheme's default grades (analysis/qrels.py); a campaign
    whose ids cannot be written so goes back to the report with the reason."""
    try:
        text, _ = qrels.qrels_text(run, export.Filters(), qrels.grade_mapping(campaign))
    except qrels.QrelsError as exc:
        messages.error(request, f"No qrels file: {exc}.")
        return redirect("analysis:report", campaign_id=campaign.pk)
    export_record(actor=request.user, campaign=campaign, what="ground-truth", fmt="qrels", analysis=run.number)
    response = HttpResponse(text, content_type=qrels.CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
