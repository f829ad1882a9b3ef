"""The mutating admission webhook's decision: add the queue-allocation gate to opted-in pods.

Volcano's gate-controlled scheduling design: a pod of ours (``spec.schedulerName`` is one of the scheduler's names) that carries
the annotation ``scheduling.volcano.sh/queue-allocation-gate: "true"`` — or is created in a
namespace labelled so — gets the gate of the same name in ``spec.schedulingGates`` at
creation. The patch is ``add /spec/schedulingGates`` when the field is absent and ``replace``
(keeping the existing gates) when present. The webhook never adds the gate twice, never
touches other schedulers' pods and never blocks a pod because of its own failure.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.api.helpers import InputError, has_queue_allocation_gate_annotation
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.quantity import QuantityError
from scheduler.api.requests import pod_requests
from scheduler.api.resource import Resource

log = logging.getLogger(__name__)

ADMISSION_API_VERSION = "admission.k8s.io/v1"
# kube-apiserver defaults an empty schedulerName to this one.
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class ReviewError(ValueError):
    """A request that is not a well-formed AdmissionReview (answered with HTTP 400)."""


@dataclass(frozen=True)
class Mutation:
    patch: list[dict]
    reason: str


def _escape(key: str) -> str:
    """JSON-pointer escaping of one path segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _require(mapping: object, key: str, path: str, kind: type) -> Any:
    if not isinstance(mapping, dict) or not isinstance(mapping.get(key), kind):
        field = f"{path}.{key}" if path else key
        raise ReviewError(f"AdmissionReview: {field} must be {kind.__name__}")
    return mapping[key]


def parse_review(body: bytes) -> dict:
    """The review's ``request``; raises ReviewError naming the field that is wrong."""
    try:
        review = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReviewError(f"AdmissionReview: body is not JSON: {exc}") from None
    if not isinstance(review, dict):
        raise ReviewError("AdmissionReview: body must be a JSON object")
    if review.get("apiVersion") != ADMISSION_API_VERSION or review.get("kind") != "AdmissionReview":
        raise ReviewError(
            f"AdmissionReview: apiVersion/kind must be {ADMISSION_API_VERSION}/AdmissionReview, "
            f"got {review.get('apiVersion')!r}/{review.get('kind')!r}"
        )
    request = _require(review, "request", "", dict)
    _require(request, "uid", "request", str)
    return request


def pod_mutation(
    pod: dict, *, scheduler_names: frozenset[str], namespace_opted_in: bool
) -> Mutation | None:
    """The JSON patch that gates ``pod``, or None when the pod is not to be touched."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) not in scheduler_names:
        return None
    annotated = has_queue_allocation_gate_annotation(pod)
    if not (annotated or namespace_opted_in):
        return None
    if spec.get("nodeName"):
        # Kubernetes rejects a pod with both nodeName and gates; a pre-bound pod skips us.
        return None
    if _best_effort(pod):
        # A best-effort pod asks its queue for nothing: there is no room to wait for, and
        # gating it would only hold it back (the backfill action places it at once).
        return None
    patch: list[dict] = []
    if not annotated:
        patch.append(_annotation_op(annotations))
    gates = list(spec.get("schedulingGates") or [])
    if not any(gate.get("name") == QUEUE_ALLOCATION_GATE for gate in gates):
        patch.append(
            {
                "op": "replace" if gates else "add",
                "path": "/spec/schedulingGates",
                "value": [*gates, {"name": QUEUE_ALLOCATION_GATE}],
            }
        )
    if not patch:
        return None
    reason = "pod annotation" if annotated else "namespace label"
    return Mutation(patch=patch, reason=reason)


def _best_effort(pod: dict) -> bool:
    try:
        return Resource(pod_requests(pod, "pod")).is_empty()
    except (InputError, QuantityError, TypeError, ValueError):
        return False  # a request we cannot read: gate it, the scheduler reports the field


def _annotation_op(annotations: dict) -> dict:
    if annotations:
        return {
            "op": "add",
            "path": f"/metadata/annotations/{_escape(QUEUE_ALLOCATION_GATE)}",
            "value": "true",
        }
    return {"op": "add", "path": "/metadata/annotations", "value": {QUEUE_ALLOCATION_GATE: "true"}}


def review_response(
    request: dict,
    *,
    scheduler_names: frozenset[str],
    namespace_opted_in: Callable[[str], bool],
) -> dict:
    """The AdmissionReview answer: always allowed, with a patch for opted-in pods of ours."""
    response: dict = {"uid": request["uid"], "allowed": True}
    pod = request.get("object")
    if (
        request.get("operation", "CREATE") == "CREATE"
        and _is_pod(request)
        and isinstance(pod, dict)
    ):
        mutation = _safe_mutation(request, pod, scheduler_names, namespace_opted_in)
        if mutation:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(mutation.patch).encode()).decode()
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def _is_pod(request: dict) -> bool:
    kind = request.get("kind") or {}
    return kind.get("kind", "Pod") == "Pod" and kind.get("group", "") == ""


def _safe_mutation(
    request: dict,
    pod: dict,
    scheduler_names: frozenset[str],
    namespace_opted_in: Callable[[str], bool],
) -> Mutation | None:
    """Any failure of ours lets the pod through unpatched, and says why in the log."""
    namespace = request.get("namespace") or (pod.get("metadata") or {}).get("namespace") or ""
    name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get(
        "generateName", ""
    )
    obj = f"pod {namespace}/{name}"
    try:
        labelled = _namespace_label_applies(pod, namespace, scheduler_names, namespace_opted_in)
        mutation = pod_mutation(pod, scheduler_names=scheduler_names, namespace_opted_in=labelled)
    except Exception as exc:  # the webhook must never block pod creation
        log.warning(
            "admitting pod without the gate: %s", exc, extra={"object": obj, "uid": request["uid"]}
        )
        return None
    if mutation:
        log.info("gating pod", extra={"object": obj, "opt_in": mutation.reason})
    return mutation


def _namespace_label_applies(
    pod: dict,
    namespace: str,
    scheduler_names: frozenset[str],
    namespace_opted_in: Callable[[str], bool],
) -> bool:
    """Ask about the namespace only for pods of ours without the annotation (saves a lookup)."""
    spec = pod.get("spec") or {}
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) not in scheduler_names:
        return False
    if has_queue_allocation_gate_annotation(pod):
        return False
    return bool(namespace) and namespace_opted_in(namespace)
