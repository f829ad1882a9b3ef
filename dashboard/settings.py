"""Django settings. Everything comes from the environment, with safe local defaults."""

from __future__ import annotations

import importlib.util
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from dashboard.runtime import BASE_DIR, RUN_DIR, generated_secret


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"environment variable {name}={value!r}: expected true or false")


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"environment variable {name}={value!r}: expected a number"
        ) from None


DEBUG = env_bool("DEBUG", False)

# Where this process runs (README: Configuration). "production" (the Docker image sets it)
# requires SECRET_KEY; anywhere else — make run, manage.py from the activated virtualenv, tests —
# a missing SECRET_KEY is generated once into $SLUICE_RUN_DIR/secret_key (mode 0600) and reused,
# and `check --deploy` warns while that generated key is in use (sluice.W002).
SLUICE_ENV = os.environ.get("SLUICE_ENV", "development").strip().lower() or "development"
if SLUICE_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(
        f"environment variable SLUICE_ENV={SLUICE_ENV!r}: expected development or production"
    )
SECRET_KEY = os.environ.get("SECRET_KEY", "")
SLUICE_GENERATED_SECRET_KEY = not SECRET_KEY
if SLUICE_GENERATED_SECRET_KEY:
    if SLUICE_ENV == "production":
        raise ImproperlyConfigured(
            "SECRET_KEY must be set in production (SLUICE_ENV=production): the same 50 or more "
            "random characters for every replica"
        )
    SECRET_KEY = generated_secret("secret_key")

ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "axes",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (CSS, htmx, Plotly) from STATIC_ROOT, compressed and cached, before anything
    # touches the session or the database.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # SLUICE_REQUIRE_LOGIN closes the read pages (after HtmxMiddleware: it answers htmx too).
    "dashboard.middleware.RequireLoginMiddleware",
    # Login throttling (django-axes); last, as its documentation asks.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"
ASGI_APPLICATION = "dashboard.asgi.application"

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
                "dashboard.context_processors.navigation",
                "dashboard.context_processors.scheduler_failure",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=60,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "overview"
# Off (the default), every read page is open to anonymous users; on, each sends them to log in.
# /healthz and the admission webhook stay open either way (dashboard/middleware.py).
SLUICE_REQUIRE_LOGIN = env_bool("SLUICE_REQUIRE_LOGIN", False)

# -- Login throttling (django-axes) ------------------------------------------------------------
# SLUICE_LOGIN_FAILURE_LIMIT failed logins for one username from one client lock that pair out
# for SLUICE_LOGIN_COOLOFF_MINUTES (HTTP 429, the login page saying so); a success resets the
# count. The client is REMOTE_ADDR, or behind SLUICE_TRUSTED_PROXY_COUNT proxies that append to
# X-Forwarded-For, the address the outermost of them saw.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
_failure_limit = env_float("SLUICE_LOGIN_FAILURE_LIMIT", 5)
_cooloff_minutes = env_float("SLUICE_LOGIN_COOLOFF_MINUTES", 15)
if not (1 <= _failure_limit < 2**31 and 0 < _cooloff_minutes <= 525_600):  # NaN fails too
    raise ImproperlyConfigured(
        "SLUICE_LOGIN_FAILURE_LIMIT must be at least 1 and SLUICE_LOGIN_COOLOFF_MINUTES above 0 "
        "(at most a year)"
    )
AXES_FAILURE_LIMIT = int(_failure_limit)
AXES_COOLOFF_TIME = timedelta(minutes=_cooloff_minutes)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "dashboard.middleware.client_ip"
SLUICE_TRUSTED_PROXY_COUNT = int(env_float("SLUICE_TRUSTED_PROXY_COUNT", 0))

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Plotly's browser bundle is served from the installed plotly package (same version as the
# Python side that builds the figures), never from a CDN and never copied into the repository.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    (
        "vendor",
        Path(importlib.util.find_spec("plotly").submodule_search_locations[0]) / "package_data",
    ),
]
STATIC_ROOT = RUN_DIR / "static"
# `manage.py collectstatic` writes hashed, gzipped copies there and WhiteNoise serves them with
# far-future cache headers. Before collectstatic has run (tests, runserver) names are served
# unhashed, from the finders; `check --deploy` says when production has no collected files.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "dashboard.staticfiles.StaticFilesStorage"},
}

# -- Celery -------------------------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis restarted or unreachable for a while: the workers and beat keep trying to reconnect
# (every 2 s at first, then up to every 30 s: kombu's Connection.ensure_connection) instead of
# exiting after 100 attempts, Celery's default.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# kombu's Redis transport, made to survive a Redis restart while a worker holds unacknowledged
# messages (dashboard.celery.RedisChannel). Other schemes (rediss, sentinel) keep kombu's own.
if urlsplit(REDIS_URL).scheme == "redis":
    CELERY_BROKER_TRANSPORT = "dashboard.celery:RedisTransport"
# A task that must not be lost (a gate removal, a cycle's history) is acknowledged after it ran
# (acks_late, reject_on_worker_lost: dashboard/tasks/gates.py and history.py). A worker killed
# while running one leaves the message in Redis's unacked set; a worker restores it once it is
# older than the visibility timeout (kombu's Redis transport; its default is an hour), looking
# every SLUICE_BROKER_RESTORE_INTERVAL seconds. The timeout must exceed the longest such task
# (60 s, their time_limit) plus its retry countdown (10 s at most), or a task still running is
# delivered twice — harmless, both are idempotent, but wasted.
SLUICE_BROKER_VISIBILITY_TIMEOUT = env_float("SLUICE_BROKER_VISIBILITY_TIMEOUT", 300.0)
SLUICE_BROKER_RESTORE_INTERVAL = env_float("SLUICE_BROKER_RESTORE_INTERVAL", 10.0)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": SLUICE_BROKER_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": SLUICE_BROKER_RESTORE_INTERVAL,
    "unacked_restore_throttle": 1,  # scan at each interval, not one interval in ten
}
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "dashboard.tasks.run_cycle": {"queue": "scheduler"},
    "dashboard.tasks.remove_gate": {"queue": "gates"},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
SLUICE_CYCLE_PERIOD = env_float("SLUICE_CYCLE_PERIOD", 1.0)
# Writes to the cluster (Volcano's --kube-api-qps / --kube-api-burst, defaults 2000 / 2000) and
# how many of a cycle's binds and status writes are in flight at once.
SLUICE_KUBE_API_QPS = env_float("SLUICE_KUBE_API_QPS", 2000.0)
SLUICE_KUBE_API_BURST = int(env_float("SLUICE_KUBE_API_BURST", 2000))
SLUICE_BIND_WORKERS = int(env_float("SLUICE_BIND_WORKERS", 16))
# The binds leave from a process of their own (scheduler.kube.bind_process); off: from the
# scheduler's process, each asking the leader's fence the moment it leaves.
SLUICE_BIND_PROCESS = env_bool("SLUICE_BIND_PROCESS", True)
if not (SLUICE_KUBE_API_QPS > 0 and SLUICE_KUBE_API_BURST >= 1 and SLUICE_BIND_WORKERS >= 1):
    raise ImproperlyConfigured(
        "SLUICE_KUBE_API_QPS must be > 0, SLUICE_KUBE_API_BURST and SLUICE_BIND_WORKERS >= 1 "
        f"(got {SLUICE_KUBE_API_QPS}, {SLUICE_KUBE_API_BURST}, {SLUICE_BIND_WORKERS})"
    )
CELERY_BEAT_SCHEDULE = {
    "run-cycle": {
        "task": "dashboard.tasks.run_cycle",
        "schedule": SLUICE_CYCLE_PERIOD,
        # A cycle message older than one period is stale: drop it rather than pile up.
        "options": {"queue": "scheduler", "expires": SLUICE_CYCLE_PERIOD},
    },
    "heartbeat": {
        "task": "dashboard.tasks.heartbeat",
        "schedule": 10.0,
        "options": {"expires": 10.0},
    },
    "prune-history": {
        "task": "dashboard.tasks.prune_history",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
}
SLUICE_HISTORY_RETENTION_DAYS = env_float("SLUICE_HISTORY_RETENTION_DAYS", 7.0)

# -- Scheduler and cluster --------------------------------------------------------------------
SLUICE_KUBECONFIG = os.environ.get("SLUICE_KUBECONFIG", str(RUN_DIR / "kubeconfig"))
SLUICE_KUBE_TIMEOUT = env_float("SLUICE_KUBE_TIMEOUT", 5.0)
SLUICE_MODE = os.environ.get("SLUICE_MODE", "observe")
if SLUICE_MODE not in {"act", "observe"}:
    raise ImproperlyConfigured(f"SLUICE_MODE={SLUICE_MODE!r}: expected act or observe")
SLUICE_CYCLE_LOCK_TTL = env_float("SLUICE_CYCLE_LOCK_TTL", 60.0)
# Leader election on a coordination.k8s.io/v1 Lease (README: Leader election), Volcano's
# --leader-elect with its defaults. The Celery scheduler workers campaign for it when
# SLUICE_LEADER_ELECT is true: only the holder schedules (dashboard/tasks/scheduling.py); false
# falls back to the cycle lock above. manage.py schedule opts in with --leader-elect.
SLUICE_LEADER_ELECT = env_bool("SLUICE_LEADER_ELECT", True)
SLUICE_LEADER_ELECT_LEASE_DURATION = env_float("SLUICE_LEADER_ELECT_LEASE_DURATION", 15.0)
SLUICE_LEADER_ELECT_RENEW_DEADLINE = env_float("SLUICE_LEADER_ELECT_RENEW_DEADLINE", 10.0)
SLUICE_LEADER_ELECT_RETRY_PERIOD = env_float("SLUICE_LEADER_ELECT_RETRY_PERIOD", 2.0)
SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE = os.environ.get(
    "SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE", "kube-system"
)
SLUICE_LEADER_ELECT_RESOURCE_NAME = os.environ.get("SLUICE_LEADER_ELECT_RESOURCE_NAME", "")
# The scheduler configuration in Volcano's format (volcano-scheduler.conf): a file, or a
# ConfigMap "namespace/name" (key volcano-scheduler.conf); read again when it changes. Without
# either, Sluice's default configuration with the SLUICE_ADMISSION_* settings below.
SLUICE_SCHEDULER_CONF = os.environ.get("SLUICE_SCHEDULER_CONF", "")
SLUICE_SCHEDULER_CONFIGMAP = os.environ.get("SLUICE_SCHEDULER_CONFIGMAP", "")
if SLUICE_SCHEDULER_CONFIGMAP and SLUICE_SCHEDULER_CONFIGMAP.count("/") != 1:
    raise ImproperlyConfigured(
        f"SLUICE_SCHEDULER_CONFIGMAP={SLUICE_SCHEDULER_CONFIGMAP!r}: expected namespace/name"
    )
SLUICE_SCHEDULER_NAMES = [
    n.strip() for n in os.environ.get("SLUICE_SCHEDULER_NAMES", "volcano").split(",") if n.strip()
]

# -- Node-capacity admission check (Kueue KEP-3211) ---------------------------------------------------
# Off by default: a held workload's gated pods stay gated, so an autoscaler would never add the
# node it needs. The snapshot and the risk report run either way.
SLUICE_ADMISSION_CHECK = env_bool("SLUICE_ADMISSION_CHECK", False)
SLUICE_ADMISSION_REFRESH_S = env_float("SLUICE_ADMISSION_REFRESH_S", 60.0)
SLUICE_ADMISSION_RETRY_S = env_float("SLUICE_ADMISSION_RETRY_S", 60.0)
SLUICE_ADMISSION_REQUEST_INTERVAL_S = env_float("SLUICE_ADMISSION_REQUEST_INTERVAL_S", 10.0)
# A file describing the autoscaler's node groups ("fits after scale-up"); none on a real cluster
# unless the operator writes one. `make run` points it at the simulated cluster's.
SLUICE_ADMISSION_NODE_GROUPS = os.environ.get("SLUICE_ADMISSION_NODE_GROUPS", "")
CELERY_BEAT_SCHEDULE["refresh-capacity-snapshot"] = {
    "task": "dashboard.tasks.refresh_capacity_snapshot",
    "schedule": SLUICE_ADMISSION_REFRESH_S,
    "options": {"queue": "default", "expires": SLUICE_ADMISSION_REFRESH_S},
}

# -- Logging: one line per record, key=value pairs, always naming the object ------------------
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"logfmt": {"()": "dashboard.logging.LogfmtFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "logfmt"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {"level": "WARNING"},
        # A cycle a second means two tasks a second: their received/succeeded lines (and
        # beat's "sending due task") would drown everything else. Failures still show.
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
        "celery.beat": {"level": "WARNING"},
        "kubernetes": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
        "axes.apps": {"level": "WARNING"},  # its start-up banner, in every manage.py command
    },
}

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
    X_FRAME_OPTIONS = "DENY"

# -- Production behind TLS (README: Production). Off by default: plain HTTP keeps working. -----
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Kubernetes probes and Prometheus speak plain HTTP to the pod: never redirect them.
SECURE_REDIRECT_EXEMPT = [r"^healthz", r"^metrics$"]
SECURE_HSTS_SECONDS = int(env_float("SECURE_HSTS_SECONDS", 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
# "HTTP_X_FORWARDED_PROTO,https" (or "X-Forwarded-Proto,https"): the header a TLS ingress sets
# and the value meaning https. Set it only when that proxy always sets or strips the header.
_proxy_ssl_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    _header, _, _value = _proxy_ssl_header.partition(",")
    _header = _header.strip().upper().replace("-", "_")
    if not _value.strip() or not _header:
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={_proxy_ssl_header!r}: expected HEADER,VALUE such as "
            "HTTP_X_FORWARDED_PROTO,https"
        )
    if not _header.startswith("HTTP_"):
        _header = f"HTTP_{_header}"
    SECURE_PROXY_SSL_HEADER = (_header, _value.strip())
