"""The Content-Security-Policy header: built once from the settings (evalutron/csp.py), the same text
django-csp builds, and django-csp's own path whenever a nonce or a view's policy is involved."""

import pytest
from csp.constants import SELF
from csp.decorators import csp_exempt, csp_update
from csp.utils import build_policy
from django.http import HttpResponse
from django.test import RequestFactory

from evalutron.csp import CSPMiddleware

HEADER = "Content-Security-Policy"


def respond(view, path: str = "/api/events/"):
    request = RequestFactory().get(path)
    middleware = CSPMiddleware(view)
    return request, middleware(request)


def plain(request):
    return HttpResponse("{}", content_type="application/json")


def test_the_header_is_the_text_django_csp_builds():
    _, response = respond(plain)
    assert response[HEADER] == build_policy()
    assert "frame-ancestors 'none'" in response[HEADER]


def test_the_nonce_cannot_be_asked_for_once_the_header_is_written():
    request, _ = respond(plain)
    with pytest.raises(Exception, match="not available after the CSP header"):
        str(request.csp_nonce)


def test_a_changed_setting_changes_the_header(settings):
    before = respond(plain)[1][HEADER]
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": [SELF], "img-src": ["https://example.org"]}}
    after = respond(plain)[1][HEADER]
    assert after != before and "img-src https://example.org" in after and after == build_policy()


def test_an_excluded_prefix_gets_no_header(settings):
    settings.CONTENT_SECURITY_POLICY = {**settings.CONTENT_SECURITY_POLICY, "EXCLUDE_URL_PREFIXES": ["/api/"]}
    assert HEADER not in respond(plain)[1]
    assert HEADER in respond(plain, "/campaigns/")[1]


def test_a_page_that_uses_its_nonce_gets_it_in_the_header():
    def page(request):
        return HttpResponse(f"<script nonce='{request.csp_nonce}'></script>")

    request, response = respond(page)
    assert f"'nonce-{request._csp_nonce}'" in response[HEADER]


def test_a_view_that_changes_or_drops_the_policy_gets_its_own():
    updated = respond(csp_update({"img-src": "https://example.org"})(plain))[1]
    assert "https://example.org" in updated[HEADER]
    assert HEADER not in respond(csp_exempt()(plain))[1]
