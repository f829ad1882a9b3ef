"""Hand-built pods and nodes for the simulation tests, in the states the autoscalers read.

They are written straight into the store (as the cluster's own controllers would find them), so
the store stamps their uid and creation time on its clock.
"""

from __future__ import annotations

from scheduler.clock import VirtualClock
from simcluster.autoscaler import ScalingGroup
from simcluster.store import Store
from tests import builders

START = 1_700_000_000.0


def cluster() -> tuple[Store, VirtualClock]:
    clock = VirtualClock(START)
    store = Store(clock.now)
    for ns in ("default", "team"):
        store.create("namespaces", builders.namespace(ns, uid=None, created=None))
    return store, clock


def node(store: Store, name: str, cpu: str = "4", memory: str = "16Gi", **labels: str) -> dict:
    labels = {**labels, "kubernetes.io/hostname": name}
    return store.create(
        "nodes", builders.node(name, cpu, memory, labels=labels, uid=None, created=None)
    )


def group(
    name: str = "big",
    *,
    cpu: str = "16",
    memory: str = "64Gi",
    labels=None,
    taints=None,
    min_size: int = 0,
    max_size: int = 3,
    delay: float = 30.0,
) -> ScalingGroup:
    return ScalingGroup(
        name,
        labels or {"pool": name},
        taints or [],
        {"cpu": cpu, "memory": memory},
        min_size,
        max_size,
        delay,
    )


def queue(store: Store, name: str, cpu: str) -> dict:
    return store.create(
        "queues", builders.queue(name, capability={"cpu": cpu}, uid=None, created=None)
    )


def pod(
    store: Store,
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    state: str = "unschedulable",
    queue: str | None = None,
    node_name: str | None = None,
    nominated: str | None = None,
    owner: str | None = None,
    node_selector: dict | None = None,
    annotations: dict | None = None,
    namespace: str = "team",
) -> dict:
    """``state``: unschedulable | gated | pending (no condition) | deleting | bound | running."""
    reason = {
        "unschedulable": "Unschedulable",
        "deleting": "Unschedulable",
        "gated": "SchedulingGated",
    }.get(state)
    conditions = [{"type": "PodScheduled", "status": "False", "reason": reason}] if reason else None
    if node_name:
        conditions = [{"type": "PodScheduled", "status": "True"}]
    obj = builders.pod(
        name,
        cpu,
        memory,
        namespace=namespace,
        image="registry.k8s.io/pause:3.10",
        queue=queue,
        gates=[builders.GATE] if state == "gated" else [],
        node_name=node_name,
        phase="Running" if node_name and state == "running" else "Pending",
        conditions=conditions,
        nominated=nominated,
        selector=node_selector,
        annotations=annotations,
        owner=owner,
        uid=None,
        created=None,
    )
    created = store.create("pods", obj)
    if state == "deleting":
        created = store.mutate("pods", namespace, name, _deleting)
    return created


def _deleting(obj: dict) -> None:
    obj["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z"
    obj["metadata"]["deletionGracePeriodSeconds"] = 30


def events(store: Store, reason: str) -> list[dict]:
    return [e for e in store.list("events")[0] if e["reason"] == reason]


def run(step, clock: VirtualClock, until: float, every: float = 1.0) -> None:
    """Call ``step(now)`` every ``every`` simulated seconds up to START + ``until``."""
    t = clock.now()
    while t <= START + until + 1e-9:
        clock.run_until(t)
        step(t)
        t += every
