"""Limits every request passes before any view reads it: body size per endpoint (413), request rate
per client for token requests and anonymous API calls (429 + Retry-After, DRF throttles), visits
of join links per client (`visit_allowed`), and failed logins on the browser login page. Counts
live in the shared cache (Redis when configured), so that every web process sees the same counts."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle


def body_limit(path: str) -> int:
    """The largest body accepted on `path`, in bytes: the first of BODY_LIMITS whose pattern matches."""
    for pattern, setting in settings.BODY_LIMITS:
        if re.match(pattern, path):
            return getattr(settings, setting)
    return settings.BODY_LIMIT_DEFAULT


class BodySizeLimitMiddleware:
    """Refuses a body larger than its endpoint takes with 413, before anything parses it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = body_limit(request.path_info)
        if length > limit:
            detail = f"the request body is {length} bytes; this endpoint takes at most {limit}."
            if request.path_info.startswith("/api/"):
                return JsonResponse(
                    {"code": "too_large", "detail": detail, "field": "body", "value": length}, status=413
                )
            return HttpResponse(f"Request too large: {detail}", status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class _RatesFromSettings:
    """Rates read from settings at request time (THROTTLE_RATES), so that they can be configured
    through the environment and changed in tests."""

    def get_rate(self) -> str | None:
        return settings.THROTTLE_RATES.get(self.scope)  # type: ignore[attr-defined]


class AnonThrottle(_RatesFromSettings, AnonRateThrottle):
    scope = "anon"


class TokenThrottle(_RatesFromSettings, ScopedRateThrottle):
    """Token requests (password guessing through the API), counted per client address."""

    scope = "token"

    def allow_request(self, request: Any, view: Any) -> bool:
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super(ScopedRateThrottle, self).allow_request(request, view)

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def visit_allowed(request: HttpRequest, scope: str) -> tuple[bool, int]:
    """Count one request of `scope` (a key of THROTTLE_RATES, e.g. "join") from the client's address
    and say whether it is within the rate, with the seconds to wait when it is not. A fixed window
    per address, kept in the shared cache like the other limits."""
    rate = settings.THROTTLE_RATES.get(scope)
    if not rate:
        return True, 0
    number, _, period = rate.partition("/")
    limit, window = int(number), _PERIODS[period.strip().lower()]
    key = f"visits:{scope}:{request.META.get('REMOTE_ADDR', '')}"
    cache.add(key, 0, timeout=window)
    try:
        count = cache.incr(key)
    except ValueError:  # the window ended between add and incr
        cache.set(key, 1, timeout=window)
        count = 1
    return count <= limit, window


class LoginView(auth_views.LoginView):
    """Django's login page, with failed attempts counted per client address and user name: past
    LOGIN_FAILURE_LIMIT within LOGIN_FAILURE_WINDOW seconds (or ten times as many for any user names
    from one address) the page answers 429 with Retry-After and says when to try again."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        keys = _login_keys(request)
        limits = (settings.LOGIN_FAILURE_LIMIT, 10 * settings.LOGIN_FAILURE_LIMIT)
        if any(cache.get(key, 0) >= limit for key, limit in zip(keys, limits, strict=True)):
            minutes = math.ceil(settings.LOGIN_FAILURE_WINDOW / 60)
            locked = f"Too many failed attempts. Please try again in {minutes} minutes."
            form = self.form_class(request=request)  # unbound: the password is not checked at all
            response = self.render_to_response(self.get_context_data(form=form, locked_out=locked), status=429)
            response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
            return response
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:  # the form came back: the attempt failed
            for key in keys:
                cache.add(key, 0, timeout=settings.LOGIN_FAILURE_WINDOW)
                cache.incr(key)
        return response


def _login_keys(request: HttpRequest) -> list[str]:
    """Failures of one user name from one address (limit: LOGIN_FAILURE_LIMIT), and of any user name
    from one address (ten times that: guessing across accounts). Not per user name alone, so that
    nobody can lock another person out from elsewhere."""
    address = request.META.get("REMOTE_ADDR", "")
    username = str(request.POST.get("username", ""))[:150].lower().encode("utf-8", "backslashreplace").hex()
    return [f"login-failures:{address}:{username}", f"login-failures:{address}"]
