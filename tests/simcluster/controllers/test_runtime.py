from __future__ import annotations

import time

import pytest

from scheduler.clock import VirtualClock, WallClock
from simcluster.catalog import resolve
from simcluster.runtime import Simulation
from simcluster.scenario import parse
from simcluster.store import Store

START = 1_700_000_000.0

SMALL = {
    "name": "small",
    "namespaces": [{"name": "team"}],
    "queues": [{"name": "q", "spec": {"capability": {"cpu": "2"}}}],
    "nodes": [{"name": "n1", "capacity": {"cpu": "4", "memory": "8Gi"}}],
    "workload": [
        {"at": 0, "name": "first", "namespace": "team", "requests": {"cpu": "1"}},
        {
            "at": 30,
            "name": "gang",
            "namespace": "team",
            "replicas": 2,
            "podGroup": {},
            "queue": "q",
            "requests": {"cpu": "1"},
        },
    ],
}


def names(store: Store, kind: str) -> list[str]:
    return [o["metadata"]["name"] for o in store.list(kind)[0]]


def test_step_installs_the_cluster_and_creates_pods_through_the_injected_path_on_time():
    clock = VirtualClock(START)
    store = Store(clock.now)
    created: list[str] = []

    def create_pod(obj: dict) -> dict:
        created.append(obj["metadata"]["name"])
        return store.create("pods", obj)

    sim = Simulation(store, clock, create_pod=create_pod, scenario=parse(SMALL))
    sim.step(START)
    assert names(store, "nodes") == ["n1"] and names(store, "queues") == ["q"]
    assert names(store, "namespaces") == ["team"]
    assert created == ["first"]
    sim.step(START + 29.9)
    assert created == ["first"] and sim.arrivals_left() == 1
    sim.step(START + 30)
    assert created == ["first", "gang-0", "gang-1"]
    assert names(store, "podgroups") == ["gang"]  # podgroups go straight into the store
    assert sim.arrivals_left() == 0


def test_pods_the_api_refuses_are_reported_and_the_rest_still_arrive():
    clock = VirtualClock(START)
    store = Store(clock.now)

    def refuse_first(obj: dict) -> dict:
        if obj["metadata"]["name"] == "first":
            raise ValueError("admission webhook denied the request")
        return store.create("pods", obj)

    sim = Simulation(store, clock, create_pod=refuse_first, scenario=parse(SMALL))
    sim.step(START)  # the first step fixes the start: arrivals count from here
    sim.step(START + 60)
    assert names(store, "pods") == ["gang-0", "gang-1"]
    assert sim.errors == ["pod team/first: admission webhook denied the request"]


def test_an_unknown_autoscaler_is_refused():
    with pytest.raises(ValueError, match="cluster-autoscaler"):
        Simulation(Store(time.time), WallClock(), autoscaler="gke")


def mark_unschedulable(store: Store, namespace: str, name: str) -> None:
    """What the scheduler does to a pod that passed its queue but fits no node."""

    def change(obj: dict) -> None:
        obj["status"] = {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }

    store.mutate("pods", namespace, name, change)


@pytest.mark.parametrize("autoscaler", ["cluster-autoscaler", "karpenter"])
def test_demo_scale_up_for_cluster_limited_pods_and_none_for_the_oversized_one(autoscaler):
    clock = VirtualClock(START)
    store = Store(clock.now)
    sim = Simulation(store, clock, autoscaler=autoscaler, scenario=resolve("demo"))
    for t in range(0, 21):
        sim.step(START + t)
    for name in ("highmem-0", "highmem-1", "too-big"):
        mark_unschedulable(store, "prod", name)
    for t in range(21, 120):
        sim.step(START + t)
    (record,) = sim.ledger.scale_ups
    assert record.node_group == "highmem"
    assert sorted(p.name for p in record.pods) == ["highmem-0", "highmem-1"]
    assert all(p.could_run for p in record.pods)
    assert record.node_ready_at == record.time + 60  # the group's provision delay
    assert record.node_name in names(store, "nodes")  # pending triggering pods keep it
    report = sim.report()
    assert report["autoscaler"] == autoscaler
    assert report["summary"]["scale_ups"] == 1 and report["summary"]["false_scale_ups"] == 0
    assert report["scale_ups"][0]["node_group"] == "highmem"
    no_fit = [
        e
        for e in store.list("events")[0]
        if e["reason"] in ("NotTriggerScaleUp", "FailedScheduling")
    ]
    assert [e["involvedObject"]["name"] for e in no_fit] == ["too-big"]


def test_start_and_stop_run_the_loop_on_a_sped_up_wall_clock():
    clock = WallClock(speed=50.0, start=START)
    store = Store(clock.now)
    scenario = parse(
        {
            "nodes": [{"name": "n1", "capacity": {"cpu": "4"}}],
            "namespaces": [{"name": "team"}],
            "workload": [{"at": 1, "name": "bound", "namespace": "team"}],
        }
    )
    scenario.arrivals[0].pods[0]["spec"]["nodeName"] = "n1"
    sim = Simulation(store, clock, scenario=scenario, tick=0.01)
    sim.start()
    try:
        deadline = time.time() + 5
        while time.time() < deadline:
            pods = store.list("pods")[0]
            if pods and pods[0].get("status", {}).get("phase") == "Running":
                break
            time.sleep(0.02)
    finally:
        sim.stop()
    assert store.list("pods")[0][0]["status"]["phase"] == "Running"
    assert sim._thread is None


def test_attached_to_a_virtual_clock_it_steps_between_other_events():
    clock = VirtualClock(START)
    store = Store(clock.now)
    sim = Simulation(store, clock, scenario=parse(SMALL))
    sim.attach(clock, every=1.0)
    seen: list[list[str]] = []
    clock.schedule(START + 30.5, lambda: seen.append(names(store, "pods")))
    clock.run_until(START + 31)
    assert seen == [["first", "gang-0", "gang-1"]]
