"""The mutating admission webhook endpoint (``POST /webhooks/mutate-pods``)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from dashboard import kube
from scheduler.admission.mutate import (
    QUEUE_ALLOCATION_GATE,
    ReviewError,
    parse_review,
    review_response,
)

log = logging.getLogger(__name__)


def namespace_opted_in(name: str) -> bool:
    return kube.namespace_labels(name).get(QUEUE_ALLOCATION_GATE) == "true"


@csrf_exempt
@require_POST
def mutate_pods(request: HttpRequest) -> JsonResponse:
    try:
        review_request = parse_review(request.body)
    except ReviewError as exc:
        log.warning("rejecting malformed admission review: %s", exc, extra={"object": "webhook"})
        return JsonResponse(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": str(exc),
                "code": 400,
            },
            status=400,
        )
    answer = review_response(
        review_request,
        scheduler_names=frozenset(settings.SLUICE_SCHEDULER_NAMES),
        namespace_opted_in=namespace_opted_in,
    )
    return JsonResponse(answer)
