"""Retry timing: a held workload is not evaluated again before ``retryAfter`` (60 s), is after
it, and is admitted and runs once capacity frees and the resource monitor has seen it."""

from __future__ import annotations

import pytest

from scheduler.admission import check
from tests.e2e.admission.flow import (
    GROUP,
    NS,
    VERSION,
    capacity_condition,
    events_for,
    node_of,
    phase,
    running,
    start,
    workload,
)
from tests.e2e.admission.test_story1 import NODES, SCENARIO


@pytest.fixture
def evaluations(monkeypatch) -> list[str]:
    """The names of the first pod of every workload the checker evaluates, in order."""
    seen: list[str] = []
    real = check.check_workload

    def counting(pods, awaited, snapshot, **kwargs):
        seen.append(pods[0]["metadata"]["name"] if pods else "")
        return real(pods, awaited, snapshot, **kwargs)

    monkeypatch.setattr(check, "check_workload", counting)
    return seen


@pytest.fixture
def h():
    harness = start(SCENARIO)
    for node in NODES:
        workload(harness, f"base-{node}", "2", nodeSelector={"kubernetes.io/hostname": node})
    harness.step(3)
    harness.snapshots.refresh()
    yield harness
    harness.close()


def test_held_workload_is_evaluated_again_only_after_60_s_then_runs_when_capacity_frees(
    h, evaluations
):
    workload(h, "three", "3")
    h.step(1)
    held_at = h.clock.now() - 1
    assert evaluations.count("three") == 1
    condition = capacity_condition(h, "three")
    assert condition["status"] == "False"

    h.step(58)  # up to 59 s after the first evaluation: the Retry holds, no new work
    assert evaluations.count("three") == 1
    assert phase(h, "three") == "Pending"
    h.step(2)  # 60 s have passed: evaluated again (the cluster has not changed: held again)
    assert evaluations.count("three") == 2
    assert phase(h, "three") == "Pending"
    # Same state and reason: the condition keeps its transition time and no new event.
    assert capacity_condition(h, "three")["lastTransitionTime"] == condition["lastTransitionTime"]
    assert len([e for e in events_for(h, "three") if e.reason == "InsufficientNodeCapacity"]) == 1

    # Capacity frees: base-n0's job ends. The monitor sees it within its 60 s period, and the
    # next retry after that admits the workload.
    h.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "base-n0")
    h.core.delete_namespaced_pod("base-n0", NS)
    freed_at = h.clock.now()
    while phase(h, "three") == "Pending" and h.clock.now() < freed_at + 130:
        h.step(1)
    admitted_at = h.clock.now()
    assert phase(h, "three") in ("Inqueue", "Running")
    assert admitted_at - held_at >= 120  # only at a retry, never in between
    h.step(3)
    assert running(h, "three") and node_of(h, "three") == "n0"
    condition = capacity_condition(h, "three")
    assert (condition["status"], condition["reason"]) == ("True", "NodeCapacityAvailable")
    reasons = [e.reason for e in events_for(h, "three")]
    assert "NodeCapacityAvailable" in reasons and "InsufficientNodeCapacity" in reasons


def test_checker_state_is_forgotten_when_the_podgroup_is_deleted(h):
    workload(h, "three", "3")
    h.step(1)
    uid = h.custom.get_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "three")[
        "metadata"
    ]["uid"]
    assert h.service.admission.checker.state_of(uid) is not None
    h.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "three")
    h.core.delete_namespaced_pod("three", NS)
    h.step(2)
    assert h.service.admission.checker.state_of(uid) is None
