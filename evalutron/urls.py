from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from evalutron import accounts, limits
from grading.views import media as media_views

# The admin's URLs, its login page replaced by the same page under the site's failed-login limit.
ADMIN_URLS = (
    [
        path("login/", limits.admin_login, name="login") if getattr(entry, "name", None) == "login" else entry
        for entry in admin.site.get_urls()
    ],
    "admin",
    admin.site.name,
)

urlpatterns = [
    path("admin/", ADMIN_URLS),
    path("accounts/login/", limits.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # One-time links for invited graders and organizers (Django's password-reset tokens).
    path(
        "accounts/set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="registration/set_password.html", post_reset_login=True, success_url="/"
        ),
        name="password-set",
    ),
    # Password reset by e-mail; the link it sends is the set-password page above.
    path("accounts/password-reset/", accounts.PasswordResetView.as_view(), name="password-reset"),
    path("accounts/password-reset/sent/", accounts.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI's own script is served as a file (no inline code), its assets from drf-spectacular-sidecar.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("api/", include("grading.api.urls")),
    path("api/", include("analysis.api_urls")),
    path("reports/", include("analysis.urls")),
    path("", include("grading.urls")),
    # Blinded candidate media (before the DEBUG media route, which would serve stored names).
    re_path(
        r"^media/c/(?P<name>[a-z0-9]{6,20}(?:\.[a-z0-9]{1,8})?)$", media_views.candidate_media, name="candidate-media"
    ),
]

if settings.DEBUG:
    # Media (uploaded and synthesised clips) in the embedded setup; production serves MEDIA_ROOT
    # from the web server in front of the app.
    urlpatterns += [path("media/<path:path>", serve, {"document_root": settings.MEDIA_ROOT})]

handler400 = "evalutron.handlers.bad_request"
handler404 = "evalutron.handlers.page_not_found"
handler500 = "evalutron.handlers.server_error"
