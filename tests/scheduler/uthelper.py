"""Scenario builders in the spirit of Volcano's uthelper: objects in, cluster writes out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.cache import RecordingClusterClient, SchedulerCache
from scheduler.config import SchedulerConfig, default_config
from scheduler.loop import CycleReport, run_cycle

GATE = "scheduling.volcano.sh/queue-allocation-gate"


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", *, labels=None,
         taints=None, unschedulable: bool = False, extra=None) -> dict:  # fmt: skip
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"allocatable": allocatable}}  # fmt: skip


def pod(name: str, cpu: str | None = "1", memory: str | None = "1Gi", *, ns: str = "ns",
        group: str | None = None, queue: str | None = None, gates=(), opt_in: bool = False,
        node_name: str | None = None, phase: str | None = None, priority: int | None = None,
        created: int = 0, selector=None, affinity=None, tolerations=None,
        scheduler: str = "volcano", extra=None) -> dict:  # fmt: skip
    annotations = {}
    if group:
        annotations["scheduling.k8s.io/group-name"] = group
    if queue:
        annotations["scheduling.volcano.sh/queue-name"] = queue
    if opt_in:
        annotations[GATE] = "true"
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra or {})
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "resources": {"requests": requests}}],
    }
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    for key, value in (("nodeSelector", selector), ("affinity", affinity),
                       ("tolerations", tolerations)):  # fmt: skip
        if value is not None:
            spec[key] = value
    status: dict[str, Any] = {"phase": phase or ("Running" if node_name else "Pending")}
    if gates:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "SchedulingGated"}]  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                     "creationTimestamp": f"2024-01-01T00:{created // 60:02d}:{created % 60:02d}Z",
                     "annotations": annotations},
        "spec": spec,
        "status": status,
    }  # fmt: skip


def podgroup(name: str, min_member: int = 1, *, ns: str = "ns", queue: str = "default",
             min_resources=None, phase: str = "Pending", created: int = 0) -> dict:  # fmt: skip
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources:
        spec["minResources"] = min_resources
    return {"metadata": {"name": name, "namespace": ns, "uid": f"pg-{ns}-{name}",
                         "creationTimestamp": f"2024-01-01T00:00:{created:02d}Z"},
            "spec": spec, "status": {"phase": phase}}  # fmt: skip


def queue(name: str, *, capability=None, guarantee=None, deserved=None, parent=None,
          priority=None, state: str = "Open", created: int = 0) -> dict:  # fmt: skip
    spec: dict[str, Any] = {"weight": 1}
    for key, value in (("capability", capability), ("deserved", deserved), ("parent", parent),
                       ("priority", priority)):  # fmt: skip
        if value is not None:
            spec[key] = value
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    return {"metadata": {"name": name, "creationTimestamp": f"2024-01-01T00:00:{created:02d}Z"},
            "spec": spec, "status": {"state": state}}  # fmt: skip


@dataclass
class Scenario:
    nodes: list = field(default_factory=list)
    pods: list = field(default_factory=list)
    podgroups: list = field(default_factory=list)
    queues: list = field(default_factory=list)
    config: SchedulerConfig | None = None
    priority_classes: dict | None = None

    def cache(self) -> SchedulerCache:
        cache = SchedulerCache(priority_classes=self.priority_classes)
        for q in self.queues:
            cache.add_queue(q)
        for n in self.nodes:
            cache.add_node(n)
        for pg in self.podgroups:
            cache.add_podgroup(pg)
        for p in self.pods:
            cache.add_pod(p)
        return cache

    def run(self, act: bool = True) -> tuple[CycleReport, RecordingClusterClient]:
        client = RecordingClusterClient()
        report = run_cycle(self.cache(), self.config or default_config(), client, now=0.0, act=act)
        return report, client


def binds(client: RecordingClusterClient) -> dict[str, str]:
    return client.binds()


def conditions(client: RecordingClusterClient) -> dict[str, dict]:
    """Last PodScheduled patch per pod."""
    return {c[1]: c[2] for c in client.of("patch_pod_condition")}


def pg_status(client: RecordingClusterClient) -> dict[str, dict]:
    return {c[1]: c[2] for c in client.of("patch_podgroup_status")}


def waiting(report: CycleReport) -> dict[str, str]:
    return {f"{w.namespace}/{w.name}": w.status.message for w in report.waiting}
