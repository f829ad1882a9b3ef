"""Seeded workloads for the simulation test: a scenario (as a scenario file would write it)
drawn from the Alibaba openb trace in the repository and from generated gangs, queue
hierarchies, priorities, opt-ins and best-effort pods.

Everything is drawn from ``random.Random(seed)``: the same seed gives the same scenario.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from simcluster.trace import DURATION_ANNOTATION, load_openb

PRIORITY_CLASSES = {"low": 10, "normal": 100, "high": 1000}
NAMESPACE = "sim"
TRACE_ROWS = 8000  # rows of the openb pod list a window may start at
NODE_SHAPES = (
    {"cpu": "8", "memory": "32Gi", "pods": "110"},
    {"cpu": "16", "memory": "64Gi", "pods": "110"},
    {"cpu": "4", "memory": "16Gi", "pods": "20"},
)
REQUESTS = (
    {"cpu": "500m", "memory": "1Gi"},
    {"cpu": "1", "memory": "2Gi"},
    {"cpu": "2", "memory": "4Gi"},
    {"cpu": "3", "memory": "8Gi"},
)


@dataclass
class Workload:
    seed: int
    scenario: dict  # a scenario file's contents
    autoscaler: str  # none | cluster-autoscaler | karpenter
    gated: bool  # whether the opted-in pods carry the queue-allocation gate
    horizon: float  # seconds by which every pod has arrived


def draw(seed: int, *, horizon: float = 60.0) -> Workload:
    rng = random.Random(seed)
    gated = rng.random() < 0.7
    autoscaler = rng.choice(("none", "none", "cluster-autoscaler", "karpenter"))
    queues = _queues(rng)
    leaves = [
        q["name"] for q in queues if not any(c["spec"].get("parent") == q["name"] for c in queues)
    ]
    nodes = [
        {"name": f"node-{i}", "capacity": dict(rng.choice(NODE_SHAPES))}
        for i in range(rng.randint(2, 4))
    ]
    workload: list[dict] = []
    for i in range(rng.randint(3, 7)):  # gangs
        size = rng.randint(2, 4)
        workload.append(
            {
                "at": round(rng.uniform(0, horizon), 1),
                "name": f"gang-{i}",
                "namespace": NAMESPACE,
                "replicas": size,
                "queue": rng.choice(leaves),
                "podGroup": {"minMember": rng.randint(max(1, size - 1), size)},
                "requests": rng.choice(REQUESTS),
                "duration": round(rng.uniform(10, 3 * horizon), 1),
                "gate": gated and rng.random() < 0.8,
                **_priority(rng),
            }
        )
    for i in range(rng.randint(5, 15)):  # single pods, some best-effort
        best_effort = rng.random() < 0.15
        workload.append(
            {
                "at": round(rng.uniform(0, horizon), 1),
                "name": f"pod-{i}",
                "namespace": NAMESPACE,
                "queue": rng.choice(leaves),
                **({} if best_effort else {"requests": rng.choice(REQUESTS)}),
                "duration": round(rng.uniform(5, 3 * horizon), 1),
                "gate": gated and rng.random() < 0.8,
                **_priority(rng),
            }
        )
    workload += _trace_pods(rng, leaves, gated, horizon)
    node_groups = [
        {
            "name": "pool",
            "min": 0,
            "max": 3,
            "provisionDelay": rng.choice((5, 15, 30)),
            "template": {"labels": {"pool": "auto"}, "capacity": dict(NODE_SHAPES[0])},
        }
    ]
    scenario = {
        "name": f"simtest-{seed}",
        "kubelet": {"startupDelay": rng.choice((0, 1, 2))},
        "namespaces": [{"name": NAMESPACE}, {"name": "openb"}],
        "queues": queues,
        "nodes": nodes + _trace_nodes(rng),
        "nodeGroups": node_groups,
        "workload": workload,
    }
    return Workload(seed, scenario, autoscaler, gated, horizon)


def _queues(rng: random.Random) -> list[dict]:
    """Two or three top-level queues, one of them with two children (a hierarchy), each with
    a CPU capability or none."""
    queues = []

    def capability() -> dict:
        if rng.random() < 0.3:
            return {}
        return {"capability": {"cpu": str(rng.choice((2, 3, 4, 6, 8, 12)))}}

    for i in range(rng.randint(2, 3)):
        queues.append({"name": f"q{i}", "spec": {"weight": rng.randint(1, 3), **capability()}})
    parent = queues[0]["name"]
    for j in range(2):
        queues.append(
            {"name": f"{parent}-c{j}", "spec": {"parent": parent, "weight": 1, **capability()}}
        )
    return queues


def _priority(rng: random.Random) -> dict:
    if rng.random() < 0.4:
        return {}
    return {"priorityClassName": rng.choice(sorted(PRIORITY_CLASSES))}


def _trace_nodes(rng: random.Random) -> list[dict]:
    """One CPU node of the openb trace's shape (32 cores, 256 GiB), half the time."""
    if rng.random() < 0.5:
        return []
    return [{"name": "openb-node", "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"}}]


def _trace_pods(rng: random.Random, leaves: list[str], gated: bool, horizon: float) -> list[dict]:
    """A window of the openb trace's CPU pods, their arrivals squeezed into the horizon and
    their run times scaled alike, each in one of the scenario's leaf queues."""
    trace = load_openb(skip_pods=rng.randrange(TRACE_ROWS), max_pods=40, max_nodes=1)
    rows = [
        (arrival.at, pod)
        for arrival in trace.arrivals
        for pod in arrival.pods
        if "nvidia.com/gpu" not in pod["spec"]["containers"][0]["resources"].get("requests", {})
    ][: rng.randint(3, 10)]
    if not rows:
        return []
    span = max(at for at, _ in rows) or 1.0
    items = []
    for at, pod in rows:
        annotations = pod["metadata"]["annotations"]
        runtime = float(annotations.get(DURATION_ANNOTATION, "60"))
        items.append(
            {
                "at": round(at / span * horizon, 1),
                "name": pod["metadata"]["name"],
                "namespace": "openb",
                "queue": rng.choice(leaves),
                "requests": pod["spec"]["containers"][0]["resources"]["requests"],
                "duration": round(min(runtime * horizon / span, 4 * horizon), 1),
                "gate": gated and rng.random() < 0.8,
            }
        )
    return items


def gate_opted_in(pods: list[dict]) -> None:
    """What the admission webhook does for a pod that opted in: the queue-allocation gate."""
    for pod in pods:
        annotations = pod["metadata"].get("annotations") or {}
        if annotations.get(QUEUE_ALLOCATION_GATE) == "true":
            gates = pod["spec"].setdefault("schedulingGates", [])
            if not any(g.get("name") == QUEUE_ALLOCATION_GATE for g in gates):
                gates.append({"name": QUEUE_ALLOCATION_GATE})
