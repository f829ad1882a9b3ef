"""False scale-ups, landing and wasted node-time, measured on hand-built pods."""

from __future__ import annotations

import json

import pytest

from scheduler.api.labels import SCALE_UP_ANNOTATION
from simcluster.autoscaler import ClusterAutoscaler, Karpenter
from tests.builders import podgroup
from tests.simcluster.controllers.helpers import START, cluster, group, node, pod, queue, run


def bind(store, name: str, node_name: str) -> None:
    def change(obj: dict) -> None:
        obj["spec"]["nodeName"] = node_name
        obj["status"] = {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
        }

    store.mutate("pods", "team", name, change)


@pytest.mark.parametrize("scaler_class", [ClusterAutoscaler, Karpenter])
def test_a_pod_its_queue_would_never_admit_makes_a_false_scale_up(scaler_class):
    store, clock = cluster()
    queue(store, "full", cpu="1")
    queue(store, "roomy", cpu="10")
    node(store, "n1", cpu="1")
    pod(store, "running", state="running", node_name="n1", queue="full")
    pod(store, "queue-limited", cpu="2", queue="full", node_selector={"pool": "a"})
    pod(store, "cluster-limited", cpu="2", queue="roomy", node_selector={"pool": "b"})
    scaler = scaler_class(store, [group("a"), group("b")])
    run(scaler.tick, clock, until=15)
    records = {r.node_group: r for r in scaler.ledger.scale_ups}
    assert records["a"].false_scale_up and not records["a"].pods[0].could_run
    assert records["a"].pods[0].queue == "full"
    assert not records["b"].false_scale_up and records["b"].pods[0].could_run
    assert scaler.ledger.summary()["false_scale_ups"] == 1


def test_a_best_effort_pod_in_a_queue_above_its_capability_could_run():
    """Its queue's capability was lowered under the pods running there: a pod asking for
    nothing is still admitted (Sluice's backfill, Volcano's), so a node bought for it is no
    false scale-up; a pod asking for CPU there would be refused."""
    store, clock = cluster()
    queue(store, "lowered", cpu="1")
    node(store, "n1", cpu="4")
    pod(store, "running", cpu="2", state="running", node_name="n1", queue="lowered")
    pod(store, "best-effort", cpu=None, memory=None, queue="lowered", node_selector={"pool": "a"})
    pod(store, "wants-cpu", cpu="1", memory=None, queue="lowered", node_selector={"pool": "b"})
    scaler = ClusterAutoscaler(store, [group("a"), group("b")])
    run(scaler.tick, clock, until=15)
    pods = {p.name: p for r in scaler.ledger.scale_ups for p in r.pods}
    assert pods["best-effort"].could_run
    assert not pods["wants-cpu"].could_run
    assert scaler.ledger.summary()["false_scale_ups"] == 1


def test_queue_comes_from_the_podgroup_before_the_annotation():
    store, clock = cluster()
    queue(store, "tight", cpu="1")
    store.create(
        "podgroups", podgroup("gang", namespace="team", queue="tight", uid=None, created=None)
    )
    pod(
        store,
        "member",
        cpu="2",
        queue="elsewhere",
        annotations={"scheduling.k8s.io/group-name": "gang"},
    )
    pod(store, "no-queue", cpu="2")
    scaler = ClusterAutoscaler(store, [group(max_size=5)])
    scaler.tick(START)
    pods = {p.name: p for r in scaler.ledger.scale_ups for p in r.pods}
    assert (pods["member"].queue, pods["member"].could_run) == ("tight", False)
    assert (pods["no-queue"].queue, pods["no-queue"].could_run) == ("default", True)


def test_landing_and_wasted_node_time_are_measured_and_published():
    store, clock = cluster()
    pod(store, "p", cpu="2")
    scaler = ClusterAutoscaler(store, [group(delay=10)])

    def step(now: float) -> None:
        scaler.tick(now)
        scaler.ledger.observe(store, now)

    run(step, clock, until=60)  # decided at 0, node at 10, empty for 50 s
    (record,) = scaler.ledger.scale_ups
    assert not record.landed
    assert record.wasted_seconds == pytest.approx(50.0)
    pod(store, "ds", state="running", node_name="big-1", owner="DaemonSet")
    run(step, clock, until=70)  # a DaemonSet pod does not make the node useful
    assert record.wasted_seconds == pytest.approx(60.0)
    bind(store, "p", "big-1")
    run(step, clock, until=200)
    assert record.landed and record.pods[0].landed
    assert record.wasted_seconds == pytest.approx(60.0)  # nothing charged once it is used
    published = json.loads(
        store.get("nodes", "", "big-1")["metadata"]["annotations"][SCALE_UP_ANNOTATION]
    )
    assert published["landed"] is True and published["pods"][0]["landed"] is True
    assert record.to_dict()["node_ready_at"] == START + 10
    assert scaler.ledger.summary()["landed_scale_ups"] == 1


def test_wasted_time_stops_when_the_node_is_scaled_down():
    store, clock = cluster()
    pod(store, "p", cpu="2")
    scaler = ClusterAutoscaler(store, [group(delay=0)], scale_down_unneeded=100)
    store_pod_gone = False

    def step(now: float) -> None:
        nonlocal store_pod_gone
        if now >= START + 10 and not store_pod_gone:
            store.delete("pods", "team", "p")  # the pod gave up: the node is pure waste
            store_pod_gone = True
        scaler.tick(now)
        scaler.ledger.observe(store, now)

    run(step, clock, until=1000, every=10)
    (record,) = scaler.ledger.scale_ups
    assert record.node_removed_at is not None
    assert record.wasted_seconds == pytest.approx(record.node_removed_at - record.node_ready_at)


def test_a_queue_with_a_malformed_capability_counts_as_unlimited():
    store, clock = cluster()
    queue(store, "odd", cpu="x")
    pod(store, "p", cpu="2", queue="odd")
    scaler = ClusterAutoscaler(store, [group()])
    scaler.tick(START)
    assert scaler.ledger.scale_ups[0].pods[0].could_run


def test_a_terminating_pod_does_not_fill_its_queue():
    """A pod being deleted releases its share within its grace period, and Volcano's queue
    figures count only tasks that hold resources (api.AllocatedStatus: Releasing is not
    allocated): a pod whose queue is full only of a terminating pod will run there, so the
    node bought for it is no false scale-up. A queue full of live pods still refuses."""
    store, clock = cluster()
    queue(store, "leaving", cpu="2")
    queue(store, "staying", cpu="2")
    node(store, "n1", cpu="8")
    pod(store, "going", cpu="2", state="running", node_name="n1", queue="leaving")
    pod(store, "kept", cpu="2", state="running", node_name="n1", queue="staying")
    store.mutate(  # deleted with a grace period: terminating, still bound (kube-apiserver)
        "pods", "team", "going",
        lambda p: p["metadata"].update(deletionTimestamp="2023-11-14T22:13:50Z",
                                       deletionGracePeriodSeconds=30),
    )  # fmt: skip
    pod(store, "after-going", cpu="1", queue="leaving", node_selector={"pool": "a"})
    pod(store, "after-kept", cpu="1", queue="staying", node_selector={"pool": "b"})
    scaler = ClusterAutoscaler(store, [group("a"), group("b")])
    run(scaler.tick, clock, until=15)
    pods = {p.name: p for r in scaler.ledger.scale_ups for p in r.pods}
    assert pods["after-going"].could_run
    assert not pods["after-kept"].could_run
    assert scaler.ledger.summary()["false_scale_ups"] == 1
