"""Admission-check states (Pending / Ready / Retry) and Kueue KEP-3211's Story 1 with a queue."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler.admission.check import CONDITION_TYPE, AdmissionChecker, CheckState
from scheduler.admission.monitor import build_snapshot
from tests.builders import node, pod, podgroup
from tests.scheduler.admission.helpers import T0, story1_snapshot


class Queue:
    """Just enough of a queue's capability check (Kueue's ClusterQueue quota) for Story 1."""

    def __init__(self, capability_milli, used_milli):
        self.capability, self.used = capability_milli, used_milli

    def has_room(self, cpu_milli):
        return self.used + cpu_milli <= self.capability


def enqueue(queue, checker, name, cpu, snapshot):
    """Enqueue action: queue check first, then the node-capacity check if a checker is given."""
    milli = int(cpu) * 1000
    if not queue.has_room(milli):
        return "refused by queue"
    if checker is not None:
        result = checker.check(
            podgroup(name, namespace="ml"),
            [pod(name, cpu, namespace="ml", guaranteed=True)],
            snapshot,
            T0,
        )
        if not result.admit:
            return result.message
    queue.used += milli
    return "admitted"


def test_story1_without_the_check_false_admission_blocks_the_fitting_workload():
    queue, snapshot = Queue(12000, 8000), story1_snapshot()
    assert enqueue(queue, None, "three", "3", snapshot) == "admitted"  # yet no node can run it
    assert enqueue(queue, None, "two", "2", snapshot) == "refused by queue"


def test_story1_with_the_check_holds_three_and_admits_two():
    queue, snapshot, checker = Queue(12000, 8000), story1_snapshot(), AdmissionChecker()
    held = enqueue(queue, checker, "three", "3", snapshot)
    assert held.startswith("no suitable node has 3 CPU free for pod ml/three")
    assert enqueue(queue, checker, "two", "2", snapshot) == "admitted"
    assert queue.used == 10000


def test_retry_holds_until_retry_time_then_reevaluates():
    checker, snapshot = AdmissionChecker(retry_after_s=30), story1_snapshot()
    first = checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "3", namespace="ml", guaranteed=True)],
        snapshot,
        T0,
    )
    assert first.state is CheckState.RETRY and first.reason == "InsufficientNodeCapacity"
    assert first.retry_at == T0 + timedelta(seconds=30)
    assert first.message.endswith("retrying in 30 s")
    assert first.event() == {
        "type": "Warning",
        "reason": "InsufficientNodeCapacity",
        "message": first.message,
    }

    # Capacity frees up, but the retry time has not come: same answer, no new event.
    freed = build_snapshot(
        [node(f"node-{i}", memory="16Gi") for i in range(4)], [], T0 + timedelta(seconds=10)
    )
    early = checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "3", namespace="ml", guaranteed=True)],
        freed,
        T0 + timedelta(seconds=10),
    )
    assert early.state is CheckState.RETRY and early.event() is None

    later = checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "3", namespace="ml", guaranteed=True)],
        freed,
        T0 + timedelta(seconds=30),
    )
    assert later.state is CheckState.READY and later.admit
    assert later.event()["type"] == "Normal"
    assert later.condition()["status"] == "True"


def test_still_failing_retry_does_not_repeat_the_event():
    checker, snapshot = AdmissionChecker(), story1_snapshot()
    checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "3", namespace="ml", guaranteed=True)],
        snapshot,
        T0,
    )
    again = checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "3", namespace="ml", guaranteed=True)],
        snapshot,
        T0 + timedelta(seconds=60),
    )
    assert again.state is CheckState.RETRY and again.event() is None
    assert again.since == T0 and again.retry_at == T0 + timedelta(seconds=120)


def test_condition_shape_for_a_podgroup():
    result = AdmissionChecker().check(
        podgroup("w", namespace="ml"),
        [pod("w", "3", namespace="ml", guaranteed=True)],
        story1_snapshot(),
        T0,
    )
    assert result.condition() == {
        "type": CONDITION_TYPE,
        "status": "False",
        "reason": "InsufficientNodeCapacity",
        "message": result.message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def test_pending_without_snapshot_or_with_stale_one():
    checker = AdmissionChecker(max_snapshot_age_s=120)
    waiting = checker.check(
        podgroup("w", namespace="ml"), [pod("w", "1", namespace="ml", guaranteed=True)], None, T0
    )
    assert (waiting.state, waiting.reason) == (CheckState.PENDING, "WaitingForSnapshot")
    assert waiting.condition()["status"] == "Unknown"
    stale = checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "1", namespace="ml", guaranteed=True)],
        story1_snapshot(),
        T0 + timedelta(minutes=5),
    )
    assert (stale.state, stale.reason) == (CheckState.PENDING, "SnapshotStale")
    fresh = checker.check(
        podgroup("w", namespace="ml"),
        [pod("w", "1", namespace="ml", guaranteed=True)],
        story1_snapshot(),
        T0 + timedelta(seconds=5),
    )
    assert fresh.state is CheckState.READY


def test_non_guaranteed_is_ready_without_the_check():
    burstable = pod("b", None, None, requests={"cpu": "30"}, namespace="ml")
    result = AdmissionChecker().check(
        podgroup("b", namespace="ml"), [burstable], story1_snapshot(), T0
    )
    assert (result.state, result.reason) == (CheckState.READY, "NotGuaranteed")


def test_unknown_is_held_unless_configured_to_admit():
    from tests.scheduler.admission.test_evaluator import hard_instance_sizes

    pods = [
        pod(f"p{i}", f"{s}m", "1Mi", namespace="ml", guaranteed=True)
        for i, s in enumerate(hard_instance_sizes())
    ]
    snap = build_snapshot([node(f"n{i}", "1", "1Gi") for i in range(10)], [], T0)
    held = AdmissionChecker(budget_s=0.0).check(podgroup("h", namespace="ml"), pods, snap, T0)
    assert (held.state, held.reason) == (CheckState.RETRY, "NodeCapacityUnknown")
    admitted = AdmissionChecker(budget_s=0.0, admit_unknown=True).check(
        podgroup("h", namespace="ml"), pods, snap, T0
    )
    assert (admitted.state, admitted.reason) == (CheckState.READY, "NodeCapacityUnknown")


def test_forget_and_missing_uid():
    checker = AdmissionChecker()
    checker.check(
        podgroup("w", namespace="ml", uid="pg-w"),
        [pod("w", "1", namespace="ml", guaranteed=True)],
        story1_snapshot(),
        T0,
    )
    assert checker.state_of("pg-w").state is CheckState.READY
    checker.forget("pg-w")
    assert checker.state_of("pg-w") is None
    with pytest.raises(ValueError, match="podgroup ml/x: metadata.uid"):
        checker.check(podgroup("x", namespace="ml", uid=None), [], None, T0)
