"""Kueue KEP-3211's Story 1, end to end through the simulated cluster's API.

4 nodes x 4 CPU, queue q capped at 12 CPU, a 2-CPU Guaranteed job on every node; then a 3-CPU
Guaranteed single-pod workload, then a 2-CPU one. Without the check the 3-CPU workload is
admitted and never runs, and the 2-CPU one is refused by the queue. With it, the 3-CPU workload
is held with its reason and the 2-CPU one is admitted and runs.
"""

from __future__ import annotations

import pytest

from scheduler.admission.check import CONDITION_TYPE
from tests.e2e.admission.flow import (
    capacity_condition,
    events_for,
    node_of,
    phase,
    risk_of,
    running,
    start,
    workload,
)

NODES = [f"n{i}" for i in range(4)]
SCENARIO = {
    "namespaces": [{"name": "team"}],
    "queues": [{"name": "q", "spec": {"capability": {"cpu": "12"}}}],
    "nodes": [
        {"name": n, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}} for n in NODES
    ],
    "kubelet": {"startupDelay": 1},
}


def play_story(check: bool):
    h = start(SCENARIO, check=check)
    for node in NODES:  # "each Node currently has a Job occupying 2 cores"
        workload(h, f"base-{node}", "2", nodeSelector={"kubernetes.io/hostname": node})
    h.step(3)
    assert all(running(h, f"base-{n}") for n in NODES)
    h.snapshots.refresh()  # the resource monitor sees the cluster as it now is

    workload(h, "three", "3")
    h.step(3)
    h.risk_before_two = risk_of(h, "three")
    workload(h, "two", "2")
    h.step(5)
    return h


@pytest.fixture
def without_check():
    h = play_story(check=False)
    yield h
    h.close()


@pytest.fixture
def with_check():
    h = play_story(check=True)
    yield h
    h.close()


def test_without_the_check_the_3_cpu_workload_is_admitted_never_runs_and_blocks_the_queue(
    without_check,
):
    h = without_check
    assert phase(h, "three") == "Inqueue"
    assert node_of(h, "three") == ""
    assert phase(h, "two") == "Pending"
    assert node_of(h, "two") == ""
    waiting = {w.name: w.status.message for w in h.reports[-1].waiting}
    assert waiting["two"] == "queue resource quota insufficient: insufficient cpu"
    assert capacity_condition(h, "three") == {}  # the check was off: nothing recorded
    queue = {q.name: q for q in h.reports[-1].queues}["q"]
    assert queue.inqueue["cpu"] == 3000  # the false admission holds 3 CPU of the quota
    # The risk report still sees it: admitted, yet no node has 3 CPU free.
    risk = risk_of(h, "three")
    assert (risk.risk, risk.phase, risk.check_state) == ("fits_no_node_shape", "Inqueue", None)
    assert "3 CPU" in risk.explanation


def test_with_the_check_the_3_cpu_workload_is_held_and_the_2_cpu_one_runs(with_check):
    h = with_check
    assert phase(h, "three") == "Pending"
    assert node_of(h, "three") == ""
    condition = capacity_condition(h, "three")
    assert condition["type"] == CONDITION_TYPE
    assert (condition["status"], condition["reason"]) == ("False", "InsufficientNodeCapacity")
    assert "no suitable node has 3 CPU free for pod team/three" in condition["message"]
    assert "retrying in 60 s" in condition["message"]
    events = events_for(h, "three")
    assert [(e.type, e.reason) for e in events if e.reason == "InsufficientNodeCapacity"] == [
        ("Warning", "InsufficientNodeCapacity")
    ]  # one event, not one per cycle
    # The gang condition written after the actions kept ours.
    types = [c["type"] for c in h.custom.get_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "team", "podgroups", "three")["status"]["conditions"]]  # fmt: skip
    assert CONDITION_TYPE in types and "Unschedulable" in types

    assert phase(h, "two") == "Running"
    assert node_of(h, "two") in NODES and running(h, "two")
    assert capacity_condition(h, "two")["status"] == "True"
    queue = {q.name: q for q in h.reports[-1].queues}["q"]
    assert queue.inqueue.get("cpu", 0) == 0

    risk = h.risk_before_two
    assert (risk.risk, risk.phase, risk.check_state) == ("fits_no_node_shape", "Pending", "Retry")
    assert risk.certain and "3 CPU" in risk.explanation
    # Once "two" runs (10 of 12 CPU used) the queue itself has no room for "three" any more.
    risk = risk_of(h, "three")
    assert (risk.risk, risk.check_state) == ("waiting_for_queue", "Retry")
