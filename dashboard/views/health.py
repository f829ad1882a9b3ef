"""Health endpoints for probes and alerts (``dashboard.health``); none waits on anything slow."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dashboard.health import readiness, scheduler_health


def _answer(report: dict, ok: bool) -> JsonResponse:
    response = JsonResponse(report, status=200 if ok else 503)
    # A 503 here is the answer a probe asked for, not a failure of this server: keep it out of
    # django.request's error log (django.utils.log.log_response skips a response so marked),
    # which a probe every few seconds would fill.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: 200 while the web process serves requests. It reads nothing (no database, no
    broker, no cluster): what it proves is that this process answers, and fast."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def healthz_ready(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when the database and the broker answer, else 503 saying which."""
    return _answer(*readiness())


@never_cache
@require_GET
def healthz_scheduler(request: HttpRequest) -> JsonResponse:
    """For alerts: 200 while the scheduler leader beats and its cycles succeed; 503 with
    ``reason``, ``since`` and ``message`` otherwise."""
    return _answer(*scheduler_health())
