"""Writes to a cluster through the official ``kubernetes`` client.

Responses are read as raw JSON (``_preload_content=False``): the client's model
deserialisation is slow and, for a Binding, fails on a valid answer. API errors become
``ApiError`` subclasses that name the object, so callers need not know the client.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, NoReturn
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.api.labels import QUEUE_ALLOCATION_GATE, QUEUE_RESERVATION_ANNOTATION
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.resources import VOLCANO_GROUP, VOLCANO_VERSION
from scheduler.kube.transport import direct_rest

Obj = Mapping[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    def __init__(self, status: int, obj: str, message: str) -> None:
        self.status, self.obj = status, obj
        super().__init__(f"{obj}: HTTP {status}: {message}")


class Conflict(ApiError):
    pass


class NotFound(ApiError):
    pass


def _meta(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def api_error(status: int, reason: str, body: str, obj: str) -> ApiError:
    """The ApiError an answer ``status`` means (Conflict, NotFound...), with the Status
    object's message when the body is one."""
    try:
        message = json.loads(body or "").get("message", reason)
    except (TypeError, ValueError, AttributeError):
        message = reason
    error = {409: Conflict, 404: NotFound}.get(status, ApiError)
    return error(status or 0, obj, message)


def _raise(exc: ApiException, obj: str) -> NoReturn:
    raise api_error(exc.status or 0, exc.reason, exc.body or "", obj) from None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gate_removal_patch(
    pod: Obj, gate: str = QUEUE_ALLOCATION_GATE, *, reserved_at: str | None = None
) -> list[dict] | None:
    """The JSON patch removing ``gate`` (keeping any other gate), or None when absent; with
    ``reserved_at``, the same patch marks when the pod's queue reservation began."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    if not any(g.get("name") == gate for g in gates):
        return None
    remaining = [g for g in gates if g.get("name") != gate]
    version = pod["metadata"]["resourceVersion"]
    patch = [
        # Setting the version we read makes the patch conditional: 409 if the pod moved on.
        {"op": "replace", "path": "/metadata/resourceVersion", "value": version},
        {"op": "replace", "path": "/spec/schedulingGates", "value": remaining},
    ]
    if reserved_at is not None:
        if (pod["metadata"].get("annotations") or None) is None:
            value: Any = {QUEUE_RESERVATION_ANNOTATION: reserved_at}
            patch.append({"op": "add", "path": "/metadata/annotations", "value": value})
        else:
            path = "/metadata/annotations/" + QUEUE_RESERVATION_ANNOTATION.replace("/", "~1")
            patch.append({"op": "add", "path": path, "value": reserved_at})
    return patch


def binding(namespace: str, name: str, uid: str | None, node_name: str) -> dict:
    """The Binding of pod ``namespace/name`` (only the pod of that ``uid``) to a node."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def binding_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}/binding"


CONFLICT_RETRIES = 3  # client-go's retry.DefaultRetry has five steps; a bind should not wait long
# client-go's rest.Request: an answer 429 or 5xx carrying Retry-After is sent again after that
# many seconds, at most maxRetries (10) times (checkWait, request.go). A cycle waits for its
# binds, so one wait is bounded here.
RETRY_AFTER_TRIES = 10
RETRY_AFTER_MAX_S = 10.0


def retry_after(status: int, header: str | None) -> float | None:
    """Seconds to wait before sending a refused request again, as client-go's ``checkWait``:
    only a 429 or 5xx answer with a Retry-After of whole seconds; None: do not retry."""
    if status != 429 and status < 500:
        return None
    try:
        seconds = int((header or "").strip())
    except ValueError:
        return None
    return min(max(seconds, 0), RETRY_AFTER_MAX_S)


class KubeClusterClient:
    """The ClusterClient the scheduler uses against any cluster (real or simulated)."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        component: str = "volcano",
        limiter: TokenBucket | None = None,
    ) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.component = component
        self.limiter = limiter or TokenBucket()  # --kube-api-qps / --kube-api-burst
        # Binds' own connections (scheduler.kube.transport), None where the REST layer must
        # serve them (a proxy...). Fencing (scheduler.kube.leader) wraps it as it wraps ``api``.
        self.direct: Any = direct_rest(api)
        # Binds sent from a process of their own (scheduler.kube.bind_process), when set.
        self.binder: Any = None
        self.sleep: Callable[[float], None] = time.sleep

    def keep_connections(self, count: int) -> None:
        """Keep up to ``count`` connections to the API server open for reuse (urllib3's pool
        size; the client's default is 5 per CPU), for as many writes in flight at once."""
        pool_manager = getattr(self.api.rest_client, "pool_manager", None)
        if pool_manager is not None and pool_manager.connection_pool_kw.get("maxsize", 1) < count:
            pool_manager.connection_pool_kw["maxsize"] = count
            pool_manager.clear()  # pools are created again with the new size

    def _request(self, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call a client method for raw JSON (``_preload_content=False``), ApiError on failure;
        each request first takes a token of the QPS limiter."""
        self.limiter.acquire()
        try:
            response = method(*args, _preload_content=False, **kwargs)
        except ApiException as exc:
            _raise(exc, what)
        # Read the body and hand the connection back to the pool: a response left unread
        # keeps its connection, and every request would open a new one (a TCP handshake per
        # bind: a third of the time binds took).
        response.data  # noqa: B018 (read and cached for the caller)
        release = getattr(response, "release_conn", None)
        if release is not None:
            release()
        return response

    # -- reads ---------------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict:
        response = self._request(
            f"pod {namespace}/{name}", self.core.read_namespaced_pod, name, namespace
        )
        return json.loads(response.data)

    # -- pods ----------------------------------------------------------------------------------

    def bind(self, pod: Obj, node_name: str) -> None:
        namespace, name = _meta(pod)
        uid = pod["metadata"].get("uid")
        what = f"pod {namespace}/{name}"
        self._post(what, binding_path(namespace, name), binding(namespace, name, uid, node_name))

    def bind_async(
        self, pod: Obj, node_name: str, done: Callable[[Exception | None], None]
    ) -> bool:
        """Hand the bind to the bind process (``binder``, :mod:`scheduler.kube.bind_process`),
        whose answer calls ``done``; False (nothing sent, ``done`` not called) without one, or
        when it cannot run."""
        binder = self.binder
        if binder is None:
            return False
        namespace, name = _meta(pod)
        uid = pod["metadata"].get("uid")
        return bool(binder.submit(namespace, name, uid, node_name, done))

    def post_headers(self) -> dict[str, str]:
        """The headers of a JSON POST: the client's own (User-Agent...) and its credentials, read
        again for each request (a token the configuration refreshes)."""
        configuration = self.api.configuration
        headers = {**self.api.default_headers, "Content-Type": "application/json",
                   "Accept": "application/json"}  # fmt: skip
        for setting in configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _post(self, what: str, path: str, body: dict) -> bytes:
        """POST a JSON body over the binds' own connections (``self.direct``), else through
        the client's REST layer, without the generated API method's validation and
        serialization. Same TLS, auth headers and fencing; each request takes a token of the
        QPS limiter; a 429/5xx with Retry-After is sent again after it (client-go); other
        errors raise as ``_request``'s do."""
        configuration = self.api.configuration
        data = json.dumps(body, separators=(",", ":")).encode()
        url = configuration.host + path
        for attempt in range(RETRY_AFTER_TRIES + 1):
            self.limiter.acquire()
            headers = self.post_headers()
            status, reason, answer, wait = self._send_post(url, headers, body, data)
            if 200 <= status < 300:
                return answer
            if wait is None or attempt == RETRY_AFTER_TRIES:
                break
            self.sleep(wait)
        _raise(ApiException(status=status, reason=reason,
                            body=answer.decode(errors="replace")), what)  # fmt: skip

    def _send_post(
        self, url: str, headers: dict[str, str], body: dict, data: bytes
    ) -> tuple[int, str, bytes, float | None]:
        if self.direct is not None:
            response = self.direct.request("POST", url, headers=headers, body=data)
            answer = response.data
            later = response.getheader("Retry-After")
        else:
            response = self.api.rest_client.request("POST", url, headers=headers, body=body)
            answer = response.read()
            later = response.getheader("Retry-After")
            release = getattr(response.response, "release_conn", None)
            if release is not None:
                release()
        return response.status, response.reason, answer, retry_after(response.status, later)

    def close(self) -> None:
        """Close the binds' own connections (the ApiClient's pool is its owner's to close) and
        end the bind process, once it sent what it holds."""
        if self.binder is not None:
            self.binder.close()
        if self.direct is not None:
            self.direct.close()

    def evict(self, pod: Obj, reason: str) -> None:
        namespace, name = _meta(pod)
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        uid = (pod.get("metadata") or {}).get("uid")
        if uid:
            # Only the pod that was chosen: a pod replaced under the same name (a StatefulSet's,
            # a Job's) answers 409 instead of being evicted in its place.
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        create = self.core.create_namespaced_pod_eviction
        self._request(f"pod {namespace}/{name}", create, name, namespace, body)
        self.record_event(pod, "Normal", "Evict", reason)

    def patch_pod(self, pod: Obj, patch: list[dict]) -> dict:
        """A JSON patch on the pod; include a resourceVersion op to make it conditional."""
        namespace, name = _meta(pod)
        response = self._request(
            f"pod {namespace}/{name}", self.core.patch_namespaced_pod, name, namespace, patch,
            _content_type=JSON_PATCH,
        )  # fmt: skip
        return json.loads(response.data)

    def stamp_reservation(self, pod: Obj, reserved_at: str) -> None:
        """Write when the pod's queue reservation began, ahead of its gate removal (queued to the
        gates workers): another scheduler taking the next cycle sees the room is held. Only on
        the pod that passed its check (a ``test`` of its uid: 422 on a replacement)."""
        namespace, name = _meta(pod)
        metadata = pod.get("metadata") or {}
        patch: list[dict] = [{"op": "test", "path": "/metadata/uid", "value": metadata.get("uid")}]
        if not metadata.get("annotations"):
            value: Any = {QUEUE_RESERVATION_ANNOTATION: reserved_at}
            patch.append({"op": "add", "path": "/metadata/annotations", "value": value})
        else:
            path = "/metadata/annotations/" + QUEUE_RESERVATION_ANNOTATION.replace("/", "~1")
            patch.append({"op": "add", "path": path, "value": reserved_at})
        self._request(
            f"pod {namespace}/{name}", self.core.patch_namespaced_pod, name, namespace, patch,
            _content_type=JSON_PATCH,
        )  # fmt: skip

    def remove_scheduling_gate(self, pod: Obj, reserved_at: str | None = None) -> None:
        """The bind path's synchronous safety net (gate-controlled scheduling design): remove
        our gate now (marking when the pod's reservation began, when given).

        On conflict the pod is read again (client-go's RetryOnConflict): if our gate is gone
        (the asynchronous worker got there first) all is well; if the same pod changed in
        something else (its reservation stamp, a label), the removal is sent again against the
        fresh copy; a pod replaced under the same name (another uid), or conflicts that go on,
        raise and the bind fails.
        """
        for _ in range(CONFLICT_RETRIES):
            patch = gate_removal_patch(pod, reserved_at=reserved_at)
            if patch is None:
                return
            try:
                self.patch_pod(pod, patch)
                return
            except Conflict:
                namespace, name = _meta(pod)
                fresh = self.get_pod(namespace, name)
                if (fresh.get("metadata") or {}).get("uid") != (pod.get("metadata") or {}).get(
                    "uid"
                ):
                    raise
                pod = fresh
        namespace, name = _meta(pod)
        raise Conflict(
            409, f"pod {namespace}/{name}", f"still conflicting after {CONFLICT_RETRIES} tries"
        )

    def _patch_pod_status(self, pod: Obj, body: dict, content_type: str) -> None:
        namespace, name = _meta(pod)
        self._request(
            f"pod {namespace}/{name}", self.core.patch_namespaced_pod_status, name, namespace,
            body, _content_type=content_type,
        )  # fmt: skip

    def patch_pod_condition(self, pod: Obj, condition: dict) -> None:
        """Set one status condition (merged by type, as kube-scheduler does)."""
        condition = {"lastTransitionTime": _now(), **condition}
        self._patch_pod_status(pod, {"status": {"conditions": [condition]}}, STRATEGIC_MERGE_PATCH)

    def patch_nominated_node(self, pod: Obj, node_name: str | None) -> None:
        self._patch_pod_status(pod, {"status": {"nominatedNodeName": node_name}}, MERGE_PATCH)

    # -- podgroups, namespaces, events ----------------------------------------------------------

    def patch_podgroup_status(self, podgroup: Obj, status: dict) -> None:
        namespace, name = _meta(podgroup)
        self._request(
            f"podgroup {namespace}/{name}", self.custom.patch_namespaced_custom_object_status,
            VOLCANO_GROUP, VOLCANO_VERSION, namespace, "podgroups", name, {"status": status},
            _content_type=MERGE_PATCH,
        )  # fmt: skip

    def label_namespace(self, name: str, key: str, value: str | None) -> dict:
        """Set (or, with None, remove) one label of a namespace."""
        response = self._request(
            f"namespace {name}", self.core.patch_namespace, name,
            {"metadata": {"labels": {key: value}}}, _content_type=MERGE_PATCH,
        )  # fmt: skip
        return json.loads(response.data)

    def record_event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        namespace, name = _meta(obj)
        namespace = namespace or "default"
        now = _now()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", "v1"),
                "kind": obj.get("kind", "Pod"),
                "name": name,
                "namespace": _meta(obj)[0] or None,
                "uid": (obj.get("metadata") or {}).get("uid"),
            },
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
        }
        what = f"event for {obj.get('kind', 'Pod').lower()} {namespace}/{name}"
        self._request(what, self.core.create_namespaced_event, namespace, body)
