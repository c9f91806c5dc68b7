"""Settings for embedadmin, all read from the environment (see docs/configuration.md).

The defaults are the embedded install that ``make run`` serves: a SQLite file under ``var/``, a local
memory cache, an in-process Celery worker on a SQLite broker. Production sets ``DATABASE_URL``,
``REDIS_URL``, ``CELERY_BROKER_URL``, ``SECRET_KEY`` and ``ALLOWED_HOSTS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from django.core.exceptions import ImproperlyConfigured

from embedadmin.core.head_limits import DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_TARGET_BYTES
from embedadmin.envconfig import (
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("EMBEDADMIN_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)

_DEV_SECRET = "insecure-dev-secret-change-me-0123456789abcdef0123456789abcdef"
SECRET_KEY = env_str("SECRET_KEY") or ""
if not SECRET_KEY:
    if DEBUG or env_bool("EMBEDADMIN_ALLOW_DEV_SECRET", False):
        SECRET_KEY = _DEV_SECRET
    else:
        raise ImproperlyConfigured("SECRET_KEY is not set (or set DEBUG=true for a development install)")
if len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("SECRET_KEY must be at least 32 characters")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", ".localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_celery_beat",
    "django_celery_results",
    "embedadmin.core",
    "embedadmin.accounts",
    "embedadmin.audit",
    "embedadmin.directory",
    "embedadmin.embedding",
    "embedadmin.semantic",
    "embedadmin.dashboards",
    "embedadmin.chat",
    "embedadmin.platform",
    "embedadmin.panel",
]

# Sync-only variants of the standard middleware: see embedadmin/core/middleware.py for why.
MIDDLEWARE = [
    # First: it sees every answer, so a refusal by any middleware below (a bad Host header) is JSON on API paths.
    "embedadmin.core.middleware.ApiErrorMiddleware",
    "embedadmin.core.middleware.SecurityMiddleware",
    "embedadmin.core.middleware.StaticFilesMiddleware",
    "embedadmin.core.middleware.SessionMiddleware",
    "embedadmin.core.middleware.CommonMiddleware",
    "embedadmin.core.middleware.CsrfViewMiddleware",
    "embedadmin.core.middleware.AuthenticationMiddleware",
    "embedadmin.core.middleware.MessageMiddleware",
    "embedadmin.core.middleware.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "embedadmin.urls"
# Threads per web process serving request/response endpoints (embedadmin/asgi.py); keep below the
# database pool size (DATABASE_URL ?pool_max_size=, default 20).
WEB_THREADS = env_int("WEB_THREADS", 8, minimum=1)
ASGI_APPLICATION = "embedadmin.asgi.application"
WSGI_APPLICATION = "embedadmin.wsgi.application"

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

DATABASES = {
    "default": database_from_url(
        env_str("DATABASE_URL") or "sqlite:///var/embedadmin.sqlite3",
        base_dir=BASE_DIR,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL") or ""
CACHES: dict[str, dict[str, Any]]
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    # Results, their stamps and the versions of credentials share it: room for more than LocMem's 300 default.
    # Bounded in bytes too (LIMITS["LOCAL_CACHE_BYTES"], read by the backend when it is first used).
    CACHES = {
        "default": {
            "BACKEND": "embedadmin.core.memory.BoundedLocMemCache",
            "OPTIONS": {"MAX_ENTRIES": 10_000},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "/admin/login/"
# Where a login lands when its next= is missing or points off the panel (Django would send it to /accounts/profile/).
LOGIN_REDIRECT_URL = "/admin/"

# Behind a TLS-terminating proxy, the proxy sets X-Forwarded-Proto.
if env_bool("EMBEDADMIN_BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    USE_X_FORWARDED_HOST = True

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["embedadmin.core.parsers.JSONBodyParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "embedadmin.core.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# GET /api/v1/spec (embedadmin/platform/openapi.py): generated from the DRF views; the plain Django views (Core
# Data API, Chat API, embed pages) are merged in by the postprocessing hook from fragments written from their code.
SPECTACULAR_SETTINGS = {
    "TITLE": "embedadmin HTTP APIs",
    "DESCRIPTION": "Platform API, embedding, Core Data API, Chat API and SCIM 2.0.",
    "VERSION": "1",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/(api/v1|api/scim/v2|scim/v2)",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "embedadmin.platform.openapi.postprocess",
    ],
    "PREPROCESSING_HOOKS": ["embedadmin.platform.openapi.preprocess"],
}

# Celery: Redis at scale, a SQLite broker file of its own for the embedded install.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or (REDIS_URL or f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}")
CELERY_RESULT_BACKEND = "django-db"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 120
CELERY_TASK_TIME_LIMIT = 180
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Chat runs hold a lease: the process executing a run renews its heartbeat this often, and a run whose heartbeat
# is older than CHAT_RUN_STALE_SECONDS lost its process: it is failed, and its thread takes messages again.
CHAT_RUN_HEARTBEAT_SECONDS = env_float("CHAT_RUN_HEARTBEAT_SECONDS", 1.0)
CHAT_RUN_STALE_SECONDS = env_float("CHAT_RUN_STALE_SECONDS", 3.0)

CELERY_BEAT_SCHEDULE: dict = {
    "chat-expire-ephemeral-users": {"task": "chat.expire_ephemeral_users", "schedule": 60.0},
    # A run nobody watches is failed within CHAT_RUN_STALE_SECONDS plus this of its process's death.
    "chat-fail-stale-runs": {"task": "chat.fail_stale_runs", "schedule": 2.0},
    "chat-reconcile-user-counts": {"task": "chat.reconcile_user_counts", "schedule": 3600.0},
    "accounts-purge-revoked-tokens": {"task": "accounts.purge_revoked_tokens", "schedule": 3600.0},
    "accounts-purge-issued-tokens": {"task": "accounts.purge_issued_tokens", "schedule": 3600.0},
    "audit-purge-entries": {"task": "audit.entries_purge", "schedule": 24 * 3600.0},
    # Rollups due by their refresh_key (every, CRON, sql, incremental) are queued for a build at each tick.
    "semantic-refresh-pre-aggregations": {
        "task": "semantic.refresh_pre_aggregations",
        "schedule": env_float("PRE_AGGREGATIONS_TICK_SECONDS", 10.0),
    },
}


class ProductSettings(TypedDict):
    """The keys of ``EMBEDADMIN`` and their types (what ``settings.EMBEDADMIN[...]`` gives, for mypy)."""

    SESSION_TTL_SECONDS: int
    EMBED_TOKEN_TTL_SECONDS: int
    EMBED_TOKEN_ISSUER: str
    DEFAULT_MAX_EXTERNAL_USERS: int
    DEFAULT_MAX_NON_EPHEMERAL_CHAT_USERS: int
    CREDENTIAL_MEMORY_SECONDS: float
    ENCRYPTION_KEY: str
    EMBED_RENEW_LEAD_SECONDS: int
    EMBED_EXPORT_MAX_ROWS: int
    AUDIT_RETENTION_DAYS: int


class SemanticSettings(TypedDict):
    """The keys of ``SEMANTIC`` and their types."""

    DEFAULT_DEPLOYMENT_ID: int
    QUERY_TIMEOUT_SECONDS: float
    CONTINUE_WAIT_SECONDS: float
    QUERY_WORKERS: int
    DEFAULT_QUERY_LIMIT: int
    MAX_QUERY_LIMIT: int
    JWKS_TTL_SECONDS: int
    JOB_LEASE_SECONDS: float
    JOB_RENEW_SECONDS: float


# Product settings.
EMBEDADMIN: ProductSettings = {
    # Lifetime of a minted sessionId before it is exchanged.
    "SESSION_TTL_SECONDS": env_int("EMBED_SESSION_TTL_SECONDS", 300, minimum=1),
    # Lifetime of the embed token a session is exchanged for.
    "EMBED_TOKEN_TTL_SECONDS": env_int("EMBED_TOKEN_TTL_SECONDS", 24 * 3600, minimum=60),
    "EMBED_TOKEN_ISSUER": env_str("EMBED_TOKEN_ISSUER", "embedadmin"),
    "DEFAULT_MAX_EXTERNAL_USERS": env_int("DEFAULT_MAX_EXTERNAL_USERS", 10_000, minimum=0),
    "DEFAULT_MAX_NON_EPHEMERAL_CHAT_USERS": env_int("DEFAULT_MAX_NON_EPHEMERAL_CHAT_USERS", 10_000, minimum=0),
    # How long a process may use what it remembers of API keys, deployments, secrets, revocations and directory
    # catalogs without reading them again: a change made through the services is seen at once (core/versions.py,
    # ADR 0012).
    "CREDENTIAL_MEMORY_SECONDS": env_float("CREDENTIAL_MEMORY_SECONDS", 5.0),
    # Key for encrypting secrets that must stay recoverable (deployment JWT secrets).
    "ENCRYPTION_KEY": env_str("EMBEDADMIN_ENCRYPTION_KEY") or SECRET_KEY,
    # How long before its token expires an embed page asks its host for a new session (renewal in place);
    # at most half the token's lifetime.
    "EMBED_RENEW_LEAD_SECONDS": env_int("EMBED_RENEW_LEAD_SECONDS", 3600, minimum=0),
    # The most rows a CSV export of an embedded dashboard's tile holds.
    "EMBED_EXPORT_MAX_ROWS": env_int("EMBED_EXPORT_MAX_ROWS", 50_000, minimum=1),
    # How long audit log entries are kept; a daily task drops older ones (embedadmin/audit/tasks.py).
    "AUDIT_RETENTION_DAYS": env_int("AUDIT_RETENTION_DAYS", 365, minimum=1),
}

# Core Data API (the semantic layer). See docs/configuration.md.
CUBEJS_BASE_PATH = "/" + (env_str("CUBEJS_BASE_PATH", "/cubejs-api") or "/cubejs-api").strip("/")
SEMANTIC: SemanticSettings = {
    # A deployment a request is routed to when its path does not name one (no /d/{deploymentId} prefix).
    "DEFAULT_DEPLOYMENT_ID": env_int("DEFAULT_DEPLOYMENT_ID", 0, minimum=0),
    "QUERY_TIMEOUT_SECONDS": env_float("QUERY_TIMEOUT_SECONDS", 30.0),
    # How long /v1/load waits before answering {"error": "Continue wait"} (Cube's continueWaitTimeout).
    "CONTINUE_WAIT_SECONDS": env_float("CONTINUE_WAIT_SECONDS", 10.0),
    "QUERY_WORKERS": env_int("QUERY_WORKERS", 8, minimum=1),
    "DEFAULT_QUERY_LIMIT": env_int("DEFAULT_QUERY_LIMIT", 10_000, minimum=1),
    "MAX_QUERY_LIMIT": env_int("MAX_QUERY_LIMIT", 50_000, minimum=1),
    "JWKS_TTL_SECONDS": env_int("JWKS_TTL_SECONDS", 300, minimum=1),
    # A query job shared between processes carries a lease its owner renews every JOB_RENEW_SECONDS; a request
    # waiting on it takes the job over once JOB_LEASE_SECONDS pass without a renewal (the owner died).
    "JOB_LEASE_SECONDS": env_float("JOB_LEASE_SECONDS", 1.0),
    "JOB_RENEW_SECONDS": env_float("JOB_RENEW_SECONDS", 0.25),
}


class PreAggregationSettings(TypedDict):
    """The keys of ``PRE_AGGREGATIONS`` and their types."""

    DIR: Path
    ENABLED: bool
    LEASE_STALE_SECONDS: float
    HEARTBEAT_SECONDS: float
    BUILD_TIMEOUT_SECONDS: float
    FILE_GRACE_SECONDS: float
    REQUEUE_SECONDS: float
    MAX_SOURCE_ROW_LIMIT: int


# Rollup pre-aggregations (docs/pre-aggregations.md): one DuckDB file per built partition under DIR/<deployment>/.
PRE_AGGREGATIONS: PreAggregationSettings = {
    "DIR": Path(env_str("PRE_AGGREGATIONS_DIR", str(VAR_DIR / "pre_aggregations"))),
    # Whether queries a built rollup matches are answered from it (false: always from the data source).
    "ENABLED": env_bool("PRE_AGGREGATIONS_ENABLED", True),
    # A build renews its lease every HEARTBEAT_SECONDS; a lease not renewed for LEASE_STALE_SECONDS (its worker died)
    # is taken over by the next build of that partition.
    "LEASE_STALE_SECONDS": env_float("PRE_AGGREGATIONS_LEASE_STALE_SECONDS", 30.0),
    "HEARTBEAT_SECONDS": env_float("PRE_AGGREGATIONS_HEARTBEAT_SECONDS", 5.0),
    # The source query of one partition's build may run this long.
    "BUILD_TIMEOUT_SECONDS": env_float("PRE_AGGREGATIONS_BUILD_TIMEOUT_SECONDS", 3600.0),
    # A file no partition points to any more (replaced, or left by a dead build) is deleted after this long.
    "FILE_GRACE_SECONDS": env_float("PRE_AGGREGATIONS_FILE_GRACE_SECONDS", 600.0),
    # A partition queued for a build that did not start (its task lost) is queued again after this long.
    "REQUEUE_SECONDS": env_float("PRE_AGGREGATIONS_REQUEUE_SECONDS", 300.0),
    # The most rows a rollup_lambda's source part may give (Cube's CUBEJS_MAX_SOURCE_ROW_LIMIT); more is refused.
    "MAX_SOURCE_ROW_LIMIT": env_int("PRE_AGGREGATIONS_MAX_SOURCE_ROW_LIMIT", 200_000, minimum=1),
}


class LimitSettings(TypedDict):
    """The keys of ``LIMITS`` and their types: input limits and in-process memory budgets (docs/api-notes.md)."""

    MAX_FILTER_VALUES: int
    MAX_QUERY_MEMBERS: int
    MAX_JSON_DEPTH: int
    MAX_REQUEST_LINE_BYTES: int
    MAX_HEADER_BYTES: int
    COMPILED_QUERY_CACHE_BYTES: int
    ANSWER_MEMORY_BYTES: int
    META_JSON_CACHE_BYTES: int
    PROCESS_MEMORY_BYTES: int
    LOCAL_CACHE_BYTES: int
    MAX_MODELS: int
    MAX_COMPILE_KEYS: int


# Input limits (each refused with a JSON 4xx, listed in docs/api-notes.md) and the byte budget of each in-process
# cache (each least recently used entry is dropped first beyond its budget; docs/configuration.md).
LIMITS: LimitSettings = {
    # Filter values in one Core Data API request, all its queries and filters together (PostgreSQL binds at most
    # 65,535 parameters in a statement).
    "MAX_FILTER_VALUES": env_int("MAX_FILTER_VALUES", 10_000, minimum=1),
    # Members (measures, dimensions, segments, time dimensions, order and filter members) in one request.
    "MAX_QUERY_MEMBERS": env_int("MAX_QUERY_MEMBERS", 1_000, minimum=1),
    # Nesting of arrays and objects in a JSON body or a JSON query parameter.
    "MAX_JSON_DEPTH": env_int("MAX_JSON_DEPTH", 64, minimum=2),
    # The request target (path and query string), 414 beyond; below the 64 KiB httptools parses.
    "MAX_REQUEST_LINE_BYTES": env_int("MAX_REQUEST_LINE_BYTES", DEFAULT_MAX_TARGET_BYTES, minimum=1024),
    # All header names and values of a request together, 431 beyond.
    "MAX_HEADER_BYTES": env_int("MAX_HEADER_BYTES", DEFAULT_MAX_HEADER_BYTES, minimum=1024),
    # Compiled statements, one per query shape (values are rebound), across every model of the process.
    "COMPILED_QUERY_CACHE_BYTES": env_int("COMPILED_QUERY_CACHE_BYTES", 32 * 1024 * 1024, minimum=0),
    # /v1/load answers kept and given again byte for byte (ADR 0012).
    "ANSWER_MEMORY_BYTES": env_int("ANSWER_MEMORY_BYTES", 32 * 1024 * 1024, minimum=0),
    # Encoded /v1/meta bodies.
    "META_JSON_CACHE_BYTES": env_int("META_JSON_CACHE_BYTES", 16 * 1024 * 1024, minimum=0),
    # Each remembered-credentials table (API keys, deployments, catalogs, tenants, Core API callers); rough sizes.
    "PROCESS_MEMORY_BYTES": env_int("PROCESS_MEMORY_BYTES", 8 * 1024 * 1024, minimum=0),
    # The local-memory result cache used when no REDIS_URL is set (pickled sizes).
    "LOCAL_CACHE_BYTES": env_int("LOCAL_CACHE_BYTES", 64 * 1024 * 1024, minimum=0),
    # Compiled data models kept by a process (one per model directory and dialect), least recently used dropped.
    "MAX_MODELS": env_int("MAX_MODELS", 256, minimum=1),
    # Compiled models per model directory and dialect, one per compile key (a deployment's compileContextKeys: one
    # per tenant), least recently used dropped; each is compiled again when its tenant comes back.
    "MAX_COMPILE_KEYS": env_int("MAX_COMPILE_KEYS", 64, minimum=1),
}


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
