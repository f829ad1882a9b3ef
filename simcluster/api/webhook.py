"""Mutating admission: call a webhook with an AdmissionReview v1, as kube-apiserver does.

Over HTTPS the server certificate must chain to the configuration's ``caBundle`` (PEM; the
system's roots when it is empty) and name the host of the URL — for a ``clientConfig.service``,
``<name>.<namespace>.svc`` (k8s.io/apiserver pkg/util/webhook: ``ClientManager.HookClient``).
``dial`` stands in for the cluster's DNS: the address connected to, while the name verified
stays the URL's host.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import jsonpatch

from simcluster.api.errors import ApiError

if TYPE_CHECKING:
    from simcluster.faults import Faults

WEBHOOK_NAME = "sluice-mutating-webhook"
USER_INFO = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass(frozen=True)
class Webhook:
    url: str
    failure_policy: str = "Fail"  # or "Ignore"
    timeout_seconds: float = 10.0
    name: str = WEBHOOK_NAME
    ca_bundle: bytes = b""  # PEM certificates trusted for an https URL; empty: the system's
    dial: tuple[str, int] | None = None  # connect here instead of the URL's host and port
    # A clientConfig.service's name: without ``dial`` the call fails as kube-apiserver's does
    # for a Service with no endpoints (the simulated cluster has no DNS for ``*.svc``).
    service: str = ""
    # Seeded faults (simcluster.faults): a call may time out without reaching the webhook.
    faults: Faults | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_configuration(cls, webhook: dict, *, dial: tuple[str, int] | None = None) -> Webhook:
        """One entry of a MutatingWebhookConfiguration's ``webhooks``, as kube-apiserver reads
        it: ``clientConfig.url``, or ``service`` as ``https://<name>.<namespace>.svc:<port><path>``
        (port 443 by default), its ``caBundle`` (base64 of PEM), failurePolicy (default Fail)
        and timeoutSeconds (default 10)."""
        client_config = webhook.get("clientConfig") or {}
        url, service_name = client_config.get("url"), ""
        if not url:
            service = client_config["service"]
            service_name = service["name"]
            url = (
                f"https://{service_host(service)}:"
                f"{service.get('port', 443)}{service.get('path', '')}"
            )
        return cls(
            url=url,
            failure_policy=webhook.get("failurePolicy", "Fail"),
            timeout_seconds=float(webhook.get("timeoutSeconds", 10)),
            name=webhook["name"],
            ca_bundle=base64.b64decode(client_config.get("caBundle") or ""),
            dial=dial,
            service=service_name,
        )


def service_host(service: dict) -> str:
    """The name a ``clientConfig.service`` is called by, and its certificate must carry."""
    return f"{service['name']}.{service['namespace']}.svc"


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
        if webhook.faults is not None and webhook.faults.webhook_times_out(
            namespace, str((pod.get("metadata") or {}).get("name") or "")
        ):
            # What kube-apiserver answers when the call outlives timeoutSeconds
            # (k8s.io/apiserver pkg/admission/plugin/webhook/mutating dispatcher.go: the
            # request's context deadline), then judged by failurePolicy like any failed call.
            raise _call_failed(
                webhook, f'failed to call webhook: Post "{webhook.url}": context deadline exceeded'
            )
        response = _call(webhook, review)
    except ApiError:
        if webhook.failure_policy == "Ignore":
            return pod
        raise
    return _apply_response(webhook, pod, response)


def _call(webhook: Webhook, review: dict) -> dict:
    if webhook.service and webhook.dial is None:
        # k8s.io/apiserver pkg/util/proxy ResolveEndpoint's error for a Service without one
        raise _call_failed(
            webhook,
            f'failed to call webhook: Post "{webhook.url}": '
            f'no endpoints available for service "{webhook.service}"',
        )
    try:
        body = json.loads(_post(webhook, json.dumps(review).encode()))
    except (OSError, ValueError, http.client.HTTPException) as error:
        # refused connections, timeouts, a certificate the caBundle does not trust, bad JSON
        raise _call_failed(webhook, f"failed to call webhook: {error}") from None
    response = body.get("response") if isinstance(body, dict) else None
    if not isinstance(response, dict):
        raise _call_failed(webhook, "webhook response was absent")
    if response.get("uid") != review["request"]["uid"]:
        raise _call_failed(webhook, "expected response.uid to match the request.uid")
    return response


def _post(webhook: Webhook, data: bytes) -> bytes:
    url = urlsplit(webhook.url)
    host = url.hostname or ""
    connection: http.client.HTTPConnection
    if url.scheme == "https":
        context = ssl.create_default_context(cadata=webhook.ca_bundle.decode() or None)
        connection = _HTTPSConnection(
            host, url.port or 443, timeout=webhook.timeout_seconds, context=context
        )
    elif url.scheme == "http":
        connection = _HTTPConnection(host, url.port or 80, timeout=webhook.timeout_seconds)
    else:
        raise ValueError(f"unsupported URL scheme {url.scheme!r}")
    connection.dial = webhook.dial
    path = url.path + (f"?{url.query}" if url.query else "")
    try:
        connection.request(
            "POST",
            path or "/",
            body=data,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        reply = connection.getresponse()
        body = reply.read()
        if reply.status != 200:
            raise ValueError(f"HTTP {reply.status}: {body[:200]!r}")
        return body
    finally:
        connection.close()


class _HTTPConnection(http.client.HTTPConnection):
    dial: tuple[str, int] | None = None

    def connect(self) -> None:
        self.sock = socket.create_connection(self.dial or (self.host, self.port), self.timeout)


class _HTTPSConnection(http.client.HTTPSConnection):
    dial: tuple[str, int] | None = None

    def __init__(self, host: str, port: int, *, timeout: float, context: ssl.SSLContext):
        super().__init__(host, port, timeout=timeout, context=context)
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection(self.dial or (self.host, self.port), self.timeout)
        # The name verified is the URL's host, wherever the connection went.
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


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
