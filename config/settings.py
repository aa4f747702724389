"""Settings: one module, every value from the environment.

Two modes run the same code and processes:

* embedded default (nothing set): SQLite under ``var/``, a broker that needs no server
  (kombu's filesystem transport under ``var/``), a file cache shared by web, worker and beat,
  and outgoing e-mail/SMS written as files to ``OUTBOX_DIR``;
* production/CI: ``DATABASE_URL`` (PostgreSQL), ``REDIS_URL`` (broker, cache, rate limits) and
  provider credentials.

Every variable is listed in ``.env.example`` and in docs/configuration.md. Code reads
``settings.X``, never ``os.environ``. The helpers that parse values live beside this file
(config/env.py, config/backends.py, config/logging.py); every setting is assigned here.
"""

from __future__ import annotations

import json
from pathlib import Path

from config import backends
from config.env import (
    admins,
    env,
    project_version,
    require,
    secret_env,
    site_parts,
    stored_secret_key,
)
from config.logging import logging_config, routine_tasks

BASE_DIR = Path(__file__).resolve().parent.parent

# A local .env (never committed) fills in what the real environment does not set.
if (BASE_DIR / ".env").is_file():
    env.read_env(BASE_DIR / ".env")

VAR_DIR = Path(env("VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)

# --- Site and security ---------------------------------------------------------------------------
# SITE_URL is the absolute base for links in messages (review page, unsubscribe, callbacks).
PORT = env.int("PORT", default=8000)
SITE_URL = env("SITE_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")
_site = site_parts(SITE_URL)
HTTPS = _site.scheme == "https"

DATABASE_URL = secret_env("DATABASE_URL")
EMBEDDED_DATABASE = not DATABASE_URL
SECRET_KEY = secret_env("SECRET_KEY")
if not SECRET_KEY:
    require(
        DEBUG or EMBEDDED_DATABASE,
        "SECRET_KEY is required when DEBUG is off and DATABASE_URL is set",
    )
    # Generated once under var/, so that sessions survive restarts.
    SECRET_KEY = stored_secret_key(VAR_DIR / "secret_key")

# Old keys, still accepted while sessions, reset links and client-secret hashes made under them
# are replaced (a client's hash is re-made under SECRET_KEY at its next token request).
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS", default=sorted({_site.hostname, "localhost", "127.0.0.1", "[::1]"})
)
CSRF_TRUSTED_ORIGINS = env.list(
    "CSRF_TRUSTED_ORIGINS", default=[f"{_site.scheme}://{_site.netloc}"]
)

# Behind a TLS-terminating proxy: trust its X-Forwarded-Proto (only set this where the proxy
# strips the header from client requests, which every PaaS router does).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS)
# Load balancers probe over plain HTTP; the health middleware answers before any redirect.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_HSTS_SECONDS = env.int(
    "SECURE_HSTS_SECONDS", default=31_536_000 if HTTPS and not DEBUG else 0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=HTTPS)
SECURE_CONTENT_TYPE_NOSNIFF = True
# No page leaks its URL (the OAuth consent page's carries state and PKCE values); forms still
# pass CSRF checks: see core/security.py.
SECURE_REFERRER_POLICY = "no-referrer"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Applications --------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "oauth2_provider",
    "django_celery_beat",
    "core",
    "accounts",
    "reviews",
    "activity",
    "events",
    "connector_api",
    "oauth_provider",
    "portal",
]

MIDDLEWARE = [
    # First: answers /healthz and /readyz before host checks, redirects and sessions.
    "core.health.HealthCheckMiddleware",
    # Answers /metrics (Prometheus, with METRICS_TOKEN) and counts and times every other request.
    "core.metrics.MetricsMiddleware",
    "core.request_id.RequestIdMiddleware",
    # /api/ only: count the request (429 before any work) and add X-RateLimit-* to the answer;
    # then make every /api/ error the JSON shape, whatever raised it.
    "core.ratelimit.RateLimitMiddleware",
    "core.errors.ApiErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "core.security.NullOriginMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.security.FrameAncestorsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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

# --- Database ------------------------------------------------------------------------------------
# DATABASE_URL (PostgreSQL), else SQLite under VAR_DIR in WAL mode: config/backends.py.
DATABASES = {"default": backends.database(DATABASE_URL, var_dir=VAR_DIR)}
# PostgreSQL: the send path's and the API write's hand-written statements are prepared once per
# database session (core.db.prepared_sql). Off behind a pooler in transaction mode (PgBouncer).
DATABASE_PREPARED_STATEMENTS = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Rows each transaction of a housekeeping purge deletes (core.db.delete_in_batches; DOT's too).
PURGE_BATCH_SIZE = env.int("PURGE_BATCH_SIZE", default=5000)

# --- Auth ----------------------------------------------------------------------------------------
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# A password-reset link works once, for an hour (Django's default is three days).
PASSWORD_RESET_TIMEOUT = 60 * 60
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- I18N / time ---------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (WhiteNoise serves them from the web process) ----------------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(env("STATIC_ROOT", default=str(VAR_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": env(
            "STATICFILES_STORAGE",
            default="whitenoise.storage.CompressedManifestStaticFilesStorage",
        )
    },
}

# --- Redis, cache, Celery ------------------------------------------------------------------------
REDIS_URL = secret_env("REDIS_URL")

if REDIS_URL:
    CACHES = {"default": backends.redis_cache(REDIS_URL)}
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = backends.redis_broker_options(
        visibility_timeout=env.int("CELERY_VISIBILITY_TIMEOUT", default=900)
    )
else:
    # Files under VAR_DIR shared by web, worker and beat: the cache and kombu's filesystem broker.
    CACHES = {"default": backends.file_cache(VAR_DIR / "cache")}
    BROKER_DIR = Path(env("BROKER_DIR", default=str(VAR_DIR / "broker")))
    CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = backends.filesystem_broker_options(BROKER_DIR)

CELERY_TIMEZONE = "UTC"
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# At-least-once delivery of tasks; every task is idempotent against database state.
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = env.int("CELERY_WORKER_PREFETCH_MULTIPLIER", default=1)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=90)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_SEND_TASK_EVENTS = False
# Celery's Django fixup closes every database connection before and after every task unless
# this is set: a new PostgreSQL connection (a backend process fork) per send. Connections are
# instead recycled like web requests' (CONN_MAX_AGE, health checks: config/celery.py); the
# fixup then closes a thread's connection only every 2 x this many task runs.
CELERY_DB_REUSE_MAX = 10_000
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Beat re-reads its schedule at least this often (seconds).
CELERY_BEAT_MAX_LOOP_INTERVAL = 5
# Beat sends the heartbeat this often (seconds); /readyz reports when a worker last ran it. The
# whole schedule (CELERY_BEAT_SCHEDULE) is near the end of this file, after every setting it reads.
HEARTBEAT_INTERVAL = env.float("HEARTBEAT_INTERVAL", default=15.0)

# --- Outgoing messages ---------------------------------------------------------------------------
OUTBOX_DIR = Path(env("OUTBOX_DIR", default=str(VAR_DIR / "outbox")))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default=f"Reviews <reviews@{_site.hostname}>")
SERVER_EMAIL = env("SERVER_EMAIL", default=DEFAULT_FROM_EMAIL)
# One switch per integration: an ESP backend with its ANYMAIL settings, plain SMTP from
# EMAIL_URL, else files in OUTBOX_DIR. EMAIL_URL (django-environ's form, e.g.
# smtp://user:pass@host:587?tls=1, smtp+ssl://user:pass@host:465) sets Django's SMTP backend,
# host, port, login and TLS/SSL; an explicit EMAIL_BACKEND still wins.
EMAIL_URL = secret_env("EMAIL_URL")
_smtp = backends.smtp(EMAIL_URL)
EMAIL_BACKEND = env("EMAIL_BACKEND", default=_smtp.backend or "providers.outbox.OutboxEmailBackend")
EMAIL_HOST = _smtp.host
EMAIL_PORT = _smtp.port
EMAIL_HOST_USER = _smtp.user
EMAIL_HOST_PASSWORD = _smtp.password
EMAIL_USE_TLS = _smtp.use_tls
EMAIL_USE_SSL = _smtp.use_ssl
EMAIL_FILE_PATH = str(OUTBOX_DIR)
ANYMAIL = json.loads(secret_env("ANYMAIL", default="{}"))
# E-mail the owner when a contact leaves private feedback (a Celery task, after commit).
FEEDBACK_NOTIFY_OWNER = env.bool("FEEDBACK_NOTIFY_OWNER", default=True)
TWILIO_ACCOUNT_SID = env("TWILIO_ACCOUNT_SID", default="")
TWILIO_AUTH_TOKEN = secret_env("TWILIO_AUTH_TOKEN")
TWILIO_FROM_NUMBER = env("TWILIO_FROM_NUMBER", default="")
TWILIO_MESSAGING_SERVICE_SID = env("TWILIO_MESSAGING_SERVICE_SID", default="")

# --- API -----------------------------------------------------------------------------------------
RATE_LIMIT_PER_HOUR = env.int("RATE_LIMIT_PER_HOUR", default=5000)
# Automation platforms served; each slug gets /api/<slug>/... and /api/oauth/<slug>/...
CONNECTOR_PLATFORMS = env.list("CONNECTOR_PLATFORMS", default=["zapier"])

REST_FRAMEWORK = {
    # OAuth2Authentication first: its WWW-Authenticate header makes DRF answer 401, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "oauth_provider.authentication.OAuth2Authentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Strict JSON: NaN, overflowing numbers and runaway nesting are a 400, not a 500.
    "DEFAULT_PARSER_CLASSES": ["connector_api.parsers.JSONParser"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "connector_api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# --- OAuth 2.0 provider (django-oauth-toolkit), hardened to RFC 9700 ----------------------------
# DOT's models are not swapped; naming the setting lets our migrations reference the model.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
# Django's hashers (PBKDF2 first: owner and staff passwords) plus the client secrets' own.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    "oauth_provider.hashers.ClientSecretHasher",
]
# PKCE (S256 only) is required of these client ids and optional for the others. The validator
# decides per client (oauth_provider.validators.OAuth2Validator.is_pkce_required); DOT reads its
# own PKCE_REQUIRED only in the method ours replaces and in its deploy check, so it stays at its
# default (True).
OAUTH_PKCE_REQUIRED_CLIENTS = env.list("OAUTH_PKCE_REQUIRED_CLIENTS", default=[])
# Seconds after a rotation in which the rotated refresh token, presented again by the same
# client, gets a new pair in the same family instead of revoking it (parallel refreshes).
OAUTH_REFRESH_GRACE_SECONDS = env.int("OAUTH_REFRESH_GRACE_SECONDS", default=60)
# Seconds a validated access token lookup stays cached (oauth_provider/token_cache.py); any
# revocation invalidates it at once, so this bounds only a cache-outage edge case. 0: off.
OAUTH_TOKEN_CACHE_SECONDS = env.int("OAUTH_TOKEN_CACHE_SECONDS", default=60)
OAUTH2_PROVIDER = {
    # Client secrets are random and long: a keyed fast hash, checked in microseconds, where
    # PBKDF2 would cost any caller ~0.4 s of CPU per guess (oauth_provider/hashers.py).
    "CLIENT_SECRET_HASHER": "hmac_sha256",
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Idle expiry: a refresh token unused this long is dead (a Zap off for 90 days reconnects).
    "REFRESH_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_REFRESH_TOKEN_IDLE_DAYS", default=90) * 86400,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Tokens are stored hashed, which DOT's own grace period cannot work with (it replays the
    # stored plaintext); parallel refreshes of one token are handled by oauth_provider instead.
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "CLEAR_EXPIRED_TOKENS_BATCH_SIZE": PURGE_BATCH_SIZE,
    "SCOPES": {
        "read": "See your business profile and the status of your review requests",
        "write": "Add contacts and send them review requests on your behalf",
    },
    "DEFAULT_SCOPES": ["read", "write"],
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https"],
    "ALLOW_URI_WILDCARDS": False,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "REQUEST_APPROVAL_PROMPT": "force",
    "OIDC_ISS_ENDPOINT": SITE_URL,
    # Only the authorization code and refresh token grants exist (oauth_provider/server.py);
    # the validator adds code replay revocation, the refresh grace path and exact redirect URIs.
    "OAUTH2_SERVER_CLASS": "oauth_provider.server.Server",
    "OAUTH2_VALIDATOR_CLASS": "oauth_provider.validators.OAuth2Validator",
    # RFC 9700 gates (django-oauth-toolkit keeps them off until 4.0).
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}

# Request bodies over this answer 413 (the API's JSON endpoints take far less).
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

# Idempotency-Key: the first response for (user, key) is replayed for this long; an hourly beat
# task deletes older keys.
IDEMPOTENCY_KEY_TTL_HOURS = env.int("IDEMPOTENCY_KEY_TTL_HOURS", default=72)

# Rate limits (core/ratelimit.py): RATE_LIMIT_PER_HOUR requests per bucket (an owner; an IP
# otherwise) in a fixed window started by the bucket's first request. Counters live in Redis
# with REDIS_URL, else in the database.
RATE_LIMIT_WINDOW_SECONDS = 3600
# The OAuth token and revocation endpoints count only failed client authentications, per
# client id and per network (IPv6: its /64), this many per window each; past it a failing
# request answers 429 instead of 401, and the right secret is still accepted.
OAUTH_CLIENT_AUTH_FAILURES_PER_HOUR = env.int("OAUTH_CLIENT_AUTH_FAILURES_PER_HOUR", default=100)
# Login (accounts/throttle.py): per network and window, the failed logins allowed for addresses
# that have not logged in from that network in the last 30 days; past it they answer 429 without
# a password check (PBKDF2, ~0.4 s of CPU each). Addresses that have are not counted.
LOGIN_NEW_PAIR_FAILURES_PER_NETWORK = env.int("LOGIN_NEW_PAIR_FAILURES_PER_NETWORK", default=50)
RATE_LIMIT_KEY_PREFIX = "rr:rl"
# Proxies in front of gunicorn that append the client's address to X-Forwarded-For (a PaaS
# router: 1). 0: REMOTE_ADDR is the client (gunicorn sets it from the socket, never from a header).
NUM_PROXIES = env.int("NUM_PROXIES", default=0)

# OpenAPI 3 schema (/api/schema/, docs/openapi.yaml) and its docs page (/api/docs/): see
# connector_api/openapi.py. Swagger UI's files come from drf-spectacular-sidecar (no CDN).
SPECTACULAR_SETTINGS = {
    "TITLE": "Review requests API",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/(oauth/)?[^/]+",
    "OAUTH2_FLOWS": ["authorizationCode"],
    "OAUTH2_AUTHORIZATION_URL": f"/api/oauth/{CONNECTOR_PLATFORMS[0]}/authorize",
    "OAUTH2_TOKEN_URL": f"/api/oauth/{CONNECTOR_PLATFORMS[0]}/token",
    "OAUTH2_REFRESH_URL": f"/api/oauth/{CONNECTOR_PLATFORMS[0]}/token",
    "PREPROCESSING_HOOKS": ["connector_api.openapi.preprocess_platform_paths"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "connector_api.openapi.postprocess",
    ],
    "ENUM_NAME_OVERRIDES": {},
    "TAGS": [
        {"name": "Contacts", "description": "Add contacts; each gets at most one review request."},
        {"name": "Connection", "description": "Who the token acts for, and whether it works."},
        {"name": "OAuth", "description": "Tokens: exchange, refresh, revoke, disconnect."},
        {"name": "Hooks", "description": "Subscribe URLs to events (docs/events.md)."},
    ],
}

# --- Errors: mail to ADMINS, Sentry (core/sentry.py) ----------------------------------------------
# ADMINS="Ops <ops@example.com>, oncall@example.com": Django mails them each server error (a
# 500 of a page or of the API, logged by django.request) from SERVER_EMAIL through EMAIL_BACKEND.
ADMINS = admins(env("ADMINS", default=""))
MANAGERS = ADMINS
# --- Metrics (core/metrics.py) -------------------------------------------------------------------
# /metrics answers Prometheus only with "Authorization: Bearer <METRICS_TOKEN>"; unset: 404.
# Several processes on a machine share their metrics through PROMETHEUS_MULTIPROC_DIR (read by
# prometheus-client itself, docs/operations.md).
METRICS_TOKEN = secret_env("METRICS_TOKEN")
# Sentry is on when SENTRY_DSN is set: Django and Celery integrations, no personal data sent.
SENTRY_DSN = secret_env("SENTRY_DSN")
SENTRY_ENVIRONMENT = env("SENTRY_ENVIRONMENT", default="production")
SENTRY_RELEASE = env(
    "SENTRY_RELEASE",
    default=project_version(BASE_DIR / "pyproject.toml"),
)
# Share of requests and tasks traced (performance monitoring); 0 sends errors only.
SENTRY_TRACES_SAMPLE_RATE = env.float("SENTRY_TRACES_SAMPLE_RATE", default=0.0)

# --- Delivery engine (reviews): dispatcher, sends, retries, leases, webhooks ---------------------
# Beat runs the dispatcher this often (seconds); add_contact also kicks it on commit.
DISPATCH_INTERVAL_SECONDS = env.float("DISPATCH_INTERVAL_SECONDS", default=2.0)
# Rows claimed per transaction, and at most this many queued at once (a short broker queue).
DISPATCH_BATCH_SIZE = env.int("DISPATCH_BATCH_SIZE", default=100)
DISPATCH_MAX_QUEUED = env.int("DISPATCH_MAX_QUEUED", default=500)
# Most rows one send task carries (sent one after the other; a small dispatch is spread one row
# per task): a backlog pays a task's worker overhead once per batch. 1 = a task per row.
DELIVERY_SEND_BATCH = env.int("DELIVERY_SEND_BATCH", default=8)
require(DELIVERY_SEND_BATCH >= 1, "DELIVERY_SEND_BATCH must be at least 1.")
# A dispatch task older than this is dropped by the worker (the next one does its work).
DISPATCH_TASK_EXPIRES = max(10.0, DISPATCH_INTERVAL_SECONDS * 5)
# Rejected-transient sends: retried with exponential backoff and jitter, this many attempts.
DELIVERY_MAX_ATTEMPTS = env.int("DELIVERY_MAX_ATTEMPTS", default=5)
DELIVERY_RETRY_BASE_SECONDS = env.int("DELIVERY_RETRY_BASE_SECONDS", default=30)
DELIVERY_RETRY_MAX_SECONDS = env.int("DELIVERY_RETRY_MAX_SECONDS", default=3600)
# Leases: a row queued this long lost its task (back to pending); a row sending this long lost
# its worker (unknown: it may have been sent). The sending lease must outlive a send task.
DELIVERY_QUEUED_LEASE_SECONDS = env.int("DELIVERY_QUEUED_LEASE_SECONDS", default=300)
DELIVERY_SENDING_LEASE_SECONDS = env.int("DELIVERY_SENDING_LEASE_SECONDS", default=300)
# Provider HTTP timeouts (seconds): connecting (nothing sent yet) and waiting for the answer.
DELIVERY_CONNECT_TIMEOUT = env.float("DELIVERY_CONNECT_TIMEOUT", default=5.0)
DELIVERY_READ_TIMEOUT = env.float("DELIVERY_READ_TIMEOUT", default=20.0)
require(
    DELIVERY_SENDING_LEASE_SECONDS > CELERY_TASK_TIME_LIMIT,
    "DELIVERY_SENDING_LEASE_SECONDS must be longer than CELERY_TASK_TIME_LIMIT, or a send "
    "still running would be declared lost",
)
# Provider calls in flight at once per worker process (threads pool; reviews.services.sending.
# ProviderSlot): spare threads record outcomes and start the next sends meanwhile. 0: no cap
# beyond the thread count. A send takes its slot before claiming its row; one that gets none
# within DELIVERY_PROVIDER_WAIT_SECONDS puts the row back to pending (nothing was sent).
DELIVERY_PROVIDER_CONCURRENCY = env.int("DELIVERY_PROVIDER_CONCURRENCY", default=0)
DELIVERY_PROVIDER_WAIT_SECONDS = env.float("DELIVERY_PROVIDER_WAIT_SECONDS", default=10.0)
_PROVIDER_WAIT = DELIVERY_PROVIDER_WAIT_SECONDS if DELIVERY_PROVIDER_CONCURRENCY > 0 else 0.0
require(
    _PROVIDER_WAIT + DELIVERY_CONNECT_TIMEOUT + DELIVERY_READ_TIMEOUT < CELERY_TASK_SOFT_TIME_LIMIT,
    "DELIVERY_CONNECT_TIMEOUT + DELIVERY_READ_TIMEOUT (+ DELIVERY_PROVIDER_WAIT_SECONDS with "
    "DELIVERY_PROVIDER_CONCURRENCY set) must be below CELERY_TASK_SOFT_TIME_LIMIT: a send "
    "stopped by the time limit mid-call has an unknown outcome",
)
ANYMAIL.setdefault("REQUESTS_TIMEOUT", (DELIVERY_CONNECT_TIMEOUT, DELIVERY_READ_TIMEOUT))
# The SMTP backend's socket timeout (Django's default waits forever).
EMAIL_TIMEOUT = DELIVERY_READ_TIMEOUT
# Twilio's API root; tests and benchmarks point the real client at a fake on loopback.
TWILIO_API_BASE_URL = env("TWILIO_API_BASE_URL", default="https://api.twilio.com")
# Twilio's Advanced Opt-Out answers STOP/START/HELP itself (its default): then we send no
# second confirmation for those exact keywords, only for other wordings we recognise.
TWILIO_ANSWERS_STANDARD_KEYWORDS = env.bool("TWILIO_ANSWERS_STANDARD_KEYWORDS", default=True)
SMS_HELP_TEXT = env(
    "SMS_HELP_TEXT",
    default="Review requests from local businesses. Reply STOP to opt out. "
    "Msg&data rates may apply.",
)
# An inbox (routed to anymail's inbound webhook) for mailto: unsubscribes; unset: https only.
UNSUBSCRIBE_MAILTO = env("UNSUBSCRIBE_MAILTO", default="")
# Unknown outcomes: asked about after this many minutes (beat, every interval below); given up
# (failed, resendable) after this many hours when the provider cannot be asked.
UNKNOWN_RECONCILE_AFTER_MINUTES = env.int("UNKNOWN_RECONCILE_AFTER_MINUTES", default=10)
UNKNOWN_RECONCILE_INTERVAL_SECONDS = env.int("UNKNOWN_RECONCILE_INTERVAL_SECONDS", default=600)
UNKNOWN_MAX_AGE_HOURS = env.int("UNKNOWN_MAX_AGE_HOURS", default=48)
# Opt-out/opt-in audit rows are kept this long (4 years), then purged daily.
OPT_OUT_AUDIT_RETENTION_DAYS = env.int("OPT_OUT_AUDIT_RETENTION_DAYS", default=1461)
# Dispatch tasks travel on their own queue, which every worker also consumes (Procfile), so a
# dispatch kick is picked up at once instead of waiting behind the send tasks it refills.
CELERY_TASK_ROUTES = {"reviews.tasks.dispatch_due_messages": {"queue": "dispatch"}}

# --- Outgoing webhooks (events app): REST hooks to automation platforms ---------------------------
# Allow http:// targets and loopback/private addresses: local development and tests ONLY (a
# production service must never post to its own network). Link-local (cloud metadata) addresses
# stay refused either way.
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=False)
# Seconds for one whole call, after the target's name is resolved: connect, TLS, send, the
# answer's headers and the first 1 KB of its body (the only part read). A wall-clock deadline.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=5.0)
# A claimed delivery is due again after this many seconds unless its outcome was recorded (a
# worker killed mid-call): longer than one call, shorter than the retry schedule's first step.
WEBHOOK_LEASE_SECONDS = env.int("WEBHOOK_LEASE_SECONDS", default=60)
# Retries: base x 2^(attempt-1) seconds, capped, times 0.5-1.0; a delivery is retried until it
# is WEBHOOK_RETRY_HOURS old, then marked failed.
WEBHOOK_RETRY_BASE_SECONDS = env.float("WEBHOOK_RETRY_BASE_SECONDS", default=30.0)
WEBHOOK_RETRY_MAX_SECONDS = env.float("WEBHOOK_RETRY_MAX_SECONDS", default=7200.0)
WEBHOOK_RETRY_HOURS = env.float("WEBHOOK_RETRY_HOURS", default=26.0)
# A subscription with no successful delivery for this many days (while failing) is disabled.
WEBHOOK_DISABLE_AFTER_DAYS = env.float("WEBHOOK_DISABLE_AFTER_DAYS", default=3.0)
# Events and their delivery records are kept this long (the portal's recent deliveries).
WEBHOOK_EVENT_RETENTION_DAYS = env.int("WEBHOOK_EVENT_RETENTION_DAYS", default=30)

# --- Periodic tasks: the whole beat schedule -----------------------------------------------------
# Schedules in seconds. Beat (DatabaseScheduler) writes these entries into django_celery_beat's
# tables at start, by name; the admin shows them there.
CELERY_BEAT_SCHEDULE = {
    # A worker records when it ran this; /readyz reports the age (beat and a worker are alive).
    "heartbeat": {"task": "core.tasks.heartbeat", "schedule": HEARTBEAT_INTERVAL},
    # Expired tokens and codes, revoked refresh tokens past reuse detection, stale records.
    "oauth-clear-expired": {"task": "oauth_provider.tasks.clear_expired_tokens", "schedule": 3600},
    # Idempotency-Key records older than IDEMPOTENCY_KEY_TTL_HOURS.
    "purge-idempotency-keys": {
        "task": "connector_api.tasks.purge_idempotency_keys",
        "schedule": 3600.0,
    },
    # Rate-limit windows of the database counters (the embedded default) that have ended.
    "purge-rate-limit-counters": {
        "task": "core.tasks.purge_rate_limit_counters",
        "schedule": 3600.0,
    },
    # The dispatcher's sweep: due messages claimed and queued (add_contact also kicks it on
    # commit); a sweep not started within DISPATCH_TASK_EXPIRES is dropped, the next one runs.
    "dispatch-due-messages": {
        "task": "reviews.tasks.dispatch_due_messages",
        "schedule": DISPATCH_INTERVAL_SECONDS,
        "options": {"expires": DISPATCH_TASK_EXPIRES},
    },
    # Unknown outcomes older than UNKNOWN_RECONCILE_AFTER_MINUTES: ask the provider; past
    # UNKNOWN_MAX_AGE_HOURS, when it cannot be asked, give up (failed, resendable).
    "reconcile-unknown-messages": {
        "task": "reviews.tasks.reconcile_unknown_messages",
        "schedule": float(UNKNOWN_RECONCILE_INTERVAL_SECONDS),
    },
    # Opt-out/opt-in audit rows older than OPT_OUT_AUDIT_RETENTION_DAYS, daily.
    "purge-opt-out-events": {"task": "reviews.tasks.purge_opt_out_events", "schedule": 86400.0},
    # Webhook deliveries due (retries, and any whose on-commit kick was lost).
    "deliver-webhooks": {
        "task": "events.tasks.deliver_webhooks",
        "schedule": 60.0,
        "options": {"expires": 60},
    },
    # Events and deliveries older than WEBHOOK_EVENT_RETENTION_DAYS, daily.
    "purge-events": {"task": "events.tasks.purge_events", "schedule": 86400.0},
    # The dashboards' rollup: the hours closed since the last run (activity.services; the task
    # keeps its name from reviews); a run not started within its interval is dropped.
    "refresh-activity-rollup": {
        "task": "reviews.tasks.refresh_activity_rollup",
        "schedule": 600.0,
        "options": {"expires": 600},
    },
}

# --- Logging: one JSON object per line on stdout (config/logging.py) -----------------------------
LOG_LEVEL = env("LOG_LEVEL", default="INFO")
# Celery's INFO lines about each run of a task the schedule above runs more often than once a
# minute are left out (three lines every two seconds for the dispatcher's sweep alone); their
# failures and retries stay, and LOG_LEVEL=DEBUG shows them all (core.logs.RoutineTaskFilter).
LOGGING = logging_config(level=LOG_LEVEL, routine_tasks=routine_tasks(CELERY_BEAT_SCHEDULE))
