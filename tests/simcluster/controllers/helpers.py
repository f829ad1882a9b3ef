"""Hand-built pods and nodes for the simulation tests, in the states the autoscalers read."""

from __future__ import annotations

from scheduler.clock import VirtualClock
from simcluster.autoscaler import ScalingGroup
from simcluster.scenario_objects import make_node, make_pod
from simcluster.store import Store

START = 1_700_000_000.0


def cluster() -> tuple[Store, VirtualClock]:
    clock = VirtualClock(START)
    store = Store(clock.now)
    for ns in ("default", "team"):
        store.create("namespaces", {"metadata": {"name": ns}})
    return store, clock


def node(store: Store, name: str, cpu: str = "4", memory: str = "16Gi", **labels: str) -> dict:
    return store.create(
        "nodes", make_node(name, {"cpu": cpu, "memory": memory, "pods": "110"}, labels)
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
    notes = dict(annotations or {})
    if queue:
        notes["scheduling.volcano.sh/queue-name"] = queue
    extra = {"nodeSelector": node_selector} if node_selector else {}
    obj = make_pod(
        name,
        namespace,
        requests={"cpu": cpu, "memory": memory},
        annotations=notes,
        extra_spec=extra,
    )
    if owner:
        obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1" if owner == "Node" else "apps/v1",
                "kind": owner,
                "name": "o",
                "uid": "owner-uid",
                "controller": True,
            }
        ]
    status: dict = {"phase": "Pending"}
    reason = {
        "unschedulable": "Unschedulable",
        "deleting": "Unschedulable",
        "gated": "SchedulingGated",
    }.get(state)
    if reason:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": reason}]
    if state == "gated":
        obj["spec"]["schedulingGates"] = [{"name": "scheduling.volcano.sh/queue-allocation-gate"}]
    if node_name:
        obj["spec"]["nodeName"] = node_name
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        status["phase"] = "Running" if state == "running" else "Pending"
    if nominated:
        status["nominatedNodeName"] = nominated
    obj["status"] = status
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
