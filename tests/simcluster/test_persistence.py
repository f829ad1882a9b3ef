"""``--state FILE``: the simulated cluster comes back as it was, after a clean stop or a kill -9
(simcluster/persistence.py: a snapshot and a write-ahead journal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simcluster.api.app import SimClusterOptions, build, start_journal
from simcluster.autoscaler import ClusterAutoscaler
from simcluster.autoscaler.common import ScalingGroup
from simcluster.autoscaler.records import QueueBook
from simcluster.persistence import journal_path, read_state
from simcluster.runtime import Simulation
from simcluster.store import Store
from tests.builders import body, namespace, node, pod, podgroup, queue
from tests.conftest import poll
from tests.simcluster.api.helpers import http

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """
name: two-waves
namespaces: [{name: team}]
queues: [{name: q, spec: {weight: 1}}]
nodes: [{namePrefix: n, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
workload:
  - {at: 0, name: first, namespace: team, queue: q, replicas: 2, requests: {cpu: "1"}}
  - {at: 100, name: second, namespace: team, queue: q, replicas: 1, requests: {cpu: "1"}}
"""


def objects(store: Store) -> dict:
    """Every object by kind and key, resourceVersions included."""
    dump = store.dump()
    return {
        kind: {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in items}
        for kind, items in dump["objects"].items()
        if items
    }


def options(tmp_path: Path, **kw) -> SimClusterOptions:
    return SimClusterOptions(
        state=str(tmp_path / "state.json"), kubeconfig=str(tmp_path / "kubeconfig"), **kw
    )


def fill(cluster) -> None:
    """One object of every kind the brief names, then updates and deletes."""
    cluster.create_object("namespaces", body(namespace("team")))
    cluster.create_object("nodes", body(node("n1", cpu="8", memory="32Gi")))
    cluster.create_object("queues", body(queue("q", capability={"cpu": "4"})))
    cluster.create_object("podgroups", body(podgroup("g", 2, namespace="team", queue="q")), "team")
    cluster.create_object(
        "priorityclasses",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "high"}, "value": 1000},
    )  # fmt: skip
    cluster.create_object(
        "configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "conf", "namespace": "team"}, "data": {"a": "1"}},
        "team",
    )  # fmt: skip
    for name in ("a", "b", "c"):
        cluster.create_object("pods", body(pod(name, namespace="team", queue="q")), "team")
    cluster.patch(
        "pods", "team", "a", "application/merge-patch+json", b'{"metadata":{"labels":{"x":"y"}}}'
    )
    cluster.delete("pods", "team", "c", {"gracePeriodSeconds": 0})
    cluster.patch(
        "configmaps", "team", "conf", "application/merge-patch+json", b'{"data":{"a":"2"}}'
    )


def test_a_killed_cluster_comes_back_with_every_object_and_version(tmp_path):
    sim = build(options(tmp_path, scenario="empty"))
    start_journal(sim)
    fill(sim.cluster)
    before, version = objects(sim.store), sim.store.resource_version
    # No stop(): as after kill -9, only the journal has the changes since the first snapshot.
    assert len(journal_path(tmp_path / "state.json").read_text().splitlines()) > 10

    restored = build(options(tmp_path, scenario="empty"))
    assert objects(restored.store) == before
    assert restored.store.resource_version == version
    for kind in ("nodes", "pods", "queues", "podgroups", "priorityclasses", "configmaps"):
        assert before[kind], kind
    assert ("team", "c") not in before["pods"]
    assert restored.store.get("configmaps", "team", "conf")["data"] == {"a": "2"}
    # Writes go on from the restored version, as after an etcd restore.
    created = restored.cluster.create_object("pods", body(pod("d", namespace="team")), "team")
    assert int(created["metadata"]["resourceVersion"]) == version + 1


def test_a_clean_stop_writes_a_snapshot_and_the_next_start_replays_nothing(tmp_path):
    sim = build(options(tmp_path, scenario="empty"))
    start_journal(sim)
    fill(sim.cluster)
    before = objects(sim.store)
    sim.stop()
    assert len(journal_path(tmp_path / "state.json").read_text().splitlines()) == 1  # header
    saved = read_state(tmp_path / "state.json")
    assert saved.replayed == 0 and saved.count("pods") == 2
    assert objects(build(options(tmp_path, scenario="empty")).store) == before


def test_a_torn_last_line_is_left_out_and_an_older_journal_is_not_replayed(tmp_path, caplog):
    sim = build(options(tmp_path, scenario="empty"))
    start_journal(sim)
    fill(sim.cluster)
    before = objects(sim.store)
    journal = journal_path(tmp_path / "state.json")
    with journal.open("ab") as handle:
        handle.write(b'{"rv": 999, "kind": "pods", "type": "DEL')  # killed mid-write
    assert objects(build(options(tmp_path, scenario="empty")).store) == before
    assert "torn" in caplog.text
    # A journal that follows another snapshot (a crash between snapshot and truncation).
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([json.dumps({"follows": "older"}), *lines[1:]]) + "\n")
    assert read_state(tmp_path / "state.json").replayed == 0


def test_a_state_file_that_does_not_read_is_an_error_saying_how_to_start_afresh(tmp_path):
    (tmp_path / "state.json").write_text('{"resourceVersion": 3, "objects": {"pods": [')
    with pytest.raises(ValueError, match=r"state.json does not read .*make run-fresh"):
        build(options(tmp_path, scenario="empty"))


def test_the_journal_is_compacted_into_the_snapshot_as_it_grows(tmp_path):
    sim = build(options(tmp_path, scenario="empty"))
    journal = start_journal(sim)
    journal.compact_bytes = 4_000
    fill(sim.cluster)
    for i in range(30):
        sim.cluster.create_object("pods", body(pod(f"p{i}", namespace="team")), "team")
    assert journal.snapshots > 2
    assert journal_path(tmp_path / "state.json").stat().st_size < 8_000
    assert objects(build(options(tmp_path, scenario="empty")).store) == objects(sim.store)


def test_the_clock_goes_on_from_where_it_was(tmp_path):
    sim = build(options(tmp_path, scenario="empty", speed=60))
    start_journal(sim)
    clock = sim.simulation.clock
    time.sleep(0.3)  # 18 simulated seconds
    restored = build(options(tmp_path, scenario="empty", speed=60)).simulation.clock
    # Same simulated time now (to 0.05 s of wall time at 60x), whatever the wall clock says.
    assert abs(restored.now() - clock.now()) < 3
    assert restored.now() - time.time() > 15


def test_the_scenario_goes_on_and_a_deleted_pod_is_not_created_again(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO)
    sim = build(options(tmp_path, scenario=str(scenario)))
    start_journal(sim)
    start = sim.simulation.clock.now()
    sim.simulation.step(start)
    assert {p["metadata"]["name"] for p in sim.store.list("pods")[0]} == {"first-0", "first-1"}
    sim.store.delete("pods", "team", "first-1")  # e.g. evicted, then gone
    sim.simulation.step(start + 1)

    again = build(options(tmp_path, scenario=str(scenario)))
    assert again.simulation.started_at == start
    again.simulation.step(start + 2)
    assert {p["metadata"]["name"] for p in again.store.list("pods")[0]} == {"first-0"}
    again.simulation.step(start + 100)
    names = {p["metadata"]["name"] for p in again.store.list("pods")[0]}
    assert names == {"first-0", "second-0"}


def test_another_scenario_starts_from_its_beginning_next_to_the_restored_objects(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO)
    sim = build(options(tmp_path, scenario=str(scenario)))
    start_journal(sim)
    sim.simulation.step(sim.simulation.clock.now())
    sim.stop()
    other = build(options(tmp_path, scenario="demo"))
    assert other.simulation.started_at is None  # installs the demo on its first round
    assert other.store.get("pods", "team", "first-0")


def test_scale_ups_in_flight_and_the_ledger_come_back(tmp_path):
    store = Store(time.time)
    store.create("queues", queue("q"))
    group = ScalingGroup("big", capacity={"cpu": "16", "memory": "64Gi"}, provision_delay=60)
    simulation = Simulation(store, _Clock(), autoscaler="cluster-autoscaler")
    autoscaler = simulation.autoscaler
    assert isinstance(autoscaler, ClusterAutoscaler)
    autoscaler.groups = {"big": group}
    waiting = store.create("pods", pod("w", namespace="team", queue="q"))
    autoscaler.launch(100.0, group, [waiting], QueueBook(store))
    progress = json.loads(json.dumps(simulation.progress()))  # through JSON, as on disk

    again = Simulation(store, _Clock(), autoscaler="cluster-autoscaler")
    again.autoscaler.groups = {"big": group}
    again.resume(progress)
    [launch] = again.autoscaler.launching
    assert launch.ready_at == 160.0 and launch.group is group
    assert launch.record is again.ledger.scale_ups[0]
    assert again.ledger.scale_ups[0].pods[0].name == "w"
    again.autoscaler.create_due_nodes(160.0)
    assert again.ledger.scale_ups[0].node_ready_at == 160.0
    assert store.get("nodes", "", launch.node["metadata"]["name"])


class _Clock:
    def now(self) -> float:
        return 100.0


def test_the_cluster_identity_is_kept_by_its_state_and_new_without_it(tmp_path):
    """kube-system's UID names the cluster (simcluster/bootstrap.py): the same after a restart
    from ``--state``, another for a cluster started without it."""
    first = build(options(tmp_path, scenario="empty"))
    start_journal(first)
    uid = first.store.get("namespaces", "", "kube-system")["metadata"]["uid"]
    again = build(options(tmp_path, scenario="empty"))
    assert again.store.get("namespaces", "", "kube-system")["metadata"]["uid"] == uid
    elsewhere = build(options(tmp_path / "other", scenario="empty"))
    assert elsewhere.store.get("namespaces", "", "kube-system")["metadata"]["uid"] != uid
    stateless = build(SimClusterOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    assert stateless.store.get("namespaces", "", "kube-system")["metadata"]["uid"] != uid


def test_manage_py_simcluster_killed_and_started_again_keeps_its_pods_and_clock(tmp_path):
    kubeconfig, state = tmp_path / "kubeconfig", tmp_path / "state.json"
    command = [
        sys.executable, "manage.py", "simcluster", "--port", "0", "--scenario", "demo",
        "--kubeconfig", str(kubeconfig), "--state", str(state), "--speed", "10",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "SLUICE_ENV")}
    env["SLUICE_RUN_DIR"] = str(tmp_path / "run")

    def start() -> tuple[subprocess.Popen, str]:
        kubeconfig.unlink(missing_ok=True)
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert poll(kubeconfig.exists, timeout=30, interval=0.1), "no kubeconfig written"
        return process, cluster()["server"]

    def cluster() -> dict:
        return yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]

    def clock() -> dict:
        return cluster()["extensions"][0]["extension"]

    def get(server: str, path: str) -> dict:
        code, found = http(server, "GET", path)
        assert code == 200, (path, found)
        return found

    def pods(server: str) -> dict[str, str]:
        return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["metadata"]["uid"]
                for p in get(server, "/api/v1/pods")["items"]}  # fmt: skip

    process, server = start()
    try:
        # The demo's first arrivals (notebooks, etl) and its later ones (at 5 and 20 s simulated).
        seen = poll(lambda: len(pods(server)) >= 17 and pods(server), timeout=20, interval=0.2)
        assert seen, pods(server)
        system = get(server, "/api/v1/namespaces/kube-system")["metadata"]
        # A write the API acknowledged just before the kill is kept (journaled before it answered).
        code, written = http(
            server, "POST", "/api/v1/namespaces/kube-system/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "last-words"},
             "data": {"said": "yes"}},
        )  # fmt: skip
        assert code == 201, written
        before = clock()
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=20)
    process, server = start()
    try:
        assert {k: v for k, v in pods(server).items() if k in seen} == seen
        assert get(server, "/api/v1/namespaces/kube-system")["metadata"]["uid"] == system["uid"]
        kept = get(server, "/api/v1/namespaces/kube-system/configmaps/last-words")
        assert kept["metadata"] == written["metadata"] and kept["data"] == {"said": "yes"}
        # resourceVersions go on from where they were.
        version = int(get(server, "/api/v1/configmaps")["metadata"]["resourceVersion"])
        assert version >= int(written["metadata"]["resourceVersion"])
        # The simulated clock went on from where it was (10 simulated seconds a wall second,
        # down time included), not from the wall clock.
        after = clock()
        ahead_before = before["simulatedTime"] - before["wallTime"]
        ahead_after = after["simulatedTime"] - after["wallTime"]
        assert after["simulatedTime"] > before["simulatedTime"]
        assert ahead_after - ahead_before >= 9 * (after["wallTime"] - before["wallTime"]) - 1
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    assert process.returncode == 0, output
    assert "Restored the simulated cluster" in output
