"""The resource monitor under Celery: ``refresh_capacity_snapshot`` against the simulated
cluster's API and a real Redis, ``StoredSnapshot`` reading it back, and the scheduler task
asking a real worker for a snapshot on demand before it admits a Guaranteed workload."""

from __future__ import annotations

import json
import logging

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings as django_settings

from dashboard import kube
from dashboard.celery import app
from dashboard.health import broker_client
from dashboard.tasks import admission, scheduling
from scheduler.admission.check import CONDITION_TYPE
from scheduler.admission.monitor import CapacitySnapshot
from scheduler.admission.node_groups import NodeGroupError, dump_node_groups, load_node_groups
from simcluster.catalog import resolve
from tests.builders import body, node, pod, podgroup, queue
from tests.conftest import wait_until
from tests.dashboard.tasks.test_scheduling import use_broker
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"


@pytest.fixture
def cluster(sim, settings, redis_url, tmp_path):  # noqa: F811
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    broker_client().delete(admission.SNAPSHOT_KEY, admission.SNAPSHOT_TAKEN_KEY)
    for name in ("n1", "n2"):
        sim.core.create_node(body(node(name, cpu="2", ready=True)))
    sim.custom.create_cluster_custom_object(GROUP, VERSION, "queues", body(queue("default")))
    yield sim
    scheduling.reset_scheduler_service()
    kube.api_client.cache_clear()


def test_the_task_stores_what_each_node_has_left_after_its_guaranteed_pods(cluster):
    db = pod("db", "1500m", namespace="default", guaranteed=True, node_name="n1")
    cluster.core.create_namespaced_pod("default", body(db))

    summary = admission.refresh_capacity_snapshot()

    assert summary["nodes"] == 2
    stored = json.loads(broker_client().get(admission.SNAPSHOT_KEY))
    snapshot = CapacitySnapshot.from_json(stored)
    remaining = {n.node_name: n.remaining["cpu"] for n in snapshot.nodes}
    assert remaining == {"n1": 500, "n2": 2000}
    assert [p.name for p in snapshot.nodes[0].pods] == ["db"]
    ttl = broker_client().ttl(admission.SNAPSHOT_KEY)
    assert 0 < ttl <= django_settings.SLUICE_ADMISSION_REFRESH_S * 5


def test_the_reader_parses_a_stored_snapshot_once(cluster):
    reader = admission.StoredSnapshot()
    assert reader() is None
    admission.refresh_capacity_snapshot()
    first = reader()
    assert first is not None and reader() is first  # unchanged: not parsed again
    admission.refresh_capacity_snapshot()
    assert reader() is not first


def test_without_a_cluster_the_task_logs_and_stores_nothing(settings, tmp_path, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")
    kube.api_client.cache_clear()
    broker_client().delete(admission.SNAPSHOT_KEY)
    assert admission.refresh_capacity_snapshot() is None
    assert broker_client().get(admission.SNAPSHOT_KEY) is None


def test_beat_refreshes_every_refresh_period():
    entry = django_settings.CELERY_BEAT_SCHEDULE["refresh-capacity-snapshot"]
    assert entry["task"] == "dashboard.tasks.refresh_capacity_snapshot"
    assert entry["schedule"] == django_settings.SLUICE_ADMISSION_REFRESH_S
    assert entry["options"]["queue"] == "default"


@pytest.fixture
def default_worker(settings, redis_url):
    previous = app.conf.broker_url
    use_broker(redis_url)
    with start_worker(app, pool="solo", queues=["default"], perform_ping_check=False):
        yield
    # A test worker sets the root logger to ERROR; only a process's first worker runs Django's
    # setup again, which restores the logging configuration. Let the next worker be a "first"
    # one, so tests after it still see log records (caplog).
    app.loader.worker_initialized = False
    use_broker(previous)


def test_the_scheduler_asks_for_a_snapshot_on_demand_then_admits(cluster, settings, default_worker):
    settings.SLUICE_MODE = "act"
    settings.SLUICE_LEADER_ELECT = False  # run_cycle runs the cycle itself, under the cycle lock
    settings.SLUICE_ADMISSION_CHECK = True
    group = podgroup("web", namespace="default", queue="default")
    cluster.custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", "podgroups", body(group)
    )
    web = pod("web", "1", namespace="default", guaranteed=True, group="web")
    cluster.core.create_namespaced_pod("default", body(web))
    service = scheduling.scheduler_service()
    wait_until(lambda: len(service.cache.snapshot().jobs) == 1)

    # No snapshot yet: held Pending, and one is asked for. The task returns a small summary.
    assert scheduling.run_cycle().keys() == {"duration_ms", "decisions", "waiting"}

    def condition() -> dict:
        pg = cluster.custom.get_namespaced_custom_object(
            GROUP, VERSION, "default", "podgroups", "web"
        )
        found = [c for c in pg["status"].get("conditions", []) if c["type"] == CONDITION_TYPE]
        return found[0] if found else {}

    assert (condition()["status"], condition()["reason"]) == ("Unknown", "WaitingForSnapshot")
    wait_until(lambda: broker_client().get(admission.SNAPSHOT_KEY) is not None, timeout=20)

    def admitted() -> bool:
        scheduling.run_cycle()
        return cluster.core.read_namespaced_pod("web", "default").spec.node_name is not None

    wait_until(admitted, timeout=20)
    assert (condition()["status"], condition()["reason"]) == ("True", "NodeCapacityAvailable")


def test_node_groups_come_from_the_file_the_simulated_cluster_writes(settings, caplog, tmp_path):
    # A Celery worker started by an earlier test may have raised the root logger's level.
    caplog.set_level(logging.WARNING, logger="dashboard.tasks.admission")
    path = tmp_path / "node-groups.yaml"
    demo = resolve("demo").node_groups
    path.write_text(dump_node_groups(g.described() for g in demo))
    settings.SLUICE_ADMISSION_NODE_GROUPS = str(path)
    groups = admission.known_node_groups()(
        CapacitySnapshot.from_json({"last_check": "2026-01-01T00:00:00+00:00", "nodes": []})
    )
    assert [g.name for g in groups] == [g.name for g in demo]
    assert [g.max_size for g in groups] == [g.max_size for g in demo]
    assert all(g.current_size == 0 for g in groups)
    assert [g.template for g in groups] == [g.template() for g in demo]

    settings.SLUICE_ADMISSION_NODE_GROUPS = ""  # a real cluster: none known
    assert admission.known_node_groups() is None
    settings.SLUICE_ADMISSION_NODE_GROUPS = str(tmp_path / "missing.yaml")
    assert admission.known_node_groups() is None
    assert "no node groups:" in caplog.text and "missing.yaml" in caplog.text


def test_a_node_groups_file_with_a_bad_field_is_refused_naming_it(tmp_path):
    path = tmp_path / "groups.yaml"
    path.write_text("nodeGroups:\n- name: big\n  max: -1\n  template: {capacity: {cpu: '8'}}\n")
    with pytest.raises(NodeGroupError, match=r"nodeGroups\[0\] \(big\)\.max: expected"):
        load_node_groups(path)
    path.write_text("nodeGroups:\n- name: big\n  template: {capacity: {cpu: abc}}\n")
    with pytest.raises(NodeGroupError, match=r"template.capacity.cpu: invalid quantity 'abc'"):
        load_node_groups(path)
