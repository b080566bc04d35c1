"""Django settings for TeamClaw, read from the environment (see README "Configuration").

Every variable has a safe default for the embedded single-process run; a bad value stops
start-up with ImproperlyConfigured naming the variable (teamclaw.env).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from teamclaw.env import (
    data_dir,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_model_endpoints,
    env_slug_list,
    env_str,
    env_time_zone,
    env_url,
    persistent_secret,
    redis_channel_layer,
)
from teamclaw.runtime.memory import DEFAULT_MEMORY_TOKENS, MAX_MEMORY_TOKENS, MIN_MEMORY_TOKENS

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = data_dir(BASE_DIR)

SECRET_KEY = env_str("SECRET_KEY") or persistent_secret(DATA_DIR / "secret_key")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "adrf",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "django_htmx",
    "template_partials",
    "axes",
    "capabilities",
    "knowledge",
    "prompts",
    "team",
    "monitoring",
    "runs",
    "interop",
    "web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "teamclaw.middleware.content_security_policy_middleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page's language: the django_language cookie (the switcher), else Accept-Language,
    # else LANGUAGE_CODE; then the operator's time zone from the browser's cookie.
    "django.middleware.locale.LocaleMiddleware",
    "teamclaw.time_zones.OperatorTimeZoneMiddleware",
    "teamclaw.middleware.nul_free_urls_middleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # a signed-in operator's saved language where this browser has no language cookie
    "web.language.SavedLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "web.htmx.VaryOnHtmxMiddleware",
    "teamclaw.middleware.LoginRequiredForPagesMiddleware",
    "axes.middleware.AxesMiddleware",
    "web.errors.DomainErrorPagesMiddleware",
    "web.forms.PageRefusalAuditMiddleware",
]

# Repeated failed logins (login page, admin, API token) lock that username from that address
# for a while (django-axes); the address is the socket's, never a client-supplied header.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("TEAMCLAW_LOGIN_FAILURE_LIMIT", 10, minimum=1, maximum=1000)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("TEAMCLAW_LOGIN_COOLOFF_MIN", 15, minimum=1, maximum=24 * 60))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]
AXES_LOCKOUT_CALLABLE = "teamclaw.lockout.lockout_response"

ROOT_URLCONF = "teamclaw.urls"
ASGI_APPLICATION = "teamclaw.asgi.application"
WSGI_APPLICATION = None

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
                "django.template.context_processors.i18n",
                "django.template.context_processors.tz",
            ],
        },
    },
]

# --- Database: DATABASE_URL, else a SQLite file in the data folder (WAL, busy timeout). ---
_database_url = env_url("DATABASE_URL", {"sqlite", "postgres", "postgresql", "pgsql"})
if _database_url:
    try:
        DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL cannot be used: {exc}") from exc
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Under ASGI each request's synchronous code runs on a thread of its own; a persistent
        # connection per thread ran PostgreSQL out of connections at 64 concurrent invokes
        # (HTTP 500 "too many clients"). A pool per process instead: threads borrow a
        # connection and give it back at the end of the request (Django's docs for ASGI).
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": env_int("TEAMCLAW_DB_POOL_SIZE", 20, minimum=2, maximum=500),
            "timeout": 30,
        }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(DATA_DIR / "teamclaw.sqlite3"),
        }
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # No persistent connections on SQLite either (a DATABASE_URL gave 60 s): each request's
    # synchronous code runs on a thread of its own, which ended with its connection still
    # open, closed only when the garbage collector found it; and SQLite keeps the
    # descriptors of closed connections open while another connection of the process holds
    # a lock (docs/architecture.md §3 "SQLite file handles", issue 17).
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            # WAL lets readers work while the recorder writes; IMMEDIATE takes the write
            # lock at BEGIN so two writers queue on the busy timeout instead of failing.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# --- Languages (README "Language and time zone", docs/architecture.md "Translations"). ---
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LANGUAGE_CODE = env_choice("TEAMCLAW_LANGUAGE_CODE", {code for code, _ in LANGUAGES}, "en")
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["teamclaw.formats"]  # MONTH_DAY_TIME_FORMAT per language
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
# Shown times use the browser's zone (cookie set by static/teamclaw/timezone.js) or this one.
TIME_ZONE = env_time_zone("TEAMCLAW_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Uploads: requirement documents and config files are text; 5 MB is the hard ceiling.
DATA_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024

# --- Channels: Redis when REDIS_URL is set, else the in-process layer. ---
REDIS_URL = env_url("REDIS_URL", {"redis", "rediss", "unix"})
if REDIS_URL:
    CHANNEL_LAYERS = {"default": redis_channel_layer(REDIS_URL)}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "teamclaw.api_parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "teamclaw.api_query.StrictPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "teamclaw.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Throttles key on the socket address: X-Forwarded-For is not trusted (no proxy in front).
    "NUM_PROXIES": 0,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "TeamClaw Capability System API",
    "DESCRIPTION": "Roles, capability cards, invoke/hook, permissions, prompts, contexts and skills.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI is served from the installed sidecar package, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The error shape and the 4xx answers of every operation, once (teamclaw.api_docs).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "teamclaw.api_docs.document_error_responses",
    ],
}

# --- TeamClaw runtime defaults (PRD §4.7 constraint table; docs/architecture.md §3, §6). ---
TEAMCLAW: dict[str, Any] = {
    "MAILBOX_CAPACITY": env_int("TEAMCLAW_MAILBOX_CAPACITY", 1000, minimum=1, maximum=1_000_000),
    "HEARTBEAT_INTERVAL_S": env_int("TEAMCLAW_HEARTBEAT_INTERVAL_S", 30, minimum=1, maximum=3600),
    "HEARTBEAT_TIMEOUT_S": env_int("TEAMCLAW_HEARTBEAT_TIMEOUT_S", 90, minimum=2, maximum=86400),
    "TASK_TIMEOUT_S": env_int("TEAMCLAW_TASK_TIMEOUT_S", 3600, minimum=1, maximum=7 * 86400),
    "CONFIRMATION_TIMEOUT_S": env_int("TEAMCLAW_CONFIRMATION_TIMEOUT_S", 600, minimum=1, maximum=86400),
    "MAX_DOCUMENT_BYTES": env_int("TEAMCLAW_MAX_DOCUMENT_BYTES", 1_000_000, minimum=1, maximum=5_000_000),
    # The Run demo button paces the offline agents by this think time per call (ms), so the
    # live page shows the team at work; 0 runs it at full speed. API and terminal runs: 0.
    "DEMO_THINK_MS": env_int("TEAMCLAW_DEMO_THINK_MS", 800, minimum=0, maximum=5000),
    # What a model-backed agent's memory replays of its conversation (seed 003 MemoryContext,
    # README "Memory"): estimated tokens of the most recent turns.
    # A role's memory_tokens constraint overrides it for that role (PRD §4.7), same bounds.
    "MEMORY_TOKENS": env_int(
        "TEAMCLAW_MEMORY_TOKENS", DEFAULT_MEMORY_TOKENS, minimum=MIN_MEMORY_TOKENS, maximum=MAX_MEMORY_TOKENS
    ),
    # Knowledge search (README "Knowledge", issue 15): `auto` ranks hybrid (full text fused with
    # embedding vectors) when the `embeddings` extra is installed; `off` keeps full text alone.
    "KNOWLEDGE_EMBEDDINGS": env_choice("TEAMCLAW_KNOWLEDGE_EMBEDDINGS", {"auto", "off"}, "auto"),
    "MAX_CONFIG_BYTES": env_int("TEAMCLAW_MAX_CONFIG_BYTES", 2_000_000, minimum=1_000, maximum=5_000_000),
    "PROJECTS_ROOT": Path(env_str("TEAMCLAW_PROJECTS_ROOT") or DATA_DIR / "projects"),
    "SNAPSHOT_RETENTION_COUNT": env_int("TEAMCLAW_SNAPSHOT_RETENTION_COUNT", 500, minimum=1),
    "SNAPSHOT_RETENTION_DAYS": env_int("TEAMCLAW_SNAPSHOT_RETENTION_DAYS", 30, minimum=1),
    "HTTP_EXECUTOR_ALLOWED_HOSTS": env_list("TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS", []),
    # MCP tool sources (README "MCP tool sources"): the only commands a stdio source may start
    # (console-script names resolved next to this Python, or absolute paths); HTTP sources use
    # HTTP_EXECUTOR_ALLOWED_HOSTS. MCP_TIMEOUT_S bounds a discovery (s).
    "MCP_STDIO_ALLOWLIST": env_list("TEAMCLAW_MCP_STDIO_ALLOWLIST", ["mcp-server-time"]),
    "MCP_TIMEOUT_S": env_int("TEAMCLAW_MCP_TIMEOUT_S", 30, minimum=1, maximum=600),
    "OPENAI_BASE_URL": env_url(
        "OPENAI_BASE_URL", {"http", "https"}, credentials=False, hint="put the key in OPENAI_API_KEY"
    ),
    "OPENAI_API_KEY": env_str("OPENAI_API_KEY"),
    "MODEL": env_str("TEAMCLAW_MODEL") or "gpt-4o-mini",
    # Model executor (README "Real models"): the default brain is `openai` once OPENAI_BASE_URL is set.
    "EXECUTOR": env_choice(
        "TEAMCLAW_EXECUTOR",
        {"offline", "openai"},
        "openai" if env_str("OPENAI_BASE_URL") else "offline",
    ),
    "MODEL_ENDPOINTS": env_model_endpoints(),
    "MODEL_MAX_ROUNDS": env_int("TEAMCLAW_MODEL_MAX_ROUNDS", 8, minimum=1, maximum=50),
    "MODEL_STREAM": env_bool("TEAMCLAW_MODEL_STREAM", True),
    "MODEL_FUNCTIONS": env_bool("TEAMCLAW_MODEL_FUNCTIONS", True),
    # The default endpoint's answers are asked for through response_format (README "Real models").
    "MODEL_STRUCTURED_OUTPUT": env_bool("TEAMCLAW_MODEL_STRUCTURED_OUTPUT", True),
    "MODEL_MAX_RETRIES": env_int("TEAMCLAW_MODEL_MAX_RETRIES", 3, minimum=0, maximum=10),
    "MODEL_REQUEST_TIMEOUT_S": env_int("TEAMCLAW_MODEL_REQUEST_TIMEOUT_S", 120, minimum=1, maximum=3600),
    "MODEL_MAX_OUTPUT_TOKENS": env_int("TEAMCLAW_MODEL_MAX_OUTPUT_TOKENS", 4096, minimum=16, maximum=1_000_000),
    "MODEL_TOKEN_LIMIT_FIELD": env_choice(
        "TEAMCLAW_MODEL_TOKEN_LIMIT_FIELD", {"max_tokens", "max_completion_tokens"}, "max_tokens"
    ),
    # `make run` sets it: the embedded runtime starts with the server (teamclaw.asgi), so tasks
    # left by a crash resume without waiting for a first request.
    "RUNTIME_AUTOSTART": env_bool("TEAMCLAW_RUNTIME_AUTOSTART", False),
    # Runtime workers (docs/architecture.md §3, README "Scaling out"): `embedded` runs agents in
    # the server process too; `remote` leaves them to `manage.py runtime_worker` processes.
    "RUNTIME": env_choice("TEAMCLAW_RUNTIME", {"embedded", "remote"}, "embedded"),
    "WORKER_CONCURRENCY": env_int("TEAMCLAW_WORKER_CONCURRENCY", 16, minimum=1, maximum=1000),
    # Where the recorder writes (docs/architecture.md §3, README "Scaling out"): `thread` in the
    # runtime's process, `process` in a child process; `auto` is process for runtime_worker only.
    "RECORDER": env_choice("TEAMCLAW_RECORDER", {"auto", "thread", "process"}, "auto"),
    "LEASE_S": env_int("TEAMCLAW_LEASE_S", 10, minimum=2, maximum=3600),
    "WORKER_HEARTBEAT_S": env_int("TEAMCLAW_WORKER_HEARTBEAT_S", 3, minimum=1, maximum=600),
    "WORKER_POLL_MS": env_int("TEAMCLAW_WORKER_POLL_MS", 250, minimum=10, maximum=250),
    # Where a role's max_concurrent_instances counts (PRD §4.7; teamclaw.runtime.scopes, README
    # "Scaling out"): per task by default; the tasks of these project slugs (`*`: every
    # project) share their instances per project, across runtime workers.
    "INSTANCE_LIMIT_PER_PROJECT": env_slug_list("TEAMCLAW_INSTANCE_LIMIT_PER_PROJECT", []),
    "ALERT_INTERVAL_S": env_int("TEAMCLAW_ALERT_INTERVAL_S", 15, minimum=0, maximum=3600),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "INFO"},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        # HTTP clients log every request URL at INFO; a URL may carry credentials (user info,
        # a key in the query), so only their warnings are kept (keys never reach the logs).
        "httpx2": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
    },
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# The Content-Security-Policy header comes from teamclaw.middleware (SecurityMiddleware sets none).

# --- Behind TLS (README "Configuration"): TEAMCLAW_SECURE=1 when browsers reach TeamClaw over
# https through a proxy that sets X-Forwarded-Proto (and overwrites what a client sends).
# `manage.py check --deploy` then reports none of the TLS warnings. ---
if env_bool("TEAMCLAW_SECURE", False):
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("TEAMCLAW_HSTS_SECONDS", 31_536_000, minimum=1, maximum=2 * 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("TEAMCLAW_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("TEAMCLAW_HSTS_PRELOAD", False)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
