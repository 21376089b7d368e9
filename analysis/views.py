"""Report pages: the campaign report, starting a run, CSV downloads of every table."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from analysis import selectors
from analysis.models import RunTrigger
from analysis.presentation.forms import InstrumentLinksForm, RunsEvaluationForm, SystemEvaluationForm
from analysis.presentation.glossary import TERMS, glossary
from analysis.presentation.report_tables import (
    PAGE_QUERIES,
    RenderedTables,
    report_plots_of_run,
    report_tables,
    report_tables_rendered,
)
from analysis.presentation.summary import report_summary
from analysis.qrels import QrelsError
from analysis.run_evaluation import EvaluationError, campaign_runs_evaluate, evaluation_view
from analysis.services import runs
from analysis.services.system_evaluation import system_evaluation_create
from analysis.services.uploads import run_after_upload, systems_upload
from grading.errors import InvalidValue
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.campaign_file_errors import CampaignFileError
from grading.services.instrument_links import campaign_set_instrument_links
from grading.services.system_scores import RATING_SCHEMES
from grading.services.trec_runs import Run, run_parse


def _campaign(request: HttpRequest, campaign_id: int) -> Campaign:
    campaign = selectors.campaign_get(campaign_id=campaign_id)
    if campaign is None or not selectors.user_knows_campaign(user=request.user, campaign_id=campaign.pk):
        raise Http404("No campaign matches the given query.")  # a campaign not theirs is not revealed
    if not selectors.user_can_view_reports(user=request.user, campaign_id=campaign.pk):
        raise PermissionDenied("Only the campaign's organizers and admins see its report.")
    return campaign


@login_required
def report(request: HttpRequest, campaign_id: int) -> HttpResponse:
    return _report(request, _campaign(request, campaign_id))


def _report(
    request: HttpRequest,
    campaign: Campaign,
    *,
    upload_error: str = "",
    scores_error: str = "",
    links_form: InstrumentLinksForm | None = None,
    evaluation: SystemEvaluationForm | None = None,
    evaluation_error: str = "",
    runs_form: RunsEvaluationForm | None = None,
    runs_errors: list[str] | None = None,
    runs_result: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    good = selectors.run_latest_good_for_page(campaign_id=campaign.pk, page_queries=PAGE_QUERIES)
    if evaluation is None:
        evaluation = SystemEvaluationForm(request.GET if "aggregate" in request.GET else None)
    evaluation_missing = False
    variant: tuple[Any, ...] = ()
    if good is not None and evaluation.is_bound and evaluation.is_valid() and not evaluation_error:
        stored = selectors.system_evaluation_get(run_id=good.pk, **evaluation.cleaned_data)
        if stored is not None:  # computed when it was asked for; shown here, never computed
            good.result = {**good.result, "systems": {**good.result.get("systems", {}), "uploaded": stored.uploaded}}
            variant = ("evaluation", stored.pk)
        else:
            evaluation_missing = True
    rendered = (
        report_tables_rendered(good, show_names=request.user.is_staff, variant=variant)
        if good
        else RenderedTables(tables={}, html={})
    )
    context = {
        "campaign": campaign,
        "good": good,
        "active": selectors.run_active(campaign_id=campaign.pk),
        "latest": selectors.run_latest(campaign_id=campaign.pk),
        "workers": not runs.embedded(),  # a run's shards go to Celery workers, or run here one after another
        "is_admin": request.user.is_staff,
        "tables": rendered.tables,
        "tables_html": rendered.html,
        "plots": report_plots_of_run(good, variant=variant) if good else {},
        "takes_system_orderings": campaign.scheme == Scheme.ORDERING,
        "upload_error": upload_error,
        "comments": _comments(campaign, admin=request.user.is_staff),
        "comments_total": selectors.comment_count(campaign_id=campaign.pk),
        "takes_system_scores": campaign.scheme in RATING_SCHEMES,
        "scores_error": scores_error,
        "glossary": glossary(),
        "terms": TERMS,
        "links_form": links_form or _links_form(request, campaign),
        "summary": report_summary(good.result) if good else None,
        "evaluation": evaluation if evaluation.is_bound else SystemEvaluationForm(initial=_evaluation_initial(good)),
        "evaluation_missing": evaluation_missing,
        "evaluation_error": evaluation_error,
        "runs_form": runs_form or RunsEvaluationForm(),
        "runs_errors": runs_errors or [],
        "runs_result": runs_result,
    }
    return render(request, "analysis/report.html", context, status=status)


def _comments(campaign: Campaign, *, admin: bool) -> list[dict]:
    names = selectors.grader_pseudonyms(campaign_id=campaign.pk)
    # Each unit's page: one reverse() (about 20 us each) for up to 500 links.
    before, after = reverse("analysis:unit", args=[campaign.pk, 0]).rsplit("/0/", 1)
    return [
        {**c, "grader": names.get(c["grader"], f"grader-{c['grader']}"), "url": f"{before}/{c['unit']}/{after}"}
        for c in selectors.comment_list(campaign_id=campaign.pk)
    ]


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


_UPLOADED = {  # what the report says after each kind of systems upload, and where it says it
    "orderings": (
        "upload_error",
        "",
        lambda summary, run: f"Imported {summary.orderings} orderings of {summary.queries} queries for "
        f"{', '.join(summary.systems)}; analysis #{run.number or run.pk} scores them.",
    ),
    "scores": (
        "scores_error",
        "#section-systems",
        lambda summary, run: f"Imported {summary.scores} scores of {summary.units} units for "
        f"{', '.join(summary.systems)}; analysis #{run.number or run.pk} evaluates them.",
    ),
}


@login_required
@require_POST
def report_systems_upload(request: HttpRequest, campaign_id: int, kind: str) -> HttpResponse:
    """Upload systems' orderings (CSV query,system,rank,item) or per-unit scores (CSV unit,system,score
    or query,candidate,system,score); a malformed file stores nothing and is named beside its form."""
    campaign = _campaign(request, campaign_id)
    error_slot, anchor, said = _UPLOADED[kind]
    upload = request.FILES.get("file")
    try:
        summary, run = systems_upload(
            kind=kind, campaign=campaign, file=upload, trigger=RunTrigger.MANUAL, user=request.user
        )
    except InvalidValue as exc:
        name = upload.name if upload is not None else "the upload"
        return _report(request, campaign, **{error_slot: f"{name}: {exc.message}. Nothing was imported."}, status=400)
    messages.success(request, said(summary, run))
    return redirect(reverse("analysis:report", args=[campaign.pk]) + anchor)


def _evaluation_initial(run: Any) -> dict[str, Any]:
    uploaded = ((run.result or {}).get("systems") or {}).get("uploaded") if run is not None else None
    if not uploaded:
        return {}
    return {
        "aggregate": uploaded["aggregate"],
        "measure": uploaded["measure"],
        "threshold": uploaded["threshold"] if uploaded.get("threshold_chosen") else None,
    }


@login_required
@require_POST
def report_system_evaluation(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Evaluate the uploaded system scores under the chosen ground truth, measure and threshold: the
    evaluation is computed and stored, then the report shows it (its address keeps the settings)."""
    campaign = _campaign(request, campaign_id)
    form = SystemEvaluationForm(request.POST)
    good = selectors.run_latest_good(campaign_id=campaign.pk)
    if not form.is_valid() or good is None:
        return _report(request, campaign, evaluation=form, status=400)
    try:
        system_evaluation_create(run=good, user=request.user, **form.cleaned_data)
    except InvalidValue as exc:
        return _report(request, campaign, evaluation=form, evaluation_error=exc.message, status=400)
    query = urlencode({k: "" if v is None else v for k, v in form.cleaned_data.items()})
    return redirect(f"{reverse('analysis:report', args=[campaign.pk])}?{query}#systems-uploaded")


@login_required
@require_POST
def report_evaluate_runs(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Score uploaded TREC runs against the latest analysis's ground truth; shown, not stored."""
    campaign = _campaign(request, campaign_id)
    form = RunsEvaluationForm(request.POST, request.FILES)
    if not form.is_valid():
        problems = [f"{form[name].label}: {m}" for name, ms in form.errors.items() for m in ms]
        return _report(request, campaign, runs_form=form, runs_errors=problems, status=400)
    good = selectors.run_latest_good(campaign_id=campaign.pk)
    try:
        if good is None:
            raise InvalidValue("the ground truth comes from an analysis: run one first, then evaluate the runs")
        parsed = [_run_of(upload) for upload in form.cleaned_data["runs"]]
        result = campaign_runs_evaluate(
            run=good,
            runs=parsed,
            measures_text=form.cleaned_data["measures"],
            confusability_measure=form.cleaned_data["confusability"] or "std",
            threshold=form.cleaned_data["low_threshold"],
        )
    except CampaignFileError as exc:
        return _report(request, campaign, runs_form=form, runs_errors=[e.message for e in exc.all_errors()], status=400)
    except (InvalidValue, EvaluationError, QrelsError) as exc:
        message = exc.message if isinstance(exc, InvalidValue) else str(exc)
        return _report(request, campaign, runs_form=form, runs_errors=[message], status=400)
    shown = {"measures": evaluation_view(result), "judged": [(r["run"], r["judged_at_k"]) for r in result["runs"]]}
    return _report(request, campaign, runs_form=form, runs_result=shown)


def _run_of(upload: Any) -> Run:
    if upload.size > settings.UPLOAD_MAX_BYTES:
        raise InvalidValue(
            f"{upload.name}: the file is larger than the {settings.UPLOAD_MAX_BYTES // 2**20} MB a runs file may be",
            field="runs",
        )
    try:
        text = upload.read().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidValue(f"{upload.name}: the file is not UTF-8 text", field="runs") from None
    return run_parse(text, name=upload.name)


def _links_form(request: HttpRequest, campaign: Campaign, data: Any = None) -> InstrumentLinksForm:
    campaigns = selectors.campaigns_with_reports(user=request.user).exclude(pk=campaign.pk)
    initial = {"sibling_campaign": campaign.sibling_campaign_id, "pairwise_campaign": campaign.pairwise_campaign_id}
    return InstrumentLinksForm(data, campaigns=campaigns, initial=initial)


@login_required
@require_POST
def report_instrument_links(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Link the sibling and pairwise campaigns that measure this one; the next analysis uses them."""
    campaign = _campaign(request, campaign_id)
    form = _links_form(request, campaign, request.POST)
    if form.is_valid():
        try:
            campaign_set_instrument_links(
                campaign=campaign,
                sibling=form.cleaned_data["sibling_campaign"],
                pairwise=form.cleaned_data["pairwise_campaign"],
                actor=request.user,
            )
        except InvalidValue as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
    if not form.is_valid():
        return _report(request, campaign, links_form=form, status=400)
    run = run_after_upload(campaign_id=campaign.pk, trigger=RunTrigger.MANUAL, user=request.user)
    messages.success(request, f"Links saved; analysis #{run.number} measures the campaign against them.")
    return redirect(reverse("analysis:report", args=[campaign.pk]) + "#section-instrument")
