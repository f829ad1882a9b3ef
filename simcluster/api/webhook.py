"""Mutating admission: call a webhook with an AdmissionReview v1, as kube-apiserver does."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass

import jsonpatch

from simcluster.api.errors import ApiError

WEBHOOK_NAME = "sluice-mutating-webhook"
USER_INFO = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass(frozen=True)
class Webhook:
    url: str
    failure_policy: str = "Fail"  # or "Ignore"
    timeout_seconds: float = 10.0
    name: str = WEBHOOK_NAME


def admission_review(resource: dict, kind: dict, namespace: str, obj: dict) -> dict:
    """The AdmissionReview request for a CREATE of ``obj``."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": obj.get("metadata", {}).get("name", ""),
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": USER_INFO,
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }


def mutate_pod(webhook: Webhook | None, namespace: str, pod: dict) -> dict:
    """The pod after the webhook's JSONPatch; the webhook's denial becomes an ``ApiError``."""
    if webhook is None:
        return pod
    review = admission_review(
        {"group": "", "version": "v1", "resource": "pods"},
        {"group": "", "version": "v1", "kind": "Pod"},
        namespace,
        pod,
    )
    try:
        response = _call(webhook, review)
    except ApiError:
        if webhook.failure_policy == "Ignore":
            return pod
        raise
    return _apply_response(webhook, pod, response)


def _call(webhook: Webhook, review: dict) -> dict:
    request = urllib.request.Request(
        webhook.url,
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=webhook.timeout_seconds) as reply:
            body = json.loads(reply.read())
    except (OSError, ValueError) as error:  # URLError, timeouts and bad JSON
        raise _call_failed(webhook, f"failed to call webhook: {error}") from None
    response = body.get("response") if isinstance(body, dict) else None
    if not isinstance(response, dict):
        raise _call_failed(webhook, "webhook response was absent")
    if response.get("uid") != review["request"]["uid"]:
        raise _call_failed(webhook, "expected response.uid to match the request.uid")
    return response


def _call_failed(webhook: Webhook, detail: str) -> ApiError:
    return ApiError(
        500, f'Internal error occurred: failed calling webhook "{webhook.name}": {detail}'
    )


def _apply_response(webhook: Webhook, pod: dict, response: dict) -> dict:
    if not response.get("allowed"):
        raise _denied(webhook, response.get("status") or {})
    if not response.get("patch"):
        return pod
    if response.get("patchType") != "JSONPatch":
        raise _call_failed(webhook, f"unsupported patch type {response.get('patchType')!r}")
    try:
        operations = json.loads(base64.b64decode(response["patch"]))
        return jsonpatch.JsonPatch(operations).apply(pod)
    except (ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
        raise _call_failed(
            webhook, f"the webhook's JSONPatch could not be applied: {error}"
        ) from None


def _denied(webhook: Webhook, status: dict) -> ApiError:
    denied_by = f'admission webhook "{webhook.name}" denied the request'
    detail = status.get("message") or status.get("reason")
    message = f"{denied_by}: {detail}" if detail else f"{denied_by} without explanation"
    code = max(int(status.get("code") or 400), 400)
    return ApiError(code, message, reason=status.get("reason") or "")
