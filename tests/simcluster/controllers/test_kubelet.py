from __future__ import annotations

import pytest

from simcluster.kubelet import Kubelet
from simcluster.store import NotFound
from tests.simcluster.controllers.helpers import START, cluster, events, node, pod, run


def phase(store, name: str) -> str:
    return store.get("pods", "team", name)["status"]["phase"]


def test_bound_pod_runs_after_the_startup_delay_then_succeeds_after_its_duration():
    store, clock = cluster()
    node(store, "n1")
    pod(store, "job", state="bound", node_name="n1", annotations={"sim.sluice.io/duration": "5"})
    kubelet = Kubelet(store, startup_delay=2.0)
    run(kubelet.tick, clock, until=1)
    assert phase(store, "job") == "Pending"
    run(kubelet.tick, clock, until=2)
    running = store.get("pods", "team", "job")
    assert running["status"]["phase"] == "Running"
    assert running["status"]["startTime"]
    conditions = {c["type"]: c["status"] for c in running["status"]["conditions"]}
    assert conditions == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert running["status"]["containerStatuses"][0]["state"]["running"]
    started = events(store, "Started")
    assert started[0]["involvedObject"]["name"] == "job"
    assert started[0]["involvedObject"]["kind"] == "Pod"
    run(kubelet.tick, clock, until=6)
    assert phase(store, "job") == "Running"
    run(kubelet.tick, clock, until=7)
    assert phase(store, "job") == "Succeeded"  # Succeeded pods stay, like real ones.


def test_a_pod_without_a_duration_runs_forever():
    store, clock = cluster()
    node(store, "n1")
    pod(store, "server", state="bound", node_name="n1")
    kubelet = Kubelet(store)
    run(kubelet.tick, clock, until=3600, every=60)
    assert phase(store, "server") == "Running"


def test_completed_pods_are_deleted_when_the_scenario_says_so():
    store, clock = cluster()
    node(store, "n1")
    pod(store, "job", state="bound", node_name="n1", annotations={"sim.sluice.io/duration": "1"})
    run(Kubelet(store, startup_delay=0, delete_completed=True).tick, clock, until=2)
    with pytest.raises(NotFound):
        store.get("pods", "team", "job")


def test_unbound_and_nodeless_pods_are_left_alone():
    store, clock = cluster()
    pod(store, "waiting", state="unschedulable")
    pod(store, "orphan", state="bound", node_name="no-such-node")
    run(Kubelet(store).tick, clock, until=10)
    assert phase(store, "waiting") == "Pending"
    assert phase(store, "orphan") == "Pending"


def test_deleted_pod_is_killed_and_disappears_after_its_grace_period():
    store, clock = cluster()
    node(store, "n1")
    pod(store, "victim", state="running", node_name="n1")

    def delete(obj: dict) -> None:
        obj["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z"
        obj["metadata"]["deletionGracePeriodSeconds"] = 10

    kubelet = Kubelet(store)
    kubelet.tick(clock.now())
    store.mutate("pods", "team", "victim", delete)
    run(kubelet.tick, clock, until=9)
    assert store.get("pods", "team", "victim")
    assert [e["involvedObject"]["name"] for e in events(store, "Killing")] == ["victim"]
    run(kubelet.tick, clock, until=10)
    with pytest.raises(NotFound):
        store.get("pods", "team", "victim")


def test_deletion_grace_defaults_to_thirty_seconds_and_unbound_pods_go_at_once():
    store, clock = cluster()
    node(store, "n1")
    pod(store, "bound", state="running", node_name="n1")
    pod(store, "never-bound", state="unschedulable")
    for name in ("bound", "never-bound"):
        store.mutate(
            "pods",
            "team",
            name,
            lambda o: o["metadata"].update(deletionTimestamp="2023-11-14T22:13:20Z"),
        )
    kubelet = Kubelet(store)
    kubelet.tick(START)
    with pytest.raises(NotFound):
        store.get("pods", "team", "never-bound")
    run(kubelet.tick, clock, until=29)
    assert store.get("pods", "team", "bound")
    run(kubelet.tick, clock, until=30)
    with pytest.raises(NotFound):
        store.get("pods", "team", "bound")


def test_nodes_get_a_ready_condition_and_allocatable():
    store, clock = cluster()
    store.create("nodes", {"metadata": {"name": "bare"}, "status": {"capacity": {"cpu": "2"}}})
    Kubelet(store).tick(clock.now())
    status = store.get("nodes", "", "bare")["status"]
    assert status["allocatable"] == {"cpu": "2"}
    assert [c["type"] for c in status["conditions"]] == ["Ready"]


def test_a_round_visits_only_the_pods_that_changed_or_wait_on_time(monkeypatch):
    """100 pods running forever cost a round nothing; a newly bound pod is visited until it
    has started, then no more (a real kubelet works from its pod watch the same way)."""
    store, clock = cluster()
    node(store, "n1", cpu="1000", memory="1000Gi")
    for i in range(100):
        pod(store, f"run-{i:03d}", state="bound", node_name="n1", cpu="10m", memory="10Mi")
    kubelet = Kubelet(store, startup_delay=2.0)
    run(kubelet.tick, clock, until=3)
    assert {phase(store, f"run-{i:03d}") for i in range(100)} == {"Running"}
    visited: list[str] = []
    real = kubelet._advance
    monkeypatch.setattr(
        kubelet, "_advance", lambda p, *a: visited.append(p["metadata"]["name"]) or real(p, *a)
    )
    monkeypatch.setattr(store, "list", lambda *a, **k: pytest.fail("a round listed the store"))
    run(kubelet.tick, clock, until=5)
    assert visited == []
    pod(store, "late", state="bound", node_name="n1", cpu="10m", memory="10Mi")
    run(kubelet.tick, clock, until=10)
    assert phase(store, "late") == "Running"
    assert set(visited) == {"late"} and 2 <= len(visited) <= 4


def test_admission_counts_pods_admitted_in_earlier_rounds_and_frees_finished_ones():
    store, clock = cluster()
    node(store, "n1", cpu="2")
    pod(store, "a", state="bound", node_name="n1", annotations={"sim.sluice.io/duration": "3"})
    kubelet = Kubelet(store, startup_delay=0)
    run(kubelet.tick, clock, until=1)
    pod(store, "b", state="bound", node_name="n1")
    pod(store, "c", state="bound", node_name="n1")
    run(kubelet.tick, clock, until=2)
    assert phase(store, "b") == "Running" and phase(store, "c") == "Failed"
    run(kubelet.tick, clock, until=5)
    assert phase(store, "a") == "Succeeded"
    pod(store, "d", state="bound", node_name="n1")
    run(kubelet.tick, clock, until=6)
    assert phase(store, "d") == "Running"  # a's cpu is free again
