"""Volcano's own configurations, unchanged, run Sluice through the simulated cluster's API; the
configuration is read again when it changes, and a bad one keeps the one in force.

The two texts are Volcano's (at ed72c7c815a9fd547a787134676f73d42e9d049c): the built-in
default of pkg/scheduler/util.go and the Helm chart's
installer/helm/chart/volcano/config/volcano-scheduler.conf.
"""

from __future__ import annotations

import os

import pytest

from scheduler import registry
from scheduler.config import ConfigError, ConfigFile, default_config
from scheduler.kube.configmap import ConfigMapText
from scheduler.service import SchedulerService
from tests.builders import body, node, pod, podgroup, queue
from tests.conftest import wait_until

VOLCANO_DEFAULT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

HELM_CHART = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def create_queue(sim, name: str = "default") -> None:
    sim.custom.create_cluster_custom_object(*VOLCANO, "queues", body(queue(name)))


def create_podgroup(sim, name: str, min_member: int, cpu: str) -> None:
    sim.custom.create_namespaced_custom_object(
        *VOLCANO,
        "default",
        "podgroups",
        body(podgroup(name, min_member, min_resources={"cpu": cpu})),
    )


def podgroup_phase(sim, name: str) -> str:
    pg = sim.custom.get_namespaced_custom_object(*VOLCANO, "default", "podgroups", name)
    return (pg.get("status") or {}).get("phase", "")


def bound(sim) -> dict[str, str]:
    return {
        p.metadata.name: p.spec.node_name for p in sim.core.list_namespaced_pod("default").items
    }


@pytest.fixture
def conf_file(tmp_path):
    path = tmp_path / "volcano-scheduler.conf"
    return path


def start(sim, source) -> SchedulerService:
    return SchedulerService(sim.api_client, config_source=source, act=True).start(sync_timeout=5)


@pytest.mark.parametrize("text", [VOLCANO_DEFAULT, HELM_CHART], ids=["util.go", "helm-chart"])
def test_volcano_configuration_loads_unchanged_and_gangs_wait_for_their_pods(sim, conf_file, text):
    """A PodGroup of minMember 3 is enqueued on its minResources before any pod exists (Volcano's
    enqueue); its three pods bind together once created."""
    conf_file.write_text(text)
    for name in ("n1", "n2"):
        sim.core.create_node(body(node(name, cpu="2", ready=True)))
    create_queue(sim)
    create_podgroup(sim, "train", 3, "3")
    service = start(sim, ConfigFile(conf_file))
    try:
        assert service.config.actions == ("enqueue", "allocate", "backfill")
        wait_until(lambda: "default/train" in service.cache.snapshot().jobs)
        report = service.run_once()
        assert report.config is not None and report.config.source == f"file {conf_file}"
        assert report.config.tiers[0] == ["priority", "gang", "conformance"]
        assert report.config.error == ""
        wait_until(lambda: podgroup_phase(sim, "train") == "Inqueue")

        for i in range(2):  # two of three: the gang waits, nothing binds
            sim.core.create_namespaced_pod("default", body(pod(f"train-{i}", group="train")))
        wait_until(lambda: len(service.cache.snapshot().jobs["default/train"].tasks) == 2)
        service.run_once()
        assert not any(bound(sim).values())

        sim.core.create_namespaced_pod("default", body(pod("train-2", group="train")))
        wait_until(lambda: len(service.cache.snapshot().jobs["default/train"].tasks) == 3)
        service.run_once()
        wait_until(lambda: all(bound(sim).values()))
        assert set(bound(sim).values()) <= {"n1", "n2"}
    finally:
        service.stop()


def test_helm_chart_switches_are_in_force(conf_file):
    conf_file.write_text(HELM_CHART)
    config = registry.load(conf_file.read_text())
    gang = next(p for p in config.tiers[0] if p.name == "gang")
    drf = next(p for p in config.tiers[1] if p.name == "drf")
    assert gang.enabled("enablePreemptable") is False
    assert drf.enabled("enablePreemptable") is False
    assert gang.enabled("enableJobOrder") is True
    assert [p.name for p in config.tiers[1]][-1] == "binpack"


def touch_later(path, text: str) -> None:
    """Write ``text`` with an mtime that differs from the last write's, even within a tick."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def test_a_changed_file_is_read_again_and_a_bad_one_keeps_the_config_in_force(sim, conf_file):
    conf_file.write_text(VOLCANO_DEFAULT)
    create_queue(sim)
    service = start(sim, ConfigFile(conf_file))
    try:
        assert service.run_once().config.actions == ["enqueue", "allocate", "backfill"]

        touch_later(conf_file, VOLCANO_DEFAULT.replace("allocate, backfill", "allocate"))
        report = service.run_once()
        assert report.config.actions == ["enqueue", "allocate"] and not report.config.error

        touch_later(conf_file, "actions: enqueue, shuffle\ntiers: []\n")
        report = service.run_once()
        assert report.config.actions == ["enqueue", "allocate"]  # kept
        assert "unknown action 'shuffle'" in report.config.error
        assert "keeping the configuration in force" in report.config.error
        assert service.run_once().config.error  # still said on the next cycle

        touch_later(conf_file, "tiers: [")  # not YAML
        assert "not valid YAML" in service.run_once().config.error

        conf_file.unlink()
        assert "No such file" in service.run_once().config.error

        touch_later(conf_file, HELM_CHART)
        report = service.run_once()
        assert report.config.error == "" and report.config.tiers[1][-1] == "binpack"
    finally:
        service.stop()


def test_a_first_configuration_that_does_not_load_refuses_to_start(sim, conf_file):
    conf_file.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: nosuch\n")
    with pytest.raises(ConfigError, match="unknown plugin 'nosuch'"):
        SchedulerService(sim.api_client, config_source=ConfigFile(conf_file))
    with pytest.raises(ConfigError, match="No such file"):
        SchedulerService(sim.api_client, config_source=ConfigFile(conf_file.parent / "absent"))


def test_the_configuration_can_live_in_a_config_map_as_volcanos_helm_chart_installs_it(sim):
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap"},
        "data": {"volcano-scheduler.conf": VOLCANO_DEFAULT},
    }
    sim.core.create_namespaced_config_map("default", cm)
    create_queue(sim)
    clock = [0.0]
    source = ConfigMapText(
        sim.api_client, "default", "volcano-scheduler-configmap", clock=lambda: clock[0]
    )
    service = start(sim, source)
    try:
        report = service.run_once()
        assert report.config.source == (
            "configmap default/volcano-scheduler-configmap key volcano-scheduler.conf"
        )
        sim.core.patch_namespaced_config_map(
            "volcano-scheduler-configmap",
            "default",
            {"data": {"volcano-scheduler.conf": HELM_CHART}},
        )
        assert service.run_once().config.tiers[1][-1] == "nodeorder"  # not read again yet
        clock[0] = 11
        assert service.run_once().config.tiers[1][-1] == "binpack"
        sim.core.delete_namespaced_config_map("volcano-scheduler-configmap", "default")
        clock[0] = 22
        report = service.run_once()
        assert report.config.tiers[1][-1] == "binpack" and "HTTP 404" in report.config.error
    finally:
        service.stop()


def test_a_flat_queue_plugin_is_warned_about_and_the_default_is_not():
    assert registry.warnings(registry.check(default_config())) == []
    said = registry.warnings(registry.load(HELM_CHART))
    assert len(said) == 1 and said[0].startswith("proportion: a queue's real capability")
    flat = registry.load("actions: allocate\ntiers:\n- plugins:\n  - name: capacity\n")
    assert registry.warnings(flat)[0].startswith("capacity without enableHierarchy")
