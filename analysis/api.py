"""REST API for analyses and exports. Views validate, call one service or selector, serialize."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis import export, selectors
from analysis.models import AnalysisRun, RunStatus, RunTrigger
from analysis.services import runs
from analysis.services.participants import participants_report
from analysis.services.uploads import systems_upload
from grading.errors import InvalidValue
from grading.models import Campaign
from grading.services.audit import export_record


class AnalysisRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnalysisRun
        fields = [
            "id",
            "number",
            "campaign",
            "kind",
            "trigger",
            "status",
            "progress",
            "stage",
            "error",
            "parameters",
            "seed",
            "attempts",
            "created_at",
            "not_before",
            "started_at",
            "heartbeat_at",
            "finished_at",
            "timings",
            "shards_total",
            "shards_done",
            "shards_reused",
            "bootstrap_blocks",
            "bootstrap_blocks_reused",
            "slices_total",
            "slices_reused",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "shards_total": {"help_text": "parts of the run split across workers: 0 until planned, 1 for one piece"},
            "shards_done": {"help_text": "how many of those parts have finished"},
            "shards_reused": {
                "help_text": "of the finished, how many were taken from the campaign's previous run unread, "
                "their graders' data unchanged"
            },
            "bootstrap_blocks": {
                "help_text": "blocks of 65,536 units that alpha's bootstrap drew over, once the run succeeded "
                "(0 at 2^20 units or fewer, drawn over all at once)"
            },
            "bootstrap_blocks_reused": {
                "help_text": "of those blocks, how many were taken from the previous run, their units' values and "
                "the draws unchanged: the figures are those of drawing every block"
            },
            "slices_total": {
                "help_text": "spans of units whose judgments the combining step read a slice at a time, once the "
                "run succeeded (0 for a run of one shard, which keeps nothing for the next)"
            },
            "slices_reused": {
                "help_text": "of those slices, how many were not read: their judgments unchanged, the sections' sums "
                "of them were taken from the previous run, and the figures are those of reading every slice"
            },
        }


@extend_schema_field(
    {
        "type": "object",
        "properties": {
            key: {"type": "integer" if kind is int else "number", "minimum": low, "maximum": high}
            for key, (kind, low, high) in runs.PARAMETER_RULES.items()
        },
        "additionalProperties": False,
        "description": "n_boot (10–100000), confidence (0.5–0.999), fine_tolerance (0–10); others are refused.",
    }
)
class AnalysisParametersField(serializers.DictField):
    """A run's parameters; runs.parameters_clean checks them, the schema says what it takes."""


class AnalysisRunInput(serializers.Serializer):
    parameters = AnalysisParametersField(required=False)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1)


def _campaign_known(request: Request, campaign_id: int) -> Campaign:
    """The campaign, or 404 for one the user may not know exists (as the grading endpoints answer)."""
    campaign = selectors.campaign_get(campaign_id=campaign_id)
    if campaign is None or not selectors.user_knows_campaign(user=request.user, campaign_id=campaign.pk):
        raise Http404("No campaign matches the given query.")
    return campaign


def _campaign_for_reports(request: Request, campaign_id: int) -> Campaign:
    campaign = _campaign_known(request, campaign_id)
    if not selectors.user_can_view_reports(user=request.user, campaign_id=campaign.pk):
        raise PermissionDenied("Only the campaign's organizers and admins see its analyses.")
    return campaign


def _campaign_for_export(request: Request, campaign_id: int) -> Campaign:
    campaign = _campaign_known(request, campaign_id)
    if not selectors.user_can_export(user=request.user):
        raise PermissionDenied("Only admins export ground truth and event logs.")
    return campaign


class CampaignAnalysesView(APIView):
    @extend_schema(responses=AnalysisRunSerializer(many=True), summary="The campaign's latest analysis runs")
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = _campaign_for_reports(request, campaign_id)
        recent = selectors.runs_recent(campaign_id=campaign.pk)
        return Response(AnalysisRunSerializer(recent, many=True).data)

    @extend_schema(request=AnalysisRunInput, responses={202: AnalysisRunSerializer}, summary="Start an analysis run")
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = _campaign_for_reports(request, campaign_id)
        given = AnalysisRunInput(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            run = runs.run_create(
                campaign_id=campaign.pk,
                trigger=RunTrigger.API,
                user=request.user,
                parameters=given.validated_data.get("parameters"),
                seed=given.validated_data.get("seed"),
            )
        except ValueError as exc:
            raise ValidationError({"parameters": [str(exc)]}) from None
        run.refresh_from_db()
        return Response(
            AnalysisRunSerializer(run).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": f"/api/analyses/{run.pk}/"},
        )


class AnalysisRunView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("result", OpenApiTypes.BOOL, description="include the result JSON")],
        responses=AnalysisRunSerializer,
        summary="One analysis run: status, progress, stage, error (poll this)",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = selectors.run_get(run_id=run_id)
        if run is None:
            raise Http404("No analysis matches the given query.")
        _campaign_for_reports(request, run.campaign_id)
        data: dict[str, Any] = AnalysisRunSerializer(run).data
        if request.query_params.get("result") in ("1", "true") and run.status == RunStatus.SUCCEEDED:
            data["result"] = run.result
        return Response(data)


class SystemOrderingRow(serializers.Serializer):
    query = serializers.CharField(help_text="the query's external id")
    system = serializers.CharField(help_text="the system's name")
    rank = serializers.IntegerField(min_value=1, help_text="1 = first")
    item = serializers.CharField(help_text="the candidate's external id")


@extend_schema_field({"type": "string", "format": "binary"})
class CSVFileField(serializers.FileField):
    """An uploaded file: a part with a filename (the schema says binary, not a URI)."""


class SystemOrderingsFile(serializers.Serializer):
    file = CSVFileField(help_text="CSV with the header query,system,rank,item")


class SystemOrderingsInput(serializers.Serializer):
    rows = SystemOrderingRow(many=True, help_text="JSON alternative to the file")


class SystemOrderingsOutput(serializers.Serializer):
    systems = serializers.ListField(child=serializers.CharField())
    queries = serializers.IntegerField()
    orderings = serializers.IntegerField()
    replaced = serializers.IntegerField(help_text="earlier orderings of these systems, replaced")
    created_systems = serializers.ListField(child=serializers.CharField())
    analysis = AnalysisRunSerializer()


class SystemOrderingsView(APIView):
    parser_classes = [MultiPartParser, JSONParser]

    @extend_schema(
        request={"multipart/form-data": SystemOrderingsFile, "application/json": SystemOrderingsInput},
        responses={201: SystemOrderingsOutput},
        summary="Upload systems' orderings of an ordering campaign; an analysis run then scores them",
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        return upload_response(request, campaign_id, kind="orderings")


def upload_response(request: Request, campaign_id: int, *, kind: str) -> Response:
    """A systems upload through the API (``kind`` names one of SYSTEMS_UPLOADS): 201 with the summary
    and the analysis run that scores it, or 400 naming the row and field, with nothing stored."""
    campaign = _campaign_for_reports(request, campaign_id)
    file = request.FILES.get("file")
    try:
        summary, run = systems_upload(
            kind=kind,
            campaign=campaign,
            file=file,
            data=None if file is not None else request.data,
            trigger=RunTrigger.API,
            user=request.user,
        )
    except InvalidValue as exc:
        return Response(
            {**exc.as_dict(), "detail": f"{exc.message}. Nothing was imported."}, status=status.HTTP_400_BAD_REQUEST
        )
    run.refresh_from_db()
    return Response(
        {**summary.as_dict(), "analysis": AnalysisRunSerializer(run).data},
        status=status.HTTP_201_CREATED,
        headers={"Location": f"/api/analyses/{run.pk}/"},
    )


class _AnyFormat(BaseContentNegotiation):
    """Exports answer in the file format they are asked for; `?format=` is theirs, not DRF's."""

    def select_parser(self, request: Request, parsers: list) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


def _float_param(request: Request, name: str) -> float | None:
    raw = request.query_params.get(name)
    try:
        return None if raw in (None, "") else float(raw)
    except ValueError:
        raise ValidationError({name: [f"must be a number; got {raw!r}"]}) from None


class ParticipantOut(serializers.Serializer):
    external_id = serializers.CharField(help_text="the platform's id of the participant (organizers only)")
    platform = serializers.CharField()
    study_id = serializers.CharField(allow_blank=True)
    session_id = serializers.CharField(allow_blank=True)
    pseudonym = serializers.CharField()
    link = serializers.IntegerField(help_text="the join link's id")
    joined_at = serializers.DateTimeField()
    units_assigned = serializers.IntegerField()
    units_rated = serializers.IntegerField()
    active_seconds = serializers.FloatField(allow_null=True)
    gold_accuracy = serializers.FloatField(allow_null=True)
    repeat_agreement = serializers.FloatField(allow_null=True)
    qualified = serializers.BooleanField(
        allow_null=True,
        help_text="the join link's qualification: true passed, false screened out, null no rule or not decided yet",
    )
    completed_at = serializers.DateTimeField(allow_null=True)
    excluded = serializers.BooleanField(help_text="left out of ground truth, agreement and the model")
    excluded_reason = serializers.CharField(allow_blank=True, allow_null=True)
    excluded_at = serializers.DateTimeField(allow_null=True)
    pay = serializers.CharField(allow_null=True, help_text="to the cent, as text (null: no rate set)")
    currency = serializers.CharField(allow_blank=True)


class ParticipantsView(APIView):
    @extend_schema(
        summary="The campaign's crowd participants (organizers)",
        description="One object per participant who joined through a join link: external_id, platform, "
        "study_id, session_id, pseudonym, link, joined_at, units_assigned, units_rated, active_seconds, "
        "gold_accuracy, repeat_agreement, qualified, completed_at, excluded, excluded_reason, excluded_at, pay, "
        "currency "
        "(null where a figure does not apply).",
        responses={200: ParticipantOut(many=True)},
    )
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = _campaign_for_reports(request, campaign_id)
        rows = participants_report(campaign=campaign)
        export_record(actor=request.user, campaign=campaign, what="participants", fmt="json")
        return Response(rows)


class GroundTruthView(APIView):
    content_negotiation_class = _AnyFormat

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=list(export.FORMATS)),
            OpenApiParameter("min_judgments", int),
            OpenApiParameter("max_confusability", float),
            OpenApiParameter("measure", str, enum=list(export.MEASURES)),
        ],
        responses={(200, "text/csv"): OpenApiTypes.BINARY},
        summary="Ground truth of the latest analysis (admins)",
    )
    def get(self, request: Request, campaign_id: int) -> HttpResponse:
        campaign = _campaign_for_export(request, campaign_id)
        fmt = request.query_params.get("format", "csv")
        if fmt not in export.FORMATS:
            raise ValidationError({"format": [f"must be one of {', '.join(export.FORMATS)}; got {fmt!r}"]})
        try:
            filters = export.Filters(
                min_judgments=int(_float_param(request, "min_judgments") or 1),
                max_confusability=_float_param(request, "max_confusability"),
                measure=request.query_params.get("measure", "std"),
            )
        except ValueError as exc:
            raise ValidationError({"filters": [str(exc)]}) from None
        run = selectors.run_latest_good(campaign_id=campaign.pk)
        if run is None:
            return HttpResponse(
                "No analysis has succeeded for this campaign yet: run one first.", status=409, content_type="text/plain"
            )
        body = export.ground_truth_bytes(run, filters, fmt)
        export_record(actor=request.user, campaign=campaign, what="ground-truth", fmt=fmt, analysis=run.number)
        response = HttpResponse(body, content_type=export.FORMATS[fmt])
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-ground-truth.{fmt}"'
        return response


class EventLogView(APIView):
    content_negotiation_class = _AnyFormat

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(export.EVENT_FORMATS))],
        responses={(200, "text/csv"): OpenApiTypes.BINARY},
        summary="Raw event log, streamed (admins)",
    )
    def get(self, request: Request, campaign_id: int) -> StreamingHttpResponse:
        campaign = _campaign_for_export(request, campaign_id)
        fmt = request.query_params.get("format", "csv")
        if fmt not in export.EVENT_FORMATS:
            raise ValidationError({"format": [f"must be one of {', '.join(export.EVENT_FORMATS)}; got {fmt!r}"]})
        export_record(actor=request.user, campaign=campaign, what="events", fmt=fmt)
        response = StreamingHttpResponse(export.events_stream(campaign.pk, fmt), content_type=export.EVENT_FORMATS[fmt])
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-events.{fmt}"'
        return response
