"""Server lifecycle, kubeconfig, Tables, and the simcluster wiring (state, scenario pods)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import yaml
from kubernetes import watch

from simcluster.api import ApiServer, Cluster
from simcluster.api.app import SimClusterOptions, build, scenario_pod_creator
from simcluster.store import AlreadyExists, Store
from tests.builders import body, namespace, pod
from tests.simcluster.api.conftest import start_sim
from tests.simcluster.api.helpers import http

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_port_zero_picks_a_free_loopback_port_and_writes_a_kubeconfig(tmp_path):
    sim = start_sim()
    try:
        assert sim.server.port > 0
        config = yaml.safe_load(sim.server.write_kubeconfig(tmp_path / "kc").read_text())
        assert config["clusters"][0]["cluster"]["server"] == f"http://127.0.0.1:{sim.server.port}"
        assert config["current-context"] == config["contexts"][0]["name"]
    finally:
        sim.server.stop()


def test_the_server_refuses_to_bind_beyond_loopback():
    store = Store(time.time)
    with pytest.raises(ValueError, match="loopback"):
        ApiServer(Cluster(store, time.time), host="0.0.0.0")


def test_stop_ends_open_watches_and_joins_every_thread():
    sim = start_sim()
    before = threading.active_count()
    finished = threading.Event()

    def watch_forever() -> None:
        try:
            for _ in watch.Watch().stream(sim.core.list_pod_for_all_namespaces, timeout_seconds=60):
                pass
        except Exception:
            pass
        finished.set()

    watcher = threading.Thread(target=watch_forever, daemon=True)
    watcher.start()
    time.sleep(0.3)
    started = time.monotonic()
    sim.server.stop()
    assert time.monotonic() - started < 3
    assert finished.wait(5)
    assert threading.active_count() <= before


def test_pods_as_a_table_with_partial_metadata_rows(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=("g",))))
    code, table = http(sim.server.url, "GET", "/api/v1/pods", accept=TABLE)
    assert code == 200 and table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert {c["name"]: c["priority"] for c in table["columnDefinitions"]}["Nominated Node"] == 1
    row = table["rows"][0]
    assert row["cells"][:3] == ["web-1", "0/1", "SchedulingGated"]
    assert (
        row["object"]["kind"] == "PartialObjectMetadata"
        and row["object"]["metadata"]["name"] == "web-1"
    )


def test_table_rows_carry_the_full_object_when_asked(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    _, table = http(sim.server.url, "GET", "/api/v1/pods?includeObject=Object", accept=TABLE)
    assert table["rows"][0]["object"]["spec"]["containers"][0]["name"] == "main"


def test_unknown_paths_are_404_statuses(sim):
    code, status = http(sim.server.url, "GET", "/api/v1/deployments")
    assert code == 404 and status["kind"] == "Status"


def test_a_state_file_of_objects_only_is_restored(tmp_path):
    """The format earlier versions saved (``Store.dump``): no clock, no journal, no progress."""
    sim = start_sim()
    try:
        sim.core.create_namespaced_pod("default", body(pod("web-1")))
        state = tmp_path / "state.json"
        state.write_text(json.dumps(sim.store.dump()))
    finally:
        sim.server.stop()
    options = SimClusterOptions(scenario="empty", state=str(state), kubeconfig=str(tmp_path / "kc"))
    restored = build(options)
    assert restored.store.get("pods", "default", "web-1")["status"]["phase"] == "Pending"
    # build() creates kube-system, which the saved cluster lacked (as kube-apiserver does when
    # it starts): one write more than the file holds.
    assert json.loads(state.read_text())["resourceVersion"] + 1 == restored.store.resource_version


def test_scenario_pods_pass_the_rules_and_duplicates_are_store_errors():
    store = Store(time.time)
    cluster = Cluster(store, time.time)
    cluster.create_object("namespaces", body(namespace("default")))
    create = scenario_pod_creator(cluster)
    created = create(body(pod("web-1", gates=("g",))))
    assert created["status"]["conditions"][0]["reason"] == "SchedulingGated"
    with pytest.raises(AlreadyExists):
        create(body(pod("web-1")))
