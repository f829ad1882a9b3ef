"""Resource monitor (Kueue KEP-3211 (KEP PR #5042)): what each node has left after its Guaranteed-QoS pods.

``build_snapshot(nodes, pods, now)`` turns lists of Kubernetes node and pod dicts into a
``CapacitySnapshot`` shaped like the KEP's Go structs (``LastCheck``; per node name, uid, labels,
taints, remaining resources and the Guaranteed pods on it). Only Guaranteed pods reserve
capacity; Burstable and BestEffort pods are ignored, as the KEP decides. Resources are in
``scheduler.api.quantity`` engine units (CPU millicores, memory bytes, extended milli-units).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.api.quantity import CPU, MEMORY, PODS, parse_resource_list
from scheduler.api.requests import Basis, pod_requests

GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
QOS_RESOURCES = (CPU, MEMORY)  # Kubernetes decides QoS on cpu and memory only.


def _where(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"pod {meta.get('namespace', 'default')}/{meta.get('name', '?')}"


def _all_containers(pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    spec = pod.get("spec") or {}
    out = []
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(kind) or []):
            out.append((f"spec.{kind}[{i}].resources", container))
    return out


def _container_lists(
    pod: Mapping[str, Any], path: str, container: Mapping[str, Any]
) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) with requests defaulted from limits, as the API server defaults them."""
    resources = container.get("resources") or {}
    obj = _where(pod)
    limits = parse_resource_list(resources.get("limits"), obj=obj, field=f"{path}.limits")
    requests = parse_resource_list(resources.get("requests"), obj=obj, field=f"{path}.requests")
    return {**limits, **requests}, limits


def qos_class(pod: Mapping[str, Any]) -> str:
    """Kubernetes' pod QoS class (``GetPodQOS``), over containers and init containers.

    Zero quantities do not count; Guaranteed needs cpu and memory limits on every container
    and the summed requests equal to the summed limits.
    """
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for path, container in _all_containers(pod):
        req, lim = _container_lists(pod, path, container)
        for name in QOS_RESOURCES:
            if req.get(name):
                requests[name] = requests.get(name, 0) + req[name]
            if lim.get(name):
                limits[name] = limits.get(name, 0) + lim[name]
        if not all(lim.get(name) for name in QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and requests == limits:
        return GUARANTEED
    return BURSTABLE


def _add(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, units in extra.items():
        total[name] = total.get(name, 0) + units


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, units in other.items():
        total[name] = max(total.get(name, 0), units)


def pod_demand(pod: Mapping[str, Any], basis: Basis = "limits") -> dict[str, int]:
    """What the pod occupies on a node (Kubernetes' effective request, sidecars and init
    containers and overhead included) plus its pod slot. ``basis="limits"`` uses limits (the
    KEP's rule for Guaranteed pods); ``"limits_or_requests"`` a resource's limit and, where
    absent, its request."""
    total = pod_requests(pod, _where(pod), basis)
    total[PODS] = 1
    return total


@dataclass(frozen=True)
class PodInfo:
    name: str
    uid: str
    namespace: str
    resources: dict[str, int]  # the pod's limits, engine units


@dataclass(frozen=True)
class NodeUsage:
    node_name: str
    uid: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    remaining: dict[str, int]
    pods: list[PodInfo] = field(default_factory=list)
    unschedulable: bool = False

    def as_node(self) -> dict[str, Any]:
        """The minimal node dict ``scheduler.api.node_matching`` reads."""
        spec: dict[str, Any] = {"taints": self.taints, "unschedulable": self.unschedulable}
        return {"metadata": {"name": self.node_name, "labels": self.labels}, "spec": spec}


@dataclass(frozen=True)
class CapacitySnapshot:
    last_check: datetime
    nodes: list[NodeUsage]
    # Node masks per scheduling signature; lives and dies with this immutable snapshot.
    mask_cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON with the KEP's field names, for a cache or a Celery result."""
        return {
            "last_check": self.last_check.isoformat(),
            "nodes": [_node_json(n) for n in self.nodes],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacitySnapshot:
        nodes = [
            NodeUsage(
                node_name=n["node_name"],
                uid=n["uuid"],
                labels=dict(n["labels"]),
                taints=list(n["taints"]),
                remaining=dict(n["remaining"]),
                pods=[
                    PodInfo(p["name"], p["uuid"], p["namespace"], p["resources"]) for p in n["pods"]
                ],
                unschedulable=bool(n.get("unschedulable", False)),
            )
            for n in data["nodes"]
        ]
        return cls(datetime.fromisoformat(data["last_check"]), nodes)


def _node_json(node: NodeUsage) -> dict[str, Any]:
    return {
        "node_name": node.node_name,
        "uuid": node.uid,
        "labels": node.labels,
        "taints": node.taints,
        "remaining": node.remaining,
        "unschedulable": node.unschedulable,
        "pods": [
            {"name": p.name, "uuid": p.uid, "namespace": p.namespace, "resources": p.resources}
            for p in node.pods
        ],
    }


def _occupies_node(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed")


def node_usage(node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] = ()) -> NodeUsage:
    """One node's usage: allocatable minus the limits of ``pods`` (Guaranteed pods bound to it)."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    name = meta.get("name") or ""
    where = f"node {name}"
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    remaining = parse_resource_list(allocatable, obj=where, field="status.allocatable")
    infos = []
    for pod in pods:
        demand = pod_demand(pod, "limits")
        _add(remaining, {k: -v for k, v in demand.items() if k != PODS or PODS in remaining})
        pod_meta = pod.get("metadata") or {}
        limits = {k: v for k, v in demand.items() if k != PODS}
        infos.append(
            PodInfo(
                pod_meta.get("name", ""),
                pod_meta.get("uid", ""),
                pod_meta.get("namespace", "default"),
                limits,
            )
        )
    return NodeUsage(
        node_name=name,
        uid=meta.get("uid") or "",
        labels=dict(meta.get("labels") or {}),
        taints=list((node.get("spec") or {}).get("taints") or []),
        remaining=remaining,
        pods=infos,
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
    )


def build_snapshot(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], now: datetime
) -> CapacitySnapshot:
    """The KEP's Snapshot: remaining = allocatable minus limits of Guaranteed pods bound there."""
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        if _occupies_node(pod) and qos_class(pod) == GUARANTEED:
            by_node.setdefault(pod["spec"]["nodeName"], []).append(pod)
    usages = [
        node_usage(n, by_node.get((n.get("metadata") or {}).get("name") or "", [])) for n in nodes
    ]
    return CapacitySnapshot(now, usages)
