"""Error pages that speak JSON under /api/: a client of the API gets the same {code, detail} body
for a URL that matches nothing as for any other refusal, never an HTML page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's own refusals (too many form fields, a suspicious operation)."""
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {
                "code": "bad_request",
                "detail": str(exception) or "the request cannot be read.",
                "field": "body",
                "value": None,
            },
            status=400,
        )
    return defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"code": "not_found", "detail": "no such endpoint or object."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"code": "server_error", "detail": "the server failed; the error was logged."}, status=500)
    return defaults.server_error(request)
