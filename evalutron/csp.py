"""The Content-Security-Policy header, built once instead of on every response.

django-csp builds the header's text from the settings on every response, twice (the policy and the
report-only one), which cost about a tenth of a small API request (docs/design.md §5.6, "Cost of an
event"). The text depends only on the settings unless the request used its nonce or the view set its
own policy (csp.decorators): then django-csp builds it as before; otherwise the text built once is
set, under the same conditions django-csp applies (not exempt, no header already, no excluded
prefix). Settings changed at run time (tests' override_settings) are picked up.
"""

from __future__ import annotations

import http.client
from functools import cache

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as BaseCSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponseBase

# What a view's csp decorators leave on its response: a policy of its own.
PER_RESPONSE = tuple(f"_csp_{part}{ro}" for part in ("config", "update", "replace") for ro in ("", "_ro"))
DEBUG_EXEMPT = (http.client.INTERNAL_SERVER_ERROR, http.client.NOT_FOUND)


@cache
def _policies() -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """Per header: (header, text, the response attribute that exempts from it, excluded path prefixes)."""
    found = []
    for header, setting, exempt, report_only in (
        (HEADER, "CONTENT_SECURITY_POLICY", "_csp_exempt", False),
        (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", "_csp_exempt_ro", True),
    ):
        text = build_policy(report_only=report_only)
        if text:
            prefixes = tuple((getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ())
            found.append((header, text, exempt, prefixes))
    return tuple(found)


def _settings_changed(*, setting: str, **kwargs: object) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _policies.cache_clear()


setting_changed.connect(_settings_changed)


class CSPMiddleware(BaseCSPMiddleware):
    """django-csp's middleware, with the policy's text built once for responses that use no nonce and
    set no policy of their own."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(hasattr(response, a) for a in PER_RESPONSE):
            return super().process_response(request, response)
        if response.status_code in DEBUG_EXEMPT and settings.DEBUG:
            return response
        for header, text, exempt, prefixes in _policies():
            if header not in response and not getattr(response, exempt, False):
                if not request.path_info.startswith(prefixes):
                    response[header] = text
        # As django-csp: the nonce cannot be asked for once the header is written.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response
