"""REST API: systems' per-unit scores for rating campaigns (evaluated by the next analysis run)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api import AnalysisRunSerializer, CSVFileField, upload_response


class SystemScoreRow(serializers.Serializer):
    unit = serializers.CharField(required=False, help_text="the unit's external id (or give query and candidate)")
    query = serializers.CharField(required=False, help_text="the query's external id")
    candidate = serializers.CharField(required=False, help_text="the candidate's external id")
    system = serializers.CharField(help_text="the system's name")
    score = serializers.FloatField()


class SystemScoresFile(serializers.Serializer):
    file = CSVFileField(help_text="CSV with the header unit,system,score or query,candidate,system,score")


class SystemScoresInput(serializers.Serializer):
    rows = SystemScoreRow(many=True, help_text="JSON alternative to the file")


class SystemScoresOutput(serializers.Serializer):
    systems = serializers.ListField(child=serializers.CharField())
    units = serializers.IntegerField()
    scores = serializers.IntegerField()
    replaced = serializers.IntegerField(help_text="earlier scores of these systems, replaced")
    created_systems = serializers.ListField(child=serializers.CharField())
    analysis = AnalysisRunSerializer()


class SystemScoresView(APIView):
    parser_classes = [MultiPartParser, JSONParser]

    @extend_schema(
        request={"multipart/form-data": SystemScoresFile, "application/json": SystemScoresInput},
        responses={201: SystemScoresOutput},
        summary="Upload systems' per-unit scores of a rating campaign; an analysis run then evaluates them",
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        return upload_response(request, campaign_id, kind="scores")
