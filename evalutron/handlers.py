"""Error pages that speak JSON under /api/: a client of the API gets the same {code, detail} body
for a URL that matches nothing as for any other refusal, never an HTML page. And a client that goes
away in the middle of its body is the client's doing, not a server error."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.views import defaults

abort_log = logging.getLogger("evalutron.client_abort")


class ClientAbortMiddleware:
    """A body that cannot be read to its end (the client disconnected or stopped sending: Django's
    UnreadablePostError, wherever a view or DRF read it) is logged at INFO as a client abort, with
    no traceback, and answered 400 in case the client is still listening. Nothing was stored: the
    body was never complete."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, UnreadablePostError):
            return None
        length = request.META.get("CONTENT_LENGTH") or "?"
        abort_log.info(
            "client abort: %s %s, its body (%s bytes announced) ended early: %s",
            request.method,
            request.path,
            length,
            exception,
        )
        detail = "the request body ended before its announced length (the client went away?); nothing was stored."
        if request.path_info.startswith("/api/"):
            return JsonResponse({"code": "client_abort", "detail": detail, "field": "body", "value": None}, status=400)
        return HttpResponse(f"Bad request: {detail}", status=400, content_type="text/plain; charset=utf-8")


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
