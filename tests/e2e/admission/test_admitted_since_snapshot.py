"""What was admitted since the capacity snapshot was taken counts as used, through the
simulated cluster's API: within one cycle, across cycles, and no longer once a newer snapshot
shows it (never twice) or the workload is gone.

The resource monitor refreshes every 60 s; these steps stay inside one period unless a test
refreshes the snapshot itself.
"""

from __future__ import annotations

import pytest

from tests.e2e.admission.flow import (
    GROUP,
    NS,
    VERSION,
    capacity_condition,
    events_for,
    node_of,
    phase,
    read_podgroup,
    running,
    workload,
)


def one_node(cpu: str) -> dict:
    return {
        "namespaces": [{"name": "team"}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "100"}}}],
        "nodes": [{"name": "n0", "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }


def uid_of(h, name: str) -> str:
    return read_podgroup(h, name)["metadata"]["uid"]


def held(h, name: str) -> dict:
    assert phase(h, name) == "Pending"
    condition = capacity_condition(h, name)
    assert (condition["status"], condition["reason"]) == ("False", "InsufficientNodeCapacity")
    return condition


def test_two_workloads_admitted_in_one_cycle_share_the_snapshots_free_cpu(harnesses):
    # 4 free CPUs; two 3-CPU workloads reach enqueue in the same cycle, against one snapshot.
    h = harnesses(one_node("4"))
    workload(h, "first", "3")
    workload(h, "second", "3")
    h.step(4)

    assert running(h, "first") and node_of(h, "first") == "n0"
    condition = held(h, "second")  # before: admitted too (Inqueue), and never ran
    assert node_of(h, "second") == ""
    assert "no suitable node has 3 CPU free for pod team/second" in condition["message"]
    assert "largest free 1 CPU" in condition["message"]
    queue = {q.name: q for q in h.reports[-1].queues}["q"]
    assert queue.inqueue.get("cpu", 0) == 0  # no quota held by a workload that cannot run


def test_a_workload_admitted_in_an_earlier_cycle_counts_until_the_snapshot_shows_it(harnesses):
    h = harnesses(one_node("4"))
    h.step(1)  # the monitor's snapshot: an empty node, 4 CPU free
    taken = h.snapshots()
    workload(h, "first", "3")
    h.step(3)
    assert running(h, "first")
    assert h.snapshots() is taken  # still the snapshot from before "first" was admitted

    workload(h, "second", "3")
    h.step(3)
    condition = held(h, "second")  # before: admitted against the stale 4 free CPUs
    assert "largest free 1 CPU" in condition["message"]
    assert node_of(h, "second") == ""
    risk = next(r for r in h.reports[-1].risks if r.name == "second")
    assert risk.risk == "fits_no_node_shape" and "3 CPU" in risk.explanation


def test_a_newer_snapshot_that_shows_the_pods_is_not_counted_twice(harnesses):
    # 6 CPUs: after "first" (3) there is room for "second" (3) — unless "first" counted twice.
    h = harnesses(one_node("6"))
    workload(h, "first", "3")
    h.step(3)
    assert running(h, "first")
    ledger = h.service.admission.ledger
    assert uid_of(h, "first") in ledger  # admitted after the snapshot was taken

    h.snapshots.refresh()  # the monitor now lists first's pod on n0
    workload(h, "second", "3")
    h.step(3)
    assert uid_of(h, "first") not in ledger  # the snapshot counts it: dropped from the ledger
    assert running(h, "second") and node_of(h, "second") == "n0"
    condition = capacity_condition(h, "second")
    assert (condition["status"], condition["reason"]) == ("True", "NodeCapacityAvailable")


def test_a_workload_deleted_before_the_next_snapshot_no_longer_counts(harnesses):
    h = harnesses(one_node("4"))
    h.step(1)
    workload(h, "first", "3")
    h.step(3)
    assert running(h, "first")
    uid = uid_of(h, "first")
    h.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "first")
    h.core.delete_namespaced_pod("first", NS, grace_period_seconds=0)
    h.step(2)
    assert uid not in h.service.admission.ledger

    workload(h, "second", "3")  # the snapshot is still the one from before "first"
    h.step(3)
    assert running(h, "second") and node_of(h, "second") == "n0"


def test_a_gang_admitted_in_the_same_cycle_counts_every_pod(harnesses):
    # 2 nodes x 4 CPU: a gang of two 3-CPU pods takes one node each; a third 3-CPU pod has
    # no node left, though each node showed 4 free CPUs in the snapshot.
    scenario = one_node("4")
    scenario["nodes"].append({"name": "n1", "capacity": {"cpu": "4", "memory": "16Gi"}})
    h = harnesses(scenario)
    workload(h, "gang", "3", pods=2)
    workload(h, "single", "3")
    h.step(4)

    assert phase(h, "gang") == "Running"
    assert sorted(node_of(h, f"gang-{i}") for i in range(2)) == ["n0", "n1"]
    held(h, "single")
    assert node_of(h, "single") == ""


WAIT_GATE = "example.com/wait-for-volumes"  # another controller's gate: not Sluice's to lift


def admitted_but_unbound(harnesses):
    """``first`` (3 of n0's 4 CPU) admitted by the check, its pod held by another
    controller's gate: Inqueue, not on a node, so no snapshot counts it."""
    h = harnesses(one_node("4"))
    h.step(1)
    workload(h, "first", "3", schedulingGates=[{"name": WAIT_GATE}])
    h.step(2)
    assert phase(h, "first") == "Inqueue" and node_of(h, "first") == ""
    return h


@pytest.mark.parametrize("how", ["restart", "failover"])
def test_another_scheduler_worker_takes_up_what_the_first_admitted(harnesses, how):
    # A restarted scheduler, or a second worker taking the cycles, never saw "first" admitted:
    # it takes it up from the PodGroup's phase (Inqueue), so "second" does not get its room.
    h = admitted_but_unbound(harnesses)
    getattr(h, how)()
    h.attach_admission(node_groups=False)  # the new process's own check; a fresh snapshot
    assert h.snapshots() is not None and h.service.admission.ledger.workloads == {}
    workload(h, "second", "3")
    h.step(2)
    condition = held(h, "second")  # before: admitted into the snapshot's 4 free CPUs
    assert "largest free 1 CPU" in condition["message"]
    assert uid_of(h, "first") in h.service.admission.ledger

    h.core.patch_namespaced_pod("first", NS, {"spec": {"schedulingGates": None}})
    h.step(3)
    assert running(h, "first") and node_of(h, "first") == "n0"
    assert node_of(h, "second") == ""


def test_a_new_scheduler_worker_does_not_say_again_what_a_podgroup_condition_says(harnesses):
    # "second" is held; the worker that takes over meets it for the first time, and holds it
    # for the same reason: its condition says so already, so no second event.
    h = admitted_but_unbound(harnesses)
    workload(h, "second", "3")
    h.step(2)
    held(h, "second")
    h.failover()
    h.attach_admission(node_groups=False)
    h.step(2)
    held(h, "second")
    reasons = [e.reason for e in events_for(h, "second")]
    assert reasons.count("InsufficientNodeCapacity") == 1, reasons
