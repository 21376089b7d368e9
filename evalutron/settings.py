"""Evalutron settings: one module, driven by environment variables.

With no environment at all the app refuses to start (SECRET_KEY is required when DEBUG is off);
`make demo` sets DEBUG=true and runs on an embedded SQLite database with Celery tasks executed
in-process. DATABASE_URL switches to PostgreSQL, CELERY_BROKER_URL to Redis with separate
workers. See README.md, "Configuration", for every variable.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evalutron.env import env_bool, env_choice, env_int, env_list, env_rate, env_str, load_env_file

BASE_DIR = Path(__file__).resolve().parent.parent
# A local .env (written by `make demo`, never committed) fills in variables the environment lacks,
# so management commands work from a plain shell. EVALUTRON_ENV_FILE names another file, or
# none when empty (the tests do this).
load_env_file(env_str("EVALUTRON_ENV_FILE", str(BASE_DIR / ".env")))
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "Environment variable SECRET_KEY is required when DEBUG is off (set DEBUG=true for local development)."
        )
    SECRET_KEY = "insecure-development-key-only-for-debug-mode-" + "x" * 20

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc served from our own static files (no CDN)
    "csp",
    "grading",
    "analysis",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "evalutron.limits.BodySizeLimitMiddleware",
    "evalutron.handlers.ClientAbortMiddleware",
    "evalutron.csp.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "evalutron.urls"
WSGI_APPLICATION = "evalutron.wsgi.application"
ASGI_APPLICATION = "evalutron.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    try:
        _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0))
    except Exception as exc:  # dj_database_url raises several types for a bad URL
        raise ImproperlyConfigured(f"Environment variable DATABASE_URL is not a valid database URL: {exc}") from None
    if _db["ENGINE"] not in ("django.db.backends.postgresql", "django.db.backends.sqlite3"):
        raise ImproperlyConfigured(
            f"Environment variable DATABASE_URL names engine {_db['ENGINE']!r}; "
            "Evalutron supports postgres:// and sqlite:// URLs."
        )
    _db["CONN_HEALTH_CHECKS"] = True
    if _db["ENGINE"] == "django.db.backends.postgresql":
        _db["ENGINE"] = "evalutron.postgres"  # Django's, with a health check that costs no statement
else:
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA_DIR / "evalutron.sqlite3"}
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Every SQLite database, embedded or named by a sqlite:// URL: WAL so readers never block the
    # writer, IMMEDIATE transactions so two writers queue instead of failing mid-transaction with
    # "database is locked", and a busy timeout to wait in that queue.
    _db["OPTIONS"] = {
        "timeout": env_int("SQLITE_BUSY_TIMEOUT", 20, minimum=1),
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL;",
        **_db.get("OPTIONS", {}),
    }
# Test databases: a suffix (set by the test plugin to the process id) lets several test runs share
# one machine; on SQLite a file, not memory, so that a Celery worker started by a test sees it.
_test_suffix = env_str("EVALUTRON_TEST_DB_SUFFIX")
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db.setdefault("TEST", {})["NAME"] = str(DATA_DIR / f"test-evalutron{_test_suffix}.sqlite3")
elif _test_suffix:
    _db.setdefault("TEST", {})["NAME"] = f"test_{_db['NAME']}{_test_suffix}"
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
if CELERY_BROKER_URL:
    CELERY_TASK_ALWAYS_EAGER = False
    # A sharded analysis run is a chord (its shards, then the step that combines them), and a chord
    # needs a result backend: the broker's Redis unless another is named.
    if CELERY_RESULT_BACKEND is None and CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        CELERY_RESULT_BACKEND = CELERY_BROKER_URL
    CELERY_RESULT_EXPIRES = 3600
else:
    # Embedded mode: tasks run in the web process, synchronously. Nothing else to start.
    CELERY_BROKER_URL = "memory://localhost/"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=60)}

# Seconds to wait after new judgments before an automatic analysis run starts.
ANALYSIS_DEBOUNCE_SECONDS = env_int("ANALYSIS_DEBOUNCE_SECONDS", 60, minimum=0)
# A running analysis beats every ANALYSIS_HEARTBEAT_SECONDS from a side thread. A run silent for
# ANALYSIS_STALE_SECONDS is considered lost (its worker was killed): it is queued again, or marked
# failed with the reason once it has used ANALYSIS_MAX_ATTEMPTS attempts. The sweeper looks every
# ANALYSIS_SWEEP_SECONDS, so a killed worker's run is running again within stale + sweep seconds.
ANALYSIS_HEARTBEAT_SECONDS = env_int("ANALYSIS_HEARTBEAT_SECONDS", 10, minimum=1)
ANALYSIS_STALE_SECONDS = env_int("ANALYSIS_STALE_SECONDS", 60, minimum=3 * ANALYSIS_HEARTBEAT_SECONDS)
ANALYSIS_SWEEP_SECONDS = env_int("ANALYSIS_SWEEP_SECONDS", 15, minimum=1)
ANALYSIS_MAX_ATTEMPTS = env_int("ANALYSIS_MAX_ATTEMPTS", 3, minimum=1)
ANALYSIS_TIME_LIMIT_SECONDS = env_int("ANALYSIS_TIME_LIMIT_SECONDS", 1800, minimum=60)
# A run reads a campaign in shards of graders with about this many judgments each; with a broker the
# shards are Celery tasks that any worker takes (docs/analysis.md, "Sharded runs").
ANALYSIS_SHARD_JUDGMENTS = env_int("ANALYSIS_SHARD_JUDGMENTS", 500_000, minimum=1)
# Embedded (no broker): a background thread of the web process, started by its first request, sweeps
# lost runs and executes queued runs once due (analysis.embedded). Off, `manage.py run_due_analyses` does.
ANALYSIS_EMBEDDED_THREAD = env_bool("ANALYSIS_EMBEDDED_THREAD", True)
# With `celery -A evalutron beat` (or a worker started with -B) the sweeper runs every ANALYSIS_SWEEP_SECONDS.
CELERY_BEAT_SCHEDULE = {
    "analysis-sweep": {"task": "analysis.sweep_stale_runs", "schedule": float(ANALYSIS_SWEEP_SECONDS)}
}

# --- Auth, API ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "grading:home"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    # Token first: a request without credentials, or with a bad or expired token, is answered 401
    # with `WWW-Authenticate: Token` (DRF takes the header from the first class).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "grading.api.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 500,
    # Every refusal is {code, detail, …}, as the schema's ErrorOut says (grading/api/schema.py).
    "EXCEPTION_HANDLER": "grading.api.base.api_exception_handler",
}
# Seconds a web process remembers a valid API token: a token revoked (deleted, its user deactivated)
# through another process still works this long there; 0 looks every token up on every request.
TOKEN_CACHE_SECONDS = env_int("TOKEN_CACHE_SECONDS", 5, minimum=0)
# Client timestamps accepted on events: this far behind and ahead of the server's clock.
EVENT_CLIENT_TS_MAX_AGE_SECONDS = env_int("EVENT_CLIENT_TS_MAX_AGE_SECONDS", 365 * 86400, minimum=60)
EVENT_CLIENT_TS_MAX_AHEAD_SECONDS = env_int("EVENT_CLIENT_TS_MAX_AHEAD_SECONDS", 86400, minimum=0)
# The largest page a list endpoint returns (?limit=); larger or non-numeric values are a 400.
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 1000, minimum=1)
REST_FRAMEWORK["DEFAULT_PAGINATION_CLASS"] = "grading.api.pagination.BoundedLimitOffsetPagination"
# Campaign imports: the largest file read, and the most entries of any one kind (rows, queries,
# candidates, units, graders) in it.
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
IMPORT_MAX_ITEMS = env_int("IMPORT_MAX_ITEMS", 100_000, minimum=1)
# Request bodies: at most this many bytes per endpoint (first matching pattern), else 413.
BODY_LIMIT_DEFAULT = env_int("BODY_LIMIT_DEFAULT", 1024 * 1024, minimum=1024)
BODY_LIMIT_EVENTS = env_int("BODY_LIMIT_EVENTS", 500 * 9 * 1024, minimum=1024)  # a full batch of full events
# One limit per kind of upload, read wherever that kind arrives (browser form, API, CLI):
# systems' orderings and scores files; a campaign's media zip as uploaded, and its files unpacked.
# Uploads larger than FILE_UPLOAD_MAX_MEMORY_SIZE (Django's 2.5 MB) are streamed to a temporary file.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 20 * 1024 * 1024, minimum=1024)
MEDIA_ZIP_MAX_BYTES = env_int("MEDIA_ZIP_MAX_BYTES", 1024 * 1024 * 1024, minimum=1024)
MEDIA_UNPACKED_MAX_BYTES = env_int("MEDIA_UNPACKED_MAX_BYTES", 4 * 1024 * 1024 * 1024, minimum=1024)
BODY_LIMITS = [  # (path pattern, the setting holding its limit, or settings whose limits add up)
    (r"^/api/events/$", "BODY_LIMIT_EVENTS"),
    (r"^/(api|reports)/campaigns/\d+/system-(orderings|scores)/$", ("UPLOAD_MAX_BYTES", "BODY_LIMIT_DEFAULT")),
    (r"^/reports/campaigns/\d+/evaluate-runs/$", ("UPLOAD_MAX_BYTES", "BODY_LIMIT_DEFAULT")),
    (r"^/organize/new/$", ("IMPORT_MAX_BYTES", "MEDIA_ZIP_MAX_BYTES", "BODY_LIMIT_DEFAULT")),
    (r"^/admin/", "UPLOAD_MAX_BYTES"),
]
# The reverse proxies in front of the app (addresses or networks, e.g. 127.0.0.1,10.0.0.0/8): only a
# request from one of them has its X-Forwarded-For read for the client's address (evalutron.limits).
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", [])
for _proxy in TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"Environment variable TRUSTED_PROXIES holds {_proxy!r}, which is not an IP address or network "
            "(e.g. 127.0.0.1, 10.0.0.0/8, ::1)."
        ) from None
# Throttling (429 with Retry-After), counted in the shared cache: token requests per client
# address, anonymous API calls per address; failed browser logins per address and per user name.
THROTTLE_RATES = {
    "token": env_rate("THROTTLE_TOKEN", "10/min"),
    "anon": env_rate("THROTTLE_ANON", "60/min"),
    # Visits of join links (crowd studies), per client address: GET and POST alike.
    "join": env_rate("THROTTLE_JOIN", "30/min"),
    # Password-reset requests, per client address.
    "reset": env_rate("THROTTLE_RESET", "5/min"),
}
# API calls of a logged-in user (token or browser session), in fixed windows: a burst rate per minute
# and a sustained rate per hour. The grading page's outbox sends at most one request at a time and
# puts whatever was recorded meanwhile in the next batch, so a grader makes at most one request per
# interaction: a fast grader (a unit every 5 s, ~4 events each: view, value, play, pause) makes
# ~48 a minute and ~2,900 an hour; keyboard reordering can reach ~4 a second for a while. The
# defaults: 4 a second for a whole minute, and twice the fast grader's hour (room for the outbox's
# retries after dropped answers); a runaway script is still stopped within its first minute.
THROTTLE_USER_BURST = env_rate("THROTTLE_USER_BURST", "240/min")
THROTTLE_USER_SUSTAINED = env_rate("THROTTLE_USER_SUSTAINED", "6000/hour")
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["evalutron.limits.AnonThrottle", "evalutron.limits.UserRateThrottle"]
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10, minimum=1)
LOGIN_FAILURE_WINDOW = env_int("LOGIN_FAILURE_WINDOW", 900, minimum=1)
SPECTACULAR_SETTINGS = {
    "TITLE": "Evalutron API",
    "DESCRIPTION": "Collect human judgments and measure how far they can be trusted.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "grading.api.schema.add_common_errors"],
    "OAS_VERSION": "3.1.0",
}

# --- Cache: shared by all web processes (throttle and login counts) -------------------------
CACHE_URL = env_str("CACHE_URL") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Internationalisation, static, media --------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(DATA_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "evalutron.storage.StaticStorage"
    },
}

# --- Security -------------------------------------------------------------------------------
# Production defaults are strict; each switch can be relaxed explicitly (e.g. behind a proxy
# that terminates TLS, set SECURE_PROXY_SSL_HEADER=true).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Content-Security-Policy on every page: scripts only from our own static files (or with the
# request's nonce); media and images also from the http(s) URLs an organizer gave for items.
# Inline style attributes are still allowed ('unsafe-inline' for styles only). The API docs (Swagger
# UI, ReDoc) load their scripts from our own static files, so they live under the same policy.
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "https:", "http:"],
        "media-src": [SELF, "https:", "http:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "worker-src": [SELF, "blob:"],  # ReDoc searches in a worker it makes from a blob
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# --- E-mail ---------------------------------------------------------------------------------
# Invitations (set-password links) are e-mailed only when EMAIL_BACKEND is set, e.g.
# django.core.mail.backends.smtp.EmailBackend with EMAIL_HOST; otherwise the organizer copies them.
# Password-reset links too; without EMAIL_BACKEND the embedded development default (DEBUG) prints
# them on the web process's console, and a production server offers no reset (evalutron/accounts.py).
EMAIL_ENABLED = bool(env_str("EMAIL_BACKEND"))
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.locmem.EmailBackend",
)
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "evalutron@localhost")
# How long a set-password link works (seconds; Django's default is three days).
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT", 3 * 24 * 3600, minimum=60)

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

DATA_DIR.mkdir(parents=True, exist_ok=True)
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns about a missing folder
