"""What every grading API view is built on: the JSON parser, validation of a request's shape, and
the error body. Every refusal becomes the same body, {code, detail, field, value}, with the
service's HTTP status, and never a 500 for bad input. Who may call a view: grading.api.permissions.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rest_framework import exceptions, serializers
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler

from grading.api.permissions import API_PERMISSIONS
from grading.errors import GradingError, InvalidValue
from grading.jsontext import surrogate_problem


class TolerantJSONParser(JSONParser):
    """Parses NaN and Infinity instead of refusing the whole body, so that validation can say
    *which* field holds one; a deeply nested body is refused as a parse error."""

    strict = False

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply.") from None


def _safe(value: Any) -> Any:
    """A value that can go back in a JSON error body."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str | int | float | bool | type(None)):
        return value if not isinstance(value, str) else value[:200]
    text = json.dumps(value, default=str, allow_nan=True)
    return text if len(text) <= 200 else text[:200] + "…"


def error_body(exc: GradingError) -> dict[str, Any]:
    body = exc.as_dict()
    if "value" in body:
        body["value"] = _safe(exc.value)
    if getattr(exc, "errors", None):
        body["errors"] = exc.errors  # every field's problems, for forms
    return body


def _first_error(detail: Any, data: Any, path: str = "") -> tuple[str, str, Any]:
    """The first (field path, message, offending value) in a DRF error tree."""
    if isinstance(detail, dict):
        key = next(iter(detail))
        sub = data.get(key) if isinstance(data, dict) and key != "non_field_errors" else data
        name = path if key == "non_field_errors" else (f"{path}.{key}" if path else str(key))
        return _first_error(detail[key], sub, name)
    if isinstance(detail, list) and detail:
        for i, item in enumerate(detail):
            if item:  # ListField errors are keyed by index; empty entries mean "fine"
                if isinstance(item, dict | list):
                    sub = data[i] if isinstance(data, list) and i < len(data) else None
                    return _first_error(item, sub, f"{path}[{i}]")
                return path or "body", str(item), data
    if isinstance(detail, dict | list):
        return path or "body", "is invalid.", data
    return path or "body", str(detail), data


def validation_error(detail: Any, data: Any) -> InvalidValue:
    field, message, value = _first_error(detail, data)
    error = InvalidValue(f"{field}: {message}", field=field, value=value)
    error.errors = detail  # type: ignore[attr-defined]
    return error


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """The serializer's validated data, or InvalidValue naming the first bad field and its value."""
    problem = surrogate_problem(data)
    if problem:
        raise InvalidValue(
            f"{problem[0]} holds a lone surrogate (text that is not valid Unicode): {problem[1]}",
            field=problem[0],
            value=problem[1],
        )
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise validation_error(serializer.errors, data)
    return serializer.validated_data


DJANGO_CODES = {404: "not_found", 403: "permission_denied"}  # Http404, PermissionDenied


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """REST_FRAMEWORK's EXCEPTION_HANDLER: DRF's own refusals (401, 403, 404, 405, 406, 429, …) in
    every API view, the analysis app's too, carry the same body as the grading API's: a `code`
    beside the `detail`, and for 429 the seconds to wait in `retry_after` (and Retry-After)."""
    if isinstance(exc, exceptions.ValidationError):
        request = context.get("request")
        data = getattr(request, "data", None)
        if not data and request is not None:  # a query parameter was at fault
            data = request.query_params.dict()
        return Response(error_body(validation_error(exc.detail, data)), status=400)
    response = exception_handler(exc, context)
    if response is None or not isinstance(response.data, dict):
        return response
    if "code" not in response.data and "detail" in response.data:
        codes = exc.get_codes() if isinstance(exc, exceptions.APIException) else None
        code = codes if isinstance(codes, str) else DJANGO_CODES.get(response.status_code, "error")
        response.data = {"code": code, **response.data}
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        response.data.setdefault("retry_after", math.ceil(exc.wait))
    return response


class GradingAPIView(APIView):
    """The base of the grading API's views: the parsers, the permissions, and refusals as error bodies."""

    parser_classes = [TolerantJSONParser, FormParser, MultiPartParser]
    permission_classes = API_PERMISSIONS

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, GradingError):
            return Response(error_body(exc), status=exc.http_status)
        if isinstance(exc, exceptions.ValidationError):
            return Response(error_body(validation_error(exc.detail, getattr(self.request, "data", None))), status=400)
        if isinstance(exc, exceptions.Throttled):
            response = super().handle_exception(exc)  # with Retry-After
            response.data = {
                "code": "throttled",
                "detail": f"too many requests; try again in {exc.wait} seconds.",
                "retry_after": exc.wait,
            }
            return response
        if isinstance(exc, exceptions.UnsupportedMediaType):
            kind = self.request.content_type.split(";")[0].strip()
            accepted = ", ".join(parser.media_type for parser in self.get_parsers())
            return Response(
                {
                    "code": "unsupported_media_type",
                    "detail": f"the body is {kind or 'of no declared type'}; this endpoint takes {accepted}.",
                    "field": "body",
                    "value": kind,
                },
                status=415,
            )
        if isinstance(exc, exceptions.ParseError):
            return Response(
                {"code": "parse_error", "detail": str(exc.detail), "field": "body", "value": None}, status=400
            )
        return super().handle_exception(exc)
