"""A PodGroup created before its pods, through the simulated cluster's API: Volcano's job
controller creates a Job's pods only once its PodGroup is Inqueue (so do the Spark and
Kubeflow operators). The node-capacity check judges such a PodGroup on its minMember and
minResources (scheduler/admission/awaited.py), holds the room it admitted it for until its
pods are on their nodes, and its pods take that room up as they come.
"""

from __future__ import annotations

from tests.builders import body, pod, podgroup
from tests.e2e.admission.flow import (
    GROUP,
    NS,
    VERSION,
    capacity_condition,
    node_of,
    phase,
    risk_of,
    running,
)


def one_node(cpu: str) -> dict:
    return {
        "namespaces": [{"name": NS}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "100"}}}],
        "nodes": [{"name": "n0", "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }


def job_podgroup(h, name: str, members: int, cpu: str | None) -> None:
    """The PodGroup of a Job of ``members`` pods of ``cpu`` CPUs and 1Gi each, no pod yet."""
    resources = None
    if cpu is not None:
        resources = {"cpu": f"{float(cpu) * members:g}", "memory": f"{members}Gi"}
    group = podgroup(name, members, namespace=NS, queue="q", min_resources=resources)
    h.custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", body(group))
    h.clock.advance(1)


def job_pods(h, name: str, members: int, cpu: str) -> None:
    """What the job controller does once the PodGroup is Inqueue: create its pods."""
    for i in range(members):
        member = pod(f"{name}-{i}", cpu, "1Gi", namespace=NS, group=name, guaranteed=True)
        h.core.create_namespaced_pod(NS, body(member))


def test_a_podgroup_that_fits_is_admitted_and_holds_its_room_until_its_pods_run(harnesses):
    h = harnesses(one_node("8"))
    h.step(1)  # the monitor's snapshot: 8 CPU free
    job_podgroup(h, "train", 2, "3")  # 6 CPU for 2 pods, none created yet
    h.step(1)
    said = capacity_condition(h, "train")
    assert phase(h, "train") == "Inqueue"
    assert (said["status"], said["reason"]) == ("True", "NodeCapacityAvailable")
    assert "2 pod(s) of PodGroup team/train not created yet" in said["message"]
    assert "minResources" in said["message"]
    assert risk_of(h, "train").risk == "fits_now"  # its own room held for its pods is its own

    # Before train's pods exist, another job asks for 3 CPU: 2 are left for it.
    job_podgroup(h, "other", 1, "3")
    h.step(1)
    held = capacity_condition(h, "other")
    assert phase(h, "other") == "Pending"
    assert (held["status"], held["reason"]) == ("False", "InsufficientNodeCapacity")
    assert "it needs 3 CPU in all but the 1 schedulable node(s) have 2 CPU free" in held["message"]

    job_pods(h, "train", 2, "3")
    h.step(3)
    assert running(h, "train-0") and running(h, "train-1")
    assert node_of(h, "train-0") == node_of(h, "train-1") == "n0"
    assert phase(h, "other") == "Pending"


def test_a_podgroup_no_node_can_hold_waits_and_its_risk_says_so(harnesses):
    # The Volcano Job flow: minMember 1, minResources 6 CPU; the only node has 4.
    h = harnesses(one_node("4"))
    h.step(1)
    job_podgroup(h, "big", 1, "6")
    h.step(2)
    said = capacity_condition(h, "big")
    assert phase(h, "big") == "Pending"
    assert (said["status"], said["reason"]) == ("False", "InsufficientNodeCapacity")
    assert "it needs 6 CPU in all but the 1 schedulable node(s) have 4 CPU free" in said["message"]
    risk = risk_of(h, "big")
    assert risk.risk == "fits_no_node_shape", risk  # not "fits_now" for no pod at all


def test_a_podgroup_without_pods_or_min_resources_asks_for_nothing_and_is_admitted(harnesses):
    # Volcano admits it at once (best-effort, overcommit.go); the check has nothing to judge.
    h = harnesses(one_node("4"))
    h.step(1)
    job_podgroup(h, "light", 1, None)
    h.step(1)
    assert phase(h, "light") == "Inqueue"
    assert capacity_condition(h, "light") == {}  # admitted unchecked: no condition written


def test_after_a_restart_the_room_of_a_podgroup_still_without_pods_is_kept(harnesses):
    h = harnesses(one_node("8"))
    h.step(1)
    job_podgroup(h, "train", 2, "3")
    h.step(1)
    assert phase(h, "train") == "Inqueue"
    h.restart()  # the ledger was in the old process's memory
    h.attach_admission(node_groups=False)
    job_podgroup(h, "other", 1, "3")
    h.step(1)
    assert phase(h, "other") == "Pending"
    assert capacity_condition(h, "other")["reason"] == "InsufficientNodeCapacity"
