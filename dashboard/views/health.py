from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dashboard.health import health_report


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report, healthy = health_report()
    return JsonResponse(report, status=200 if healthy else 503)
