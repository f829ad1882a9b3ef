"""KubeClusterClient and gate removal against the simulated API server (Kubernetes' rules)."""

from __future__ import annotations

import pytest

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.kube.client import Conflict, KubeClusterClient, NotFound
from scheduler.kube.gate_pool import GateRemovalPool
from scheduler.kube.gates import GateRemoval, remove_gate
from tests.builders import body, node, pod

OTHER_GATE = "example.com/quota"


@pytest.fixture
def cluster(sim) -> KubeClusterClient:
    sim.core.create_node(body(node("n1", ready=True)))
    return KubeClusterClient(sim.api_client)


def gated_pod(sim, name: str, *gates: str) -> dict:
    sim.core.create_namespaced_pod("default", body(pod(name, opt_in=True, gates=gates)))
    return KubeClusterClient(sim.api_client).get_pod("default", name)


def gates_of(cluster, name: str) -> list[str]:
    return [
        g["name"] for g in cluster.get_pod("default", name)["spec"].get("schedulingGates") or []
    ]


def test_bind_sets_the_node_and_podscheduled(sim, cluster):
    sim.core.create_namespaced_pod("default", body(pod("p")))

    cluster.bind(cluster.get_pod("default", "p"), "n1")

    bound = cluster.get_pod("default", "p")
    assert bound["spec"]["nodeName"] == "n1"
    condition = next(c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["status"] == "True"


def test_binding_a_gated_pod_is_refused_with_a_conflict(sim, cluster):
    gated = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)

    with pytest.raises(Conflict, match="non-empty .spec.schedulingGates"):
        cluster.bind(gated, "n1")


def test_pod_condition_and_nominated_node_are_patched_on_status(sim, cluster):
    sim.core.create_namespaced_pod("default", body(pod("p")))
    current = cluster.get_pod("default", "p")

    cluster.patch_pod_condition(
        current,
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes",
        },
    )
    cluster.patch_nominated_node(current, "n1")

    updated = cluster.get_pod("default", "p")
    condition = next(c for c in updated["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (condition["reason"], condition["message"]) == ("Unschedulable", "0/1 nodes")
    assert updated["status"]["nominatedNodeName"] == "n1"


def test_label_namespace_sets_and_removes_a_label(sim, cluster):
    cluster.label_namespace("default", QUEUE_ALLOCATION_GATE, "true")
    assert sim.core.read_namespace("default").metadata.labels[QUEUE_ALLOCATION_GATE] == "true"

    cluster.label_namespace("default", QUEUE_ALLOCATION_GATE, None)
    assert QUEUE_ALLOCATION_GATE not in (sim.core.read_namespace("default").metadata.labels or {})


def test_record_event_is_listed_for_the_pod(sim, cluster):
    sim.core.create_namespaced_pod("default", body(pod("p")))

    cluster.record_event(
        cluster.get_pod("default", "p"), "Warning", "Unschedulable", "no node fits"
    )

    events = sim.core.list_namespaced_event("default").items
    assert [(e.involved_object.name, e.reason) for e in events] == [("p", "Unschedulable")]


def test_missing_pods_raise_not_found_naming_the_pod(cluster):
    with pytest.raises(NotFound, match="pod default/ghost"):
        cluster.get_pod("default", "ghost")


def test_remove_gate_keeps_other_gates_and_is_idempotent(sim, cluster):
    created = gated_pod(sim, "p", OTHER_GATE, QUEUE_ALLOCATION_GATE)

    first = remove_gate(cluster, "default", "p", created["metadata"]["uid"])
    second = remove_gate(cluster, "default", "p", created["metadata"]["uid"])

    assert (first, second) == (GateRemoval.REMOVED, GateRemoval.ALREADY_UNGATED)
    assert gates_of(cluster, "p") == [OTHER_GATE]


def test_remove_gate_skips_a_pod_that_is_gone_or_replaced(sim, cluster):
    created = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)

    assert remove_gate(cluster, "default", "ghost", "uid-1") is GateRemoval.POD_GONE
    assert remove_gate(cluster, "default", "p", "another-uid") is GateRemoval.POD_REPLACED
    assert gates_of(cluster, "p") == [QUEUE_ALLOCATION_GATE]
    assert created["metadata"]["uid"] != "another-uid"


def test_remove_gate_rereads_and_retries_after_a_conflict(sim, cluster):
    created = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    reads = []
    real_get = cluster.get_pod

    def get_then_change(namespace, name):
        fresh = real_get(namespace, name)
        if not reads:  # someone else writes between our read and our patch
            sim.core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"x": "1"}}})
        reads.append(fresh["metadata"]["resourceVersion"])
        return fresh

    cluster.get_pod = get_then_change
    outcome = remove_gate(cluster, "default", "p", created["metadata"]["uid"], sleep=lambda s: None)

    assert outcome is GateRemoval.REMOVED
    assert len(reads) == 2 and reads[0] != reads[1]
    assert gates_of(cluster, "p") == []


def test_the_bind_path_accepts_a_conflict_when_the_gate_is_already_gone(sim, cluster):
    stale = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    remove_gate(cluster, "default", "p", stale["metadata"]["uid"])  # the async worker was first

    cluster.remove_scheduling_gate(stale)  # stale resourceVersion: conflict, then re-read
    cluster.bind(stale, "n1")

    assert cluster.get_pod("default", "p")["spec"]["nodeName"] == "n1"


def test_the_bind_path_retries_when_the_conflict_was_another_change(sim, cluster):
    """The pod changed in something else (its reservation stamp, a label) since it was read:
    the removal is sent again against the fresh copy (client-go's RetryOnConflict); it used
    to fail the bind."""
    stale = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    cluster.stamp_reservation(stale, "2026-01-01T00:00:00Z")
    sim.core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"x": "1"}}})

    cluster.remove_scheduling_gate(stale)
    cluster.bind(stale, "n1")

    assert gates_of(cluster, "p") == []
    assert cluster.get_pod("default", "p")["spec"]["nodeName"] == "n1"


def test_the_bind_path_raises_when_the_pod_was_replaced(sim, cluster):
    stale = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    sim.core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)  # same name, another uid

    with pytest.raises(Conflict):
        cluster.remove_scheduling_gate(stale)
    assert gates_of(cluster, "p") == [QUEUE_ALLOCATION_GATE]


def test_a_reservation_stamp_lands_only_on_the_pod_that_was_checked(sim, cluster):
    stale = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    cluster.stamp_reservation(stale, "2026-01-01T00:00:00Z")
    annotations = cluster.get_pod("default", "p")["metadata"]["annotations"]
    assert annotations["sluice.io/queue-reservation-since"] == "2026-01-01T00:00:00Z"
    sim.core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    with pytest.raises(Exception, match="422|uid"):
        cluster.stamp_reservation(stale, "2026-01-02T00:00:00Z")
    fresh = cluster.get_pod("default", "p")["metadata"].get("annotations") or {}
    assert "sluice.io/queue-reservation-since" not in fresh


def test_the_gate_pool_removes_each_gate_once(sim, cluster):
    pods = [gated_pod(sim, f"p{i}", QUEUE_ALLOCATION_GATE) for i in range(5)]
    pool = GateRemovalPool(cluster, workers=2)
    try:
        for p in pods + pods:
            pool.submit("default", p["metadata"]["name"], p["metadata"]["uid"])
        assert pool.wait_idle(10)
    finally:
        pool.shutdown()

    assert all(gates_of(cluster, p["metadata"]["name"]) == [] for p in pods)
    assert pool.outcomes["removed"] == 5
    assert sum(pool.outcomes.values()) <= 10


def test_evict_marks_the_pod_terminating_and_records_why(sim, cluster):
    sim.core.create_namespaced_pod("default", body(pod("victim")))
    cluster.bind(cluster.get_pod("default", "victim"), "n1")

    cluster.evict(cluster.get_pod("default", "victim"), "reclaimed by queue q2")

    evicted = cluster.get_pod("default", "victim")
    assert evicted["metadata"]["deletionTimestamp"]
    events = sim.core.list_namespaced_event("default").items
    assert ("Evict", "reclaimed by queue q2") in [(e.reason, e.message) for e in events]


class Flaky:
    """A cluster whose pod reads fail with ``status`` the first ``failures`` times."""

    def __init__(self, real: KubeClusterClient, status: int, failures: int) -> None:
        self.real, self.status, self.failures = real, status, failures

    def get_pod(self, namespace, name):
        from scheduler.kube.client import ApiError

        if self.failures > 0:
            self.failures -= 1
            raise ApiError(self.status, f"pod {namespace}/{name}", "injected")
        return self.real.get_pod(namespace, name)

    def patch_pod(self, pod, patch):
        return self.real.patch_pod(pod, patch)


def test_the_gate_pool_tries_a_busy_api_again(sim, cluster):
    stale = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    given_up: list[str] = []
    pool = GateRemovalPool(Flaky(cluster, 503, 2), on_failure=given_up.append, backoff=0.0)
    pool.submit("default", "p", stale["metadata"]["uid"])
    assert pool.wait_idle()
    pool.shutdown()
    assert gates_of(cluster, "p") == [] and given_up == []


def test_the_gate_pool_hands_back_a_removal_it_gives_up(sim, cluster):
    """The cache then stops counting the pod as ungated: the next cycle decides again."""
    stale = gated_pod(sim, "p", QUEUE_ALLOCATION_GATE)
    given_up: list[str] = []
    pool = GateRemovalPool(Flaky(cluster, 500, 99), on_failure=given_up.append, backoff=0.0)
    pool.submit("default", "p", stale["metadata"]["uid"])
    assert pool.wait_idle()
    pool.shutdown()
    assert gates_of(cluster, "p") == [QUEUE_ALLOCATION_GATE]
    assert given_up == [stale["metadata"]["uid"]] and pool.outcomes["failed"] == 1
