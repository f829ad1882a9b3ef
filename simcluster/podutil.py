"""Small helpers over plain Kubernetes JSON shared by the simulated kubelet and autoscalers:
pod requests, ownership, conditions, queue membership and core/v1 events."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from scheduler.api.labels import (
    GROUP_NAME_ANNOTATION,
    MIRROR_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
)
from scheduler.api.quantity import parse_resource_list
from scheduler.api.requests import pod_requests as effective_requests
from simcluster.store import Store, utc_timestamp

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})

Resources = dict[str, int]


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def pod_ref(pod: dict) -> str:
    return f"{meta(pod).get('namespace', '')}/{meta(pod).get('name', '')}"


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def condition(pod: dict, kind: str) -> dict | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def owned_by(pod: dict, kind: str, api_version: str | None = None) -> bool:
    """An owner reference of ``kind`` (and ``api_version``, when given, as Karpenter checks)."""
    return any(
        ref.get("kind") == kind and (api_version is None or ref.get("apiVersion") == api_version)
        for ref in meta(pod).get("ownerReferences") or []
    )


def is_daemon_or_mirror(pod: dict) -> bool:
    """Pods that do not make a node "needed": DaemonSet pods and static (mirror) pods."""
    annotations = meta(pod).get("annotations") or {}
    return owned_by(pod, "DaemonSet") or owned_by(pod, "Node") or MIRROR_ANNOTATION in annotations


def is_finished(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES


def pod_requests(pod: dict) -> Resources:
    """Kubernetes' effective request (``scheduler.api.requests``, the one the scheduler and
    the admission check use too) plus one ``pods`` slot."""
    total = effective_requests(pod, f"pod {pod_ref(pod)}")
    total["pods"] = total.get("pods", 0) + 1
    return total


def node_allocatable(node: dict) -> Resources:
    status = node.get("status") or {}
    rl = status.get("allocatable") or status.get("capacity") or {}
    return parse_resource_list(rl, obj=f"node {meta(node).get('name')}", field="status.allocatable")


def add(into: Resources, extra: Resources, sign: int = 1) -> None:
    for name, value in extra.items():
        into[name] = into.get(name, 0) + sign * value


def fits(request: Resources, free: Resources) -> bool:
    return all(value <= free.get(name, 0) for name, value in request.items() if value > 0)


def pod_queue(pod: dict, podgroup_queues: dict[tuple[str, str], str]) -> str:
    """Its PodGroup's ``spec.queue``, else the queue-name annotation, else ``default``."""
    annotations = meta(pod).get("annotations") or {}
    group = annotations.get(GROUP_NAME_ANNOTATION)
    if group and podgroup_queues.get((meta(pod).get("namespace", ""), group)):
        return podgroup_queues[(meta(pod).get("namespace", ""), group)]
    return annotations.get(QUEUE_NAME_ANNOTATION) or "default"


def podgroup_queues(store: Store) -> dict[tuple[str, str], str]:
    groups, _ = store.list("podgroups")
    return {
        (meta(g).get("namespace", ""), meta(g).get("name", "")): (g.get("spec") or {}).get("queue")
        or ""
        for g in groups
    }


def emit_event(
    store: Store,
    now: float,
    involved: dict,
    *,
    kind: str,
    reason: str,
    message: str,
    component: str,
    event_type: str = "Normal",
) -> dict:
    """Write a core/v1 Event; cluster-scoped objects' events go to ``default`` as in Kubernetes."""
    involved_meta = meta(involved)
    namespace = involved_meta.get("namespace") or "default"
    stamp = utc_timestamp(now)
    api_version = "v1" if kind in ("Pod", "Node") else "scheduling.volcano.sh/v1beta1"
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{involved_meta.get('name', 'unknown')}.{uuid.uuid4().hex[:16]}",
            "namespace": namespace,
        },
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "name": involved_meta.get("name", ""),
            "uid": involved_meta.get("uid", ""),
            **({"namespace": involved_meta["namespace"]} if involved_meta.get("namespace") else {}),
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
    return store.create("events", event)
