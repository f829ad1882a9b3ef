"""The placement constraints of Kueue KEP-3211 through enqueue: taints and tolerations, nodeSelector,
gangs that fit only across several nodes, gangs whose pods each fit alone but not together, and
the evaluator's "unknown" verdict (held, or admitted with ``admitUnknown``)."""

from __future__ import annotations

import random

import pytest

from tests.builders import body, pod, podgroup
from tests.e2e.admission.flow import (
    GROUP,
    NS,
    VERSION,
    capacity_condition,
    events_for,
    node_of,
    phase,
    running,
    workload,
)

QUEUE = {"name": "q", "spec": {"capability": {"cpu": "100"}}}
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def scenario(*nodes: dict) -> dict:
    return {
        "namespaces": [{"name": "team"}],
        "queues": [QUEUE],
        "nodes": list(nodes),
        "kubelet": {"startupDelay": 1},
    }


def scenario_node(
    name: str, cpu: str, labels: dict | None = None, taints: list | None = None
) -> dict:
    """A node of the scenario file (not a Kubernetes Node: the simulated cluster makes it)."""
    capacity = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    return {"name": name, "capacity": capacity, "labels": labels or {}, "taints": taints or []}


def held(h, name: str, reason: str = "InsufficientNodeCapacity") -> dict:
    """Asserts the PodGroup is held by the check; returns its condition."""
    assert phase(h, name) == "Pending"
    condition = capacity_condition(h, name)
    assert (condition["status"], condition["reason"]) == ("False", reason)
    return condition


def test_a_taint_holds_a_workload_until_it_tolerates_it(harnesses):
    h = harnesses(
        scenario(scenario_node("gpu-0", "8", taints=[TAINT]), scenario_node("cpu-0", "2"))
    )
    workload(h, "plain", "4")
    workload(h, "tolerant", "4", tolerations=[TOLERATION])
    h.step(4)

    condition = held(h, "plain")
    assert node_of(h, "plain") == ""
    assert "no suitable node has 4 CPU free for pod team/plain" in condition["message"]
    assert "1 suitable nodes of 2" in condition["message"]  # the tainted node does not count
    assert phase(h, "tolerant") == "Running" and node_of(h, "tolerant") == "gpu-0"
    assert capacity_condition(h, "tolerant")["status"] == "True"


def test_a_node_selector_limits_the_nodes_that_count(harnesses):
    h = harnesses(
        scenario(scenario_node("a-0", "4", {"zone": "a"}), scenario_node("b-0", "8", {"zone": "b"}))
    )
    workload(h, "in-a", "6", nodeSelector={"zone": "a"})
    workload(h, "in-b", "6", nodeSelector={"zone": "b"})
    h.step(4)

    condition = held(h, "in-a")
    assert node_of(h, "in-a") == ""
    assert "1 suitable nodes of 2" in condition["message"]
    assert running(h, "in-b") and node_of(h, "in-b") == "b-0"


def test_a_gang_that_fits_only_spread_over_several_nodes_is_admitted_and_runs(harnesses):
    nodes = [scenario_node(f"n{i}", "4") for i in range(4)]
    h = harnesses(scenario(*nodes))
    for i in range(4):  # 2 of 4 CPU taken on every node
        workload(h, f"base-{i}", "2", nodeSelector={"kubernetes.io/hostname": f"n{i}"})
    h.step(3)
    h.snapshots.refresh()

    workload(h, "spread", "2", pods=4)  # 8 CPU: no node holds two of them
    h.step(4)

    assert phase(h, "spread") == "Running"
    assert sorted(node_of(h, f"spread-{i}") for i in range(4)) == ["n0", "n1", "n2", "n3"]
    condition = capacity_condition(h, "spread")
    assert (condition["status"], condition["reason"]) == ("True", "NodeCapacityAvailable")
    assert "all 4 pod(s) fit on 4 node(s)" in condition["message"]


def test_a_gang_whose_pods_each_fit_alone_but_not_together_is_held(harnesses):
    # 2 x 3 CPU free; 3 pods x 2 CPU = 6 CPU = the free total, yet each node holds only one.
    h = harnesses(scenario(scenario_node("n0", "3"), scenario_node("n1", "3")))
    workload(h, "trio", "2", pods=3)
    workload(h, "duo", "2", pods=2)
    h.step(4)

    condition = held(h, "trio")
    assert "at most 2 of the 3 pod(s) fit at once" in condition["message"]
    assert all(node_of(h, f"trio-{i}") == "" for i in range(3))
    assert phase(h, "duo") == "Running"  # the capacity trio would have wasted goes to duo


def test_without_the_check_the_same_gang_is_admitted_and_blocks_nothing_but_never_runs(
    harnesses,
):
    h = harnesses(scenario(scenario_node("n0", "3"), scenario_node("n1", "3")), check=False)
    workload(h, "trio", "2", pods=3)
    h.step(4)
    assert phase(h, "trio") == "Inqueue"
    assert all(node_of(h, f"trio-{i}") == "" for i in range(3))


def hard_sizes() -> list[int]:
    """CPU millicores, multiples of 3, summing to 3000m on 3 x 1-CPU nodes: no node can be
    filled past 999m, so it cannot fit, but only an exhaustive search could prove it."""
    rng = random.Random(7)
    sizes: list[int] = []
    while sum(sizes) < 3000 - 270:
        sizes.append(3 * rng.randint(50, 90))
    return [*sizes, 3000 - sum(sizes)]


def create_hard_gang(h) -> int:
    """One PodGroup with every pod of ``hard_sizes`` (each its own size)."""
    sizes = hard_sizes()
    group = podgroup("hard", len(sizes), namespace=NS, queue="q")
    h.custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", body(group))
    for i, size in enumerate(sizes):
        member = pod(f"hard-{i}", f"{size}m", "1Gi", namespace=NS, group="hard", guaranteed=True)
        h.core.create_namespaced_pod(NS, body(member))
    return len(sizes)


@pytest.mark.parametrize("admit_unknown", [False, True])
def test_an_undecided_evaluation_is_held_unless_admit_unknown(harnesses, admit_unknown):
    nodes = [scenario_node(f"n{i}", "1") for i in range(3)]
    h = harnesses(scenario(*nodes), admitUnknown=admit_unknown)
    count = create_hard_gang(h)
    h.step(3)

    condition = capacity_condition(h, "hard")
    assert condition["reason"] == "NodeCapacityUnknown"
    assert f"undecided within 0.05 s: {count} pod(s) on 3 node(s)" in condition["message"]
    if admit_unknown:
        assert condition["status"] == "True"
        assert phase(h, "hard") == "Inqueue"
    else:
        assert condition["status"] == "False"
        assert phase(h, "hard") == "Pending"
    assert all(node_of(h, f"hard-{i}") == "" for i in range(count))  # it truly cannot fit


def test_a_pod_without_a_podgroup_is_checked_too_and_the_event_is_on_the_pod(harnesses):
    h = harnesses(scenario(scenario_node("n0", "4"), scenario_node("n1", "4")))
    lone = pod("lone", "6", "1Gi", namespace=NS, guaranteed=True)
    h.core.create_namespaced_pod(NS, body(lone))
    h.step(3)

    assert node_of(h, "lone") == ""
    events = [(e.type, e.reason) for e in events_for(h, "lone", kind="Pod")]
    assert ("Warning", "InsufficientNodeCapacity") in events
    waiting = {w.name: w.status.message for w in h.reports[-1].waiting}
    assert waiting["lone"].startswith("node-capacity check Retry: no suitable node has 6 CPU")
