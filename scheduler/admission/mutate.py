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
        raise ReviewError(
            f"AdmissionReview: {field} must be {_KIND_NAMES.get(kind, kind.__name__)}"
        )
    return mapping[key]


_KIND_NAMES = {dict: "an object", str: "a string", list: "a list", bool: "a boolean"}

# The AdmissionRequest fields this webhook reads, with their types in admission.k8s.io/v1
# (k8s.io/api/admission/v1 types.go): a field of another type is no AdmissionReview that
# kube-apiserver sends, and its decoder would refuse it.
_OPTIONAL_REQUEST_FIELDS: tuple[tuple[str, type], ...] = (
    ("kind", dict),
    ("namespace", str),
    ("name", str),
    ("operation", str),
)
_GROUP_VERSION_KIND = ("group", "version", "kind")


def parse_review(body: bytes) -> dict:
    """The review's ``request``; raises ReviewError naming the field that is wrong.

    Any body at all either parses or raises ReviewError: not JSON, not UTF-8, nested deeper
    than the parser goes, an integer past Python's digit limit, or an envelope field of the
    wrong type."""
    try:
        review = json.loads(body)
    except RecursionError:
        raise ReviewError("AdmissionReview: body is not JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise ReviewError(f"AdmissionReview: body is not JSON: {exc}") from None
    if not isinstance(review, dict):
        raise ReviewError("AdmissionReview: body must be a JSON object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if api_version != ADMISSION_API_VERSION or kind != "AdmissionReview":
        raise ReviewError(
            f"AdmissionReview: apiVersion/kind must be {ADMISSION_API_VERSION}/AdmissionReview, "
            f"got {_short(api_version)}/{_short(kind)}"
        )
    request = _require(review, "request", "", dict)
    _require(request, "uid", "request", str)
    for key, kind_of in _OPTIONAL_REQUEST_FIELDS:
        if request.get(key) is not None:
            _require(request, key, "request", kind_of)
    gvk = request.get("kind") or {}
    for key in _GROUP_VERSION_KIND:
        if gvk.get(key) is not None:
            _require(gvk, key, "request.kind", str)
    if request.get("object") is not None:
        _require(request, "object", "request", dict)
    return request


def _short(value: object) -> str:
    """A value quoted in a message, cut so that a huge body does not come back whole."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


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
    """The AdmissionReview answer: always allowed, with a patch for opted-in pods of ours.

    A pod whose fields this webhook reads have the wrong type (kube-apiserver decodes a pod
    before calling webhooks, so only a hand-made review carries one) is let through untouched,
    with a warning naming the field, as any other failure of ours: the webhook never blocks
    a pod."""
    response: dict = {"uid": request["uid"], "allowed": True}
    pod = request.get("object")
    if (
        request.get("operation", "CREATE") == "CREATE"
        and _is_pod(request)
        and isinstance(pod, dict)
    ):
        problem = pod_problem(pod)
        if problem is not None:
            log.warning(
                "admitting pod without the gate: request.object.%s",
                problem,
                extra={"object": "pod", "uid": request["uid"]},
            )
            response["warnings"] = [f"{UNREAD_WARNING}: request.object.{problem}"]
            mutation = None
        else:
            mutation = _safe_mutation(request, pod, scheduler_names, namespace_opted_in)
        if mutation:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(mutation.patch).encode()).decode()
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


UNREAD_WARNING = "sluice: pod not gated"


def pod_problem(pod: dict) -> str | None:
    """The first field the mutation reads whose type is not the Pod schema's, as
    ``field must be ...``; None when every one of them reads."""
    checks: list[tuple[object, str, type]] = [
        (pod.get("metadata"), "metadata", dict),
        (pod.get("spec"), "spec", dict),
    ]
    for value, field, kind in checks:
        if value is not None and not isinstance(value, kind):
            return f"{field} must be {_KIND_NAMES[kind]}"
    meta = pod.get("metadata") or {}
    for key in ("name", "generateName", "namespace"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"metadata.{key} must be a string"
    if meta.get("annotations") is not None and not isinstance(meta["annotations"], dict):
        return "metadata.annotations must be an object"
    spec = pod.get("spec") or {}
    for key in ("schedulerName", "nodeName"):
        if spec.get(key) is not None and not isinstance(spec[key], str):
            return f"spec.{key} must be a string"
    gates = spec.get("schedulingGates")
    if gates is not None:
        if not isinstance(gates, list):
            return "spec.schedulingGates must be a list"
        for i, gate in enumerate(gates):
            if not isinstance(gate, dict) or not isinstance(gate.get("name"), str):
                return f"spec.schedulingGates[{i}].name must be a string"
    return None


def _is_pod(request: dict) -> bool:
    kind = request.get("kind") or {}
    return kind.get("kind", "Pod") == "Pod" and kind.get("group", "") in ("", None)


def _safe_mutation(
    request: dict,
    pod: dict,
    scheduler_names: frozenset[str],
    namespace_opted_in: Callable[[str], bool],
) -> Mutation | None:
    """Any failure of ours lets the pod through unpatched, and says why in the log."""
    meta = pod.get("metadata") or {}
    namespace = request.get("namespace") or meta.get("namespace") or ""
    name = meta.get("name") or meta.get("generateName") or ""
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
