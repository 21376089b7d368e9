"""Limits every request passes before any view reads it: body size per endpoint (413), request rate
per client for token requests and anonymous API calls (429 + Retry-After, DRF throttles), visits
of join links and password-reset requests per client (`visit_allowed`), and failed logins on the
browser login page and the admin's. Counts live in the shared cache (Redis when
configured), so that every web process sees the same counts.

A client is counted by the address the server sees (REMOTE_ADDR). X-Forwarded-For is read only when
that address is one of TRUSTED_PROXIES, and then the right-most address in it that is not a trusted
proxy counts: what a client writes into the header itself stays on the left and changes nothing."""

from __future__ import annotations

import functools
import ipaddress
import math
import re
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth import views as auth_views
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from rest_framework.throttling import AnonRateThrottle, BaseThrottle, ScopedRateThrottle

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _trusted(address: str) -> bool:
    networks = _networks(tuple(settings.TRUSTED_PROXIES))
    if not networks:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(request: HttpRequest) -> str:
    """The address every count of this module is kept under: REMOTE_ADDR, or, when REMOTE_ADDR is a
    trusted proxy, the right-most address of X-Forwarded-For that is not one (each trusted proxy
    appends the address it saw; everything left of the first untrusted one is the client's say)."""
    address = request.META.get("REMOTE_ADDR", "")
    if not _trusted(address):
        return address
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        hop = hop.strip()[:64]
        if not hop:
            continue
        address = hop
        if not _trusted(hop):
            break
    return address


def body_limit(path: str) -> int:
    """The largest body accepted on `path`, in bytes: the first of BODY_LIMITS whose pattern matches
    (a tuple of settings adds their limits: a form that takes several files takes them all)."""
    for pattern, names in settings.BODY_LIMITS:
        if re.match(pattern, path):
            return sum(getattr(settings, name) for name in ((names,) if isinstance(names, str) else names))
    return settings.BODY_LIMIT_DEFAULT


class BodySizeLimitMiddleware:
    """Refuses a body larger than its endpoint takes with 413, and a body of unannounced length
    (Transfer-Encoding: chunked) with 411, before anything parses it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        coding = request.META.get("HTTP_TRANSFER_ENCODING", "").strip().lower()
        if coding and coding != "identity":
            # No length announced, so none can be checked before reading; and behind a WSGI server
            # that does not decode chunks, Django reads such a body as empty. Say what to send.
            detail = (
                f"the body is sent with Transfer-Encoding: {coding[:40]} and no Content-Length; "
                "send it with a Content-Length header (chunked bodies are not taken)."
            )
            if request.path_info.startswith("/api/"):
                return JsonResponse(
                    {"code": "length_required", "detail": detail, "field": "body", "value": coding[:40]}, status=411
                )
            return HttpResponse(f"Length required: {detail}", status=411, content_type="text/plain; charset=utf-8")
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
            context = {"size": filesizeformat(length), "most": filesizeformat(limit), "back": request.path_info}
            return HttpResponse(render_to_string("413.html", context), status=413)
        return self.get_response(request)


class _RatesFromSettings:
    """Rates read from settings at request time (THROTTLE_RATES), so that they can be configured
    through the environment and changed in tests."""

    def get_rate(self) -> str | None:
        return settings.THROTTLE_RATES.get(self.scope)  # type: ignore[attr-defined]


class _ClientAddress:
    """DRF throttles identify a client by the whole X-Forwarded-For header, which any client can
    change at will: here by client_address."""

    def get_ident(self, request: Any) -> str:
        return client_address(request)


class AnonThrottle(_ClientAddress, _RatesFromSettings, AnonRateThrottle):
    scope = "anon"


class TokenThrottle(_ClientAddress, _RatesFromSettings, ScopedRateThrottle):
    """Token requests (password guessing through the API), counted per client address."""

    scope = "token"

    def allow_request(self, request: Any, view: Any) -> bool:
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super(ScopedRateThrottle, self).allow_request(request, view)

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def _login_locked_out(request: HttpRequest) -> str | None:
    """The sentence to show when the client has failed too often to log in (None: let it try)."""
    keys = _login_keys(request)
    limits = (settings.LOGIN_FAILURE_LIMIT, 10 * settings.LOGIN_FAILURE_LIMIT)
    counts = cache.get_many(keys)
    if any(counts.get(key, 0) >= limit for key, limit in zip(keys, limits, strict=True)):
        minutes = math.ceil(settings.LOGIN_FAILURE_WINDOW / 60)
        return f"Too many failed attempts. Please try again in {minutes} minutes."
    return None


def _login_failure_count(request: HttpRequest) -> None:
    for key in _login_keys(request):
        cache.add(key, 0, timeout=settings.LOGIN_FAILURE_WINDOW)
        cache.incr(key)


def _retry_after(response: HttpResponse) -> HttpResponse:
    response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
    return response


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """(requests, seconds) of a rate in DRF's format, e.g. "120/min" → (120, 60)."""
    count, period = rate.split("/")
    return int(count), _PERIODS[period[0]]


def _now() -> float:
    return time.time()


def window_counts(windows: list[tuple[str, int]]) -> list[int]:
    """Add one to each (key, seconds) counter, created at 0 with that lifetime if missing, and
    return the new counts. On Redis one pipelined round trip for all (SET NX EX + INCR each);
    elsewhere cache.add + cache.incr."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        pipeline = _redis_writer(backend).pipeline(transaction=False)
        for key, seconds in windows:
            name = backend.make_and_validate_key(key)
            pipeline.set(name, 0, ex=seconds, nx=True)
            pipeline.incr(name)
        return pipeline.execute()[1::2]
    counts = []
    for key, seconds in windows:
        backend.add(key, 0, timeout=seconds)
        try:
            counts.append(backend.incr(key))
        except ValueError:  # expired between the two calls
            backend.add(key, 1, timeout=seconds)
            counts.append(1)
    return counts


def _redis_writer(backend: RedisCache) -> Any:
    """The redis-py client of the server that takes writes. Django's cache makes a new client on every
    call, which builds its table of reply callbacks each time: a fifth of a single event's cost. One
    client per cache object (Django's caches are per thread) uses the same connection pool."""
    cache_client = backend._cache
    client = getattr(cache_client, "evalutron_writer", None)
    if client is None:
        client = cache_client.evalutron_writer = cache_client.get_client(None, write=True)
    return client


class UserRateThrottle(BaseThrottle):
    """A logged-in user's API calls: at most THROTTLE_USER_BURST and THROTTLE_USER_SUSTAINED, each
    counted in fixed windows (one cache counter per user and window; a request counts once, however
    many events its body holds). Not DRF's SimpleRateThrottle, which reads and writes back a list of
    timestamps per user on every request: here one cache round trip on Redis, and no SQL, which
    keeps the event path's cost as it was. A window's count starts again at its end, so up to twice
    a rate can pass around a window's boundary; Retry-After says when the window ends."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Any, view: Any) -> bool:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return True  # anonymous calls: AnonThrottle, by address
        now = _now()
        rates = [parse_rate(settings.THROTTLE_USER_BURST), parse_rate(settings.THROTTLE_USER_SUSTAINED)]
        windows = [(f"throttle:user:{user.pk}:{seconds}:{int(now // seconds)}", seconds) for _, seconds in rates]
        counts = window_counts(windows)
        waits = [
            seconds - now % seconds for (limit, seconds), count in zip(rates, counts, strict=True) if count > limit
        ]
        self._wait = max(waits) if waits else None
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


def visit_allowed(request: HttpRequest, scope: str) -> tuple[bool, int]:
    """Count one request of `scope` (a key of THROTTLE_RATES, e.g. "join" or "reset") from the client's
    address (client_address) and say whether it is within the rate, with the seconds to wait when it
    is not: a fixed window per address, counted like the users' API rates."""
    rate = settings.THROTTLE_RATES.get(scope)
    if not rate:
        return True, 0
    limit, seconds = parse_rate(rate)
    now = _now()
    [count] = window_counts([(f"visits:{scope}:{client_address(request)}:{int(now // seconds)}", seconds)])
    return count <= limit, math.ceil(seconds - now % seconds)


class LoginView(auth_views.LoginView):
    """Django's login page, with failed attempts counted per client address and user name: past
    LOGIN_FAILURE_LIMIT within LOGIN_FAILURE_WINDOW seconds (or ten times as many for any user names
    from one address) the page answers 429 with Retry-After and says when to try again."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        locked = _login_locked_out(request)
        if locked:
            form = self.form_class(request=request)  # unbound: the password is not checked at all
            context = self.get_context_data(form=form, locked_out=locked)
            return _retry_after(self.render_to_response(context, status=429))
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:  # the form came back: the attempt failed
            _login_failure_count(request)
        return response


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin's login page under the same limit as the site's, counted with it (one budget of
    failures per client and user name, whichever page they come through)."""
    if request.method != "POST":
        return admin.site.login(request, extra_context)
    locked = _login_locked_out(request)
    if locked:
        form = AdminAuthenticationForm(request)  # unbound: the password is not checked at all
        form.cleaned_data = {}  # nothing was cleaned; add_error needs the attribute
        form.add_error(None, locked)
        context = {
            **admin.site.each_context(request),
            "title": "Log in",
            "subtitle": None,
            "app_path": request.get_full_path(),
            "username": request.user.get_username(),
            "form": form,
            REDIRECT_FIELD_NAME: request.POST.get(REDIRECT_FIELD_NAME) or reverse("admin:index"),
        }
        return _retry_after(TemplateResponse(request, "admin/login.html", context, status=429))
    response = admin.site.login(request, extra_context)
    if response.status_code == 200:  # the form came back: the attempt failed
        _login_failure_count(request)
    return response


def _login_keys(request: HttpRequest) -> list[str]:
    """Failures of one user name from one address (limit: LOGIN_FAILURE_LIMIT), and of any user name
    from one address (ten times that: guessing across accounts). Not per user name alone, so that
    nobody can lock another person out from elsewhere."""
    address = client_address(request)
    username = str(request.POST.get("username", ""))[:150].lower().encode("utf-8", "backslashreplace").hex()
    return [f"login-failures:{address}:{username}", f"login-failures:{address}"]
