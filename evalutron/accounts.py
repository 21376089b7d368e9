"""Password reset by e-mail: Django's views, with what the server can actually do said on the page.

With EMAIL_BACKEND set (SMTP, README "Configuration"), the link is e-mailed. In the embedded
development default (DEBUG without EMAIL_BACKEND) messages are printed on the web process's console.
A production server without EMAIL_BACKEND sends nothing and the page says so, pointing to an admin.
Requests of a link count per client address (THROTTLE_RATES["reset"], evalutron/limits.py).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from evalutron.limits import visit_allowed


def can_send() -> bool:
    return settings.EMAIL_ENABLED or settings.DEBUG


class PasswordResetView(auth_views.PasswordResetView):
    template_name = "registration/password_reset_form.html"
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["can_send"] = can_send()
        context["console"] = not settings.EMAIL_ENABLED
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not can_send():
            return self.render_to_response(self.get_context_data(), status=503)
        allowed, wait = visit_allowed(request, "reset")
        if not allowed:
            minutes = max(1, wait // 60)
            words = f"Too many requests from this address. Please try again in {minutes} minute(s)."
            response = self.render_to_response(self.get_context_data(form=self.get_form(), too_many=words), status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "registration/password_reset_done.html"
