"""Resource monitor (Kueue KEP-3211 (KEP PR #5042)): what each node has left after its Guaranteed-QoS pods.

``build_snapshot(nodes, pods, now)`` turns lists of Kubernetes node and pod dicts into a
``CapacitySnapshot`` shaped like the KEP's Go structs (``LastCheck``; per node name, uid, labels,
taints, remaining resources and the pods counted on it). Guaranteed pods reserve their limits
and a pod slot, as the KEP decides; Burstable and BestEffort pods reserve their extended
resources only (``counted_demand``). That is a departure from the KEP, which ignores them: an
extended resource (``nvidia.com/gpu``) cannot be overcommitted — its request must equal its
limit and the kubelet admits pods by it — so a GPU a Burstable pod holds is a GPU no one else
gets. Resources are in ``scheduler.api.quantity`` engine units (CPU millicores, memory bytes,
extended milli-units).

``CapacitySnapshot.minus(used)`` is a snapshot with more taken from some nodes: what was
admitted since it was taken (``scheduler.admission.ledger``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from scheduler.api.quantity import CPU, MAX_UNITS, MEMORY, PODS, parse_resource_list
from scheduler.api.requests import Basis, pod_requests

GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
QOS_RESOURCES = (CPU, MEMORY)  # Kubernetes decides QoS on cpu and memory only.
UNLIMITED = 2**62  # a node that does not report a pod limit
# Resources a node may overcommit (or that are not a container's): everything else is extended.
_NOT_EXTENDED = frozenset({CPU, MEMORY, "ephemeral-storage", "storage", PODS})


def is_extended(name: str) -> bool:
    """An extended resource (``nvidia.com/gpu``): not cpu, memory, ephemeral-storage or
    hugepages-*. Its request equals its limit and the kubelet admits pods by it."""
    return name not in _NOT_EXTENDED and not name.startswith("hugepages-")


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


def extended_demand(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's extended resources (requests, which default to and must equal the limits)."""
    total = pod_requests(pod, _where(pod), "requests")
    return {name: units for name, units in total.items() if is_extended(name)}


def counted_demand(pod: Mapping[str, Any]) -> dict[str, int]:
    """What a pod on a node takes from the snapshot: a Guaranteed pod its limits and pod slot
    (the KEP); any other pod its extended resources only (empty when it has none)."""
    if qos_class(pod) == GUARANTEED:
        return pod_demand(pod, "limits")
    return extended_demand(pod)


@dataclass(frozen=True)
class PodInfo:
    name: str
    uid: str
    namespace: str
    resources: dict[str, int]  # what the snapshot counts for the pod (counted_demand), engine units


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
    # What depends on the nodes' labels and taints and the pods listed (node masks per
    # scheduling signature, node dicts, pod uids): shared by the snapshots ``minus`` derives.
    mask_cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    # Free capacity matrices [nodes, resources] per resource tuple: this snapshot's own.
    capacity_cache: dict[tuple[str, ...], Any] = field(
        default_factory=dict, compare=False, repr=False
    )
    # For a snapshot ``minus`` derived: the snapshot taken and, per node index, what was taken
    # from that node's remaining since.
    base: CapacitySnapshot | None = field(default=None, compare=False, repr=False)
    deducted: Mapping[int, Mapping[str, int]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def pod_uids(self) -> frozenset[str]:
        """The uids of the pods this snapshot counts on its nodes."""
        uids = self.mask_cache.get("__pod_uids__")
        if uids is None:
            uids = frozenset(p.uid for n in self.nodes for p in n.pods if p.uid)
            self.mask_cache["__pod_uids__"] = uids
        return uids

    def minus(self, used: Mapping[str, Mapping[str, int]]) -> CapacitySnapshot:
        """This snapshot with ``used`` (node name -> engine units; negative units give back)
        also taken from those nodes' remaining; unknown node names are ignored. Labels and
        taints are the same, so node masks are shared; ``last_check`` stays the time it was
        taken. Costs the nodes ``used`` touches: capacity matrices already worked out for
        this snapshot are carried over with those rows redone."""
        base = self.base or self
        index = base.mask_cache.get("__index__")
        if index is None:
            index = {n.node_name: i for i, n in enumerate(base.nodes)}
            base.mask_cache["__index__"] = index
        deducted = dict(self.deducted)
        nodes = list(self.nodes)
        touched = []
        for name, units in used.items():
            i = index.get(name)
            if i is None or not units:
                continue
            total = dict(deducted.get(i, {}))
            _add(total, units)
            deducted[i] = total
            remaining = dict(nodes[i].remaining)
            _add(remaining, {k: -v for k, v in units.items() if k != PODS or PODS in remaining})
            nodes[i] = replace(nodes[i], remaining=remaining)
            touched.append(i)
        if not touched:
            return self
        derived = CapacitySnapshot(
            base.last_check, nodes, base.mask_cache, base=base, deducted=deducted
        )
        for resources, matrix in self.capacity_cache.items():
            carried = matrix.copy()
            for i in touched:
                carried[i] = free_row(nodes[i], resources)
            derived.capacity_cache[resources] = carried
        return derived

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


def free_row(node: NodeUsage, resources: Sequence[str]) -> list[int]:
    """A node's free capacity of ``resources``: negatives as 0, an unreported pod limit as
    unlimited."""
    return [max(node.remaining.get(r, UNLIMITED if r == PODS else 0), 0) for r in resources]


def _occupies_node(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed")


def node_usage(node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] = ()) -> NodeUsage:
    """One node's usage: allocatable minus what ``pods`` (bound to it) take from it
    (``counted_demand``: a Guaranteed pod's limits, another pod's extended resources)."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    name = meta.get("name") or ""
    where = f"node {name}"
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    remaining = parse_resource_list(allocatable, obj=where, field="status.allocatable")
    infos = []
    for pod in pods:
        try:
            demand = counted_demand(pod)
        except ValueError:  # unreadable (cpu: 1e400): no kubelet admits it, it takes nothing
            continue
        if not demand:
            continue
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
        # Overcommitted stays negative, within an int64 (the evaluator's arrays).
        remaining={k: max(v, -MAX_UNITS) for k, v in remaining.items()},
        pods=infos,
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
    )


def build_snapshot(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], now: datetime
) -> CapacitySnapshot:
    """The KEP's Snapshot: remaining = allocatable minus the limits of the Guaranteed pods bound
    there and (unlike the KEP) the extended resources of the other pods bound there."""
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        if _occupies_node(pod):
            by_node.setdefault(pod["spec"]["nodeName"], []).append(pod)
    usages = []
    for n in nodes:
        try:
            usages.append(
                node_usage(n, by_node.get((n.get("metadata") or {}).get("name") or "", []))
            )
        except ValueError:  # a node whose capacity cannot be read offers none
            continue
    return CapacitySnapshot(now, usages)
