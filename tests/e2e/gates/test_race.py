"""The race of Volcano's gate-controlled scheduling design, played through the simulated cluster's API with a real scheduler.

pod-1, pod-2 and pod-3 ask for 1 CPU / 1 GiB each; queue q holds 1 CPU / 1 GiB; pod-2 wants a
node (pool=new) that does not exist yet. With the reservation, the queue capacity pod-2 was
ungated for stays its own, so the node the autoscaler adds for it is the node it runs on. Without
it, pod-3 slips in and pod-2 can never run.
"""

from __future__ import annotations

import pytest

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from tests.builders import body, node, pod, podgroup
from tests.e2e.harness import Harness, condition, config_with, gates

SCENARIO = {
    "namespaces": [{"name": "team"}],
    "queues": [{"name": "q", "spec": {"capability": {"cpu": "1", "memory": "1Gi"}}}],
    "nodes": [{"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi"}}],
    "kubelet": {"startupDelay": 1},
}


NEW_NODE = body(node("n2", "8", "32Gi", labels={"pool": "new", "kubernetes.io/hostname": "n2"}))


def create_gated_pod(h: Harness, name: str, **spec) -> None:
    """A pod as the webhook leaves it (annotated, gated) in its own PodGroup in queue q.

    The PodGroup has no minResources, as most users write them: enqueue admits it at once, and
    the queue's capability is checked when the pod is allocated — where the design's race lives.
    """
    group = podgroup(f"pg-{name}", namespace="team", queue="q")
    h.custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "team", "podgroups", body(group)
    )
    gated = pod(
        name,
        namespace="team",
        group=f"pg-{name}",
        gates=[QUEUE_ALLOCATION_GATE],
        opt_in=True,
        spec=spec,
    )
    h.core.create_namespaced_pod("team", body(gated))


@pytest.fixture
def race(request):
    harness = Harness(SCENARIO, config=config_with(request.param))
    yield harness
    harness.close()


def play_until_pod_3_decided(h: Harness) -> None:
    create_gated_pod(h, "pod-1")
    h.clock.advance(1)  # pod-1 is the older, so the first in line
    create_gated_pod(h, "pod-2", nodeSelector={"pool": "new"})
    h.step(3)
    assert h.pod("pod-1", "team")["spec"].get("nodeName") == "n1"
    assert h.pod("pod-1", "team")["status"]["phase"] == "Running"
    assert gates(h.pod("pod-2", "team")) == [QUEUE_ALLOCATION_GATE]  # the queue is full
    assert condition(h.pod("pod-2", "team"))["reason"] == "SchedulingGated"

    h.core.delete_namespaced_pod("pod-1", "team", grace_period_seconds=0)
    create_gated_pod(h, "pod-3")
    h.step(3)
    pod2 = h.pod("pod-2", "team")
    assert gates(pod2) == [] and not pod2["spec"].get("nodeName")


@pytest.mark.parametrize("race", [{"gateReservation": True}], indirect=True)
def test_with_the_reservation_pod_2_keeps_its_queue_capacity_and_runs_on_the_new_node(race):
    h = race
    play_until_pod_3_decided(h)
    # Ungated and waiting for a node: now, and only now, Unschedulable for the autoscaler.
    assert condition(h.pod("pod-2", "team"))["reason"] == "Unschedulable"
    assert (
        "didn't match Pod's node affinity/selector" in condition(h.pod("pod-2", "team"))["message"]
    )
    pod3 = h.pod("pod-3", "team")
    assert gates(pod3) == [QUEUE_ALLOCATION_GATE]  # the queue is held for pod-2
    assert condition(pod3)["reason"] == "SchedulingGated"
    reserved = {q.name: q.reserved for q in h.reports[-1].queues}["q"]
    assert reserved == {"cpu": 1000, "memory": 2**30}

    h.store.create("nodes", NEW_NODE)
    h.step(3)
    assert h.pod("pod-2", "team")["spec"]["nodeName"] == "n2"
    assert gates(h.pod("pod-3", "team")) == [QUEUE_ALLOCATION_GATE]  # one at a time, still


@pytest.mark.parametrize("race", [{"gateReservation": False}], indirect=True)
def test_without_the_reservation_pod_3_takes_the_capacity_and_pod_2_never_runs(race):
    h = race
    play_until_pod_3_decided(h)
    assert h.pod("pod-3", "team")["spec"]["nodeName"] == "n1"  # the race
    # pod-2 was Unschedulable for a cycle (the autoscaler is buying its node); now its queue is
    # what it lacks, so it says so, and no further node is bought for it.
    assert condition(h.pod("pod-2", "team"))["reason"] == "SchedulingSkipped"

    h.store.create("nodes", NEW_NODE)
    h.step(5)
    pod2 = h.pod("pod-2", "team")
    assert not pod2["spec"].get("nodeName")  # the new node is there, the queue is not
    assert "queue q capability exceeded" in condition(pod2)["message"]
