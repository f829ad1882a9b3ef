"""Building Kubernetes objects from scenario items, with errors that name the file, the item
and the field (``demo.yaml: workload[3] (train): requests.cpu: invalid quantity 'x'``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import DURATION_ANNOTATION, GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler.api.node_matching import pod_constraints
from scheduler.api.quantity import QuantityError, parse_resource_list

GATE_ANNOTATION = "scheduling.volcano.sh/queue-allocation-gate"
DEFAULT_SCHEDULER = "volcano"

WORKLOAD_KEYS = {
    "at",
    "name",
    "namespace",
    "replicas",
    "count",
    "queue",
    "podGroup",
    "requests",
    "limits",
    "nodeSelector",
    "tolerations",
    "affinity",
    "annotations",
    "labels",
    "duration",
    "gate",
    "schedulerName",
    "priorityClassName",
    "terminationGracePeriodSeconds",
}


class ScenarioError(ValueError):
    """A scenario that cannot be loaded; the message says where and why."""


@dataclass(frozen=True)
class Where:
    source: str
    path: str

    def named(self, name: str) -> Where:
        return Where(self.source, f"{self.path} ({name})")

    def sub(self, field: str) -> Where:
        return Where(self.source, f"{self.path}.{field}")

    def __str__(self) -> str:
        return f"{self.source}: {self.path}"


def check_keys(item: Any, allowed: set[str], where: Where) -> None:
    if not isinstance(item, dict):
        raise ScenarioError(f"{where}: expected a mapping, got {type(item).__name__}")
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: {unknown[0]}: unknown field (allowed: {sorted(allowed)})")


def need(item: dict, key: str, kind: type, where: Where) -> Any:
    value = item.get(key)
    if value is None:
        raise ScenarioError(f"{where}: {key}: required")
    if not isinstance(value, kind):
        raise ScenarioError(f"{where}: {key}: expected {kind.__name__}, got {value!r}")
    return value


def resources(item: dict, key: str, where: Where) -> dict[str, str]:
    """A ResourceList, validated; values kept as quantity strings for the API."""
    value = item.get(key) or {}
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: {key}: expected a map of resource to quantity")
    try:
        parse_resource_list(value, obj=str(where), field=key)
    except QuantityError as exc:
        raise ScenarioError(f"{where}: {exc.field}: invalid quantity {exc.value!r}") from None
    return {str(k): str(v) for k, v in value.items()}


def build_node(item: Any, where: Where) -> list[dict]:
    """One node (``name``) or ``count`` nodes named ``namePrefix-1..count``."""
    check_keys(item, {"name", "namePrefix", "count", "labels", "taints", "capacity"}, where)
    if "name" in item:
        names = [need(item, "name", str, where)]
    else:
        prefix = need(item, "namePrefix", str, where)
        names = [f"{prefix}-{i}" for i in range(1, int(need(item, "count", int, where)) + 1)]
    capacity = {"pods": "110", **resources(item, "capacity", where)}
    if set(capacity) == {"pods"}:
        raise ScenarioError(f"{where}: capacity: required")
    labels = {str(k): str(v) for k, v in (item.get("labels") or {}).items()}
    return [make_node(name, capacity, labels, list(item.get("taints") or [])) for name in names]


def make_node(name: str, capacity: dict, labels: dict, taints: list | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }


def build_workload_item(item: Any, where: Where) -> tuple[float, list[dict], list[dict]]:
    check_keys(item, WORKLOAD_KEYS, where)
    name = need(item, "name", str, where)
    where = where.named(name)
    at = item.get("at", 0)
    if not isinstance(at, int | float) or at < 0:
        raise ScenarioError(f"{where}: at: expected seconds >= 0, got {at!r}")
    namespace = item.get("namespace") or "default"
    replicas = item.get("replicas", item.get("count"))
    if replicas is not None and (not isinstance(replicas, int) or replicas < 1):
        raise ScenarioError(f"{where}: replicas: expected a positive integer, got {replicas!r}")
    groups = []
    if item.get("podGroup") is not None:
        groups.append(_podgroup(item, name, namespace, replicas or 1, where.sub("podGroup")))
    names = [name] if replicas is None else [f"{name}-{i}" for i in range(replicas)]
    pods = [_pod(item, pod_name, namespace, name if groups else None, where) for pod_name in names]
    return float(at), groups, pods


def _podgroup(item: dict, name: str, namespace: str, replicas: int, where: Where) -> dict:
    spec = item["podGroup"]
    check_keys(spec, {"minMember", "queue", "minResources", "priorityClassName"}, where)
    spec = {"minMember": replicas, **spec}
    spec.setdefault("queue", item.get("queue") or "default")
    if spec.get("minResources") is not None:
        spec["minResources"] = resources(spec, "minResources", where)
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _pod(item: dict, name: str, namespace: str, group: str | None, where: Where) -> dict:
    annotations = {str(k): str(v) for k, v in (item.get("annotations") or {}).items()}
    if item.get("queue"):
        annotations[QUEUE_NAME_ANNOTATION] = str(item["queue"])
    if group:
        annotations[GROUP_NAME_ANNOTATION] = group
    if item.get("duration") is not None:
        if not isinstance(item["duration"], int | float) or item["duration"] < 0:
            raise ScenarioError(f"{where}: duration: expected seconds >= 0")
        annotations[DURATION_ANNOTATION] = str(item["duration"])
    if item.get("gate"):
        annotations[GATE_ANNOTATION] = "true"
    pod = make_pod(
        name,
        namespace,
        requests=resources(item, "requests", where),
        limits=resources(item, "limits", where),
        annotations=annotations,
        labels={str(k): str(v) for k, v in (item.get("labels") or {}).items()},
        extra_spec={
            k: item[k]
            for k in (
                "nodeSelector",
                "tolerations",
                "affinity",
                "priorityClassName",
                "terminationGracePeriodSeconds",
            )
            if k in item
        },
        scheduler_name=str(item.get("schedulerName") or DEFAULT_SCHEDULER),
    )
    try:
        pod_constraints(pod, obj=str(where))  # nodeSelector, affinity, tolerations well-formed
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    return pod


def make_pod(
    name: str,
    namespace: str,
    *,
    requests: dict[str, str],
    limits: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    extra_spec: dict | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER,
) -> dict:
    container_resources: dict[str, dict] = {"requests": dict(requests)}
    if limits:
        container_resources["limits"] = dict(limits)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": container_resources,
                }
            ],
            **(extra_spec or {}),
        },
    }
