"""The mutating admission webhook endpoint (``POST /webhooks/mutate-pods``).

What a caller gets, per Kubernetes' webhook contract (an answer is an AdmissionReview whose
``response.uid`` is the request's ``uid``; anything else is a failed call, which the
webhook configuration's ``failurePolicy`` decides):

* a well-formed AdmissionReview: 200 and an AdmissionReview, always ``allowed`` — a pod whose
  fields do not read is let through untouched with a warning naming the field;
* anything that is no AdmissionReview (not JSON, not an object, the wrong apiVersion or kind,
  no ``request.uid``, an envelope field of the wrong type): 400 and a ``Status`` naming the
  field, since there is no uid to answer to;
* a body over 3 MiB (the most kube-apiserver accepts in a request, and the cap of Volcano's
  own webhook server, pkg/webhooks/router/server.go): 413; a Content-Type other than JSON
  (kube-apiserver always sends application/json): 415.

None of these is ever Django's error page, which DEBUG would fill with the settings.
"""

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

# kube-apiserver's default MaxRequestBodyBytes; Volcano's webhook server caps its body alike.
MAX_REVIEW_BYTES = 3 * 1024 * 1024


def namespace_opted_in(name: str) -> bool:
    return kube.namespace_labels(name).get(QUEUE_ALLOCATION_GATE) == "true"


def _failure(code: int, message: str) -> JsonResponse:
    log.warning("rejecting admission review: %s", message, extra={"object": "webhook"})
    reason = {400: "BadRequest", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType"}
    return JsonResponse(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason[code],
            "code": code,
        },
        status=code,
    )


def _body(request: HttpRequest) -> bytes | None:
    """The body, read past Django's DATA_UPLOAD_MAX_MEMORY_SIZE (whose RequestDataTooBig
    would be answered with the debug page under DEBUG) but never past MAX_REVIEW_BYTES;
    None when it is longer."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > MAX_REVIEW_BYTES:
        return None
    body = request.read(MAX_REVIEW_BYTES + 1)
    return None if len(body) > MAX_REVIEW_BYTES else body


@csrf_exempt
@require_POST
def mutate_pods(request: HttpRequest) -> JsonResponse:
    if request.content_type != "application/json":
        return _failure(
            415,
            f"AdmissionReview: Content-Type must be application/json, got {request.content_type!r}"[
                :200
            ],
        )
    body = _body(request)
    if body is None:
        return _failure(413, f"AdmissionReview: body is larger than {MAX_REVIEW_BYTES} bytes")
    try:
        review_request = parse_review(body)
    except ReviewError as exc:
        return _failure(400, str(exc))
    answer = review_response(
        review_request,
        scheduler_names=frozenset(settings.SLUICE_SCHEDULER_NAMES),
        namespace_opted_in=namespace_opted_in,
    )
    return JsonResponse(answer)
