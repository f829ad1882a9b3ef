"""The scheduler configuration as a user gives it: a file, a ConfigMap, Sluice's own keys, and
what every entry point does with them (README, "The scheduler configuration")."""

from __future__ import annotations

import os

import pytest
from django.core.management import CommandError

from scheduler.config import ConfigFile
from scheduler.kube.configmap import ConfigMapText
from scheduler.service import SchedulerService
from tests.adversary.helpers import (
    cycle,
    make_node,
    make_pod,
    make_queue,
    node_of,
    schedule_command,
    settle,
)

CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
"""
KEY = "volcano-scheduler.conf"


def config_map(text: str, name: str = "volcano-scheduler-configmap") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {KEY: text}}  # fmt: skip


def test_a_configmap_deleted_and_created_again_clears_the_error(sim):
    """README: a text that does not load keeps the configuration in force, and the Scheduler
    page says why *until a good one arrives*. A ConfigMap deleted (HTTP 404) and then created
    again with a good configuration is a good one arriving: the error must go away. Volcano
    reloads whatever is there (pkg/scheduler/scheduler.go, loadSchedulerConf) and keeps no
    sticky error. Sluice's ConfigMapText hands out a text only when it differs from the last
    text it handed out, so the restored (identical) text is never loaded again and the 404
    error stays on the page forever."""
    sim.core.create_namespaced_config_map("default", config_map(CONF))
    make_queue(sim, "default")
    clock = [0.0]
    source = ConfigMapText(
        sim.api_client, "default", "volcano-scheduler-configmap", clock=lambda: clock[0]
    )
    service = SchedulerService(sim.api_client, config_source=source, act=True).start(sync_timeout=5)
    try:
        assert service.run_once().config.error == ""
        sim.core.delete_namespaced_config_map("volcano-scheduler-configmap", "default")
        clock[0] = 11
        assert "404" in service.run_once().config.error
        sim.core.create_namespaced_config_map("default", config_map(CONF))
        clock[0] = 22
        service.run_once()
        clock[0] = 33
        report = service.run_once()
        assert report.config.error == "", report.config.error
    finally:
        service.stop()


def test_a_configuration_file_moved_away_and_back_clears_the_error(sim, tmp_path):
    """The same promise for ``--scheduler-conf``: an operator moves the file aside (the
    scheduler reports "No such file") and back (``mv`` keeps its mtime and size). The file is
    there again and loads; the error must clear. ConfigFile remembers only (mtime, size) of the
    last text it read, sees the same pair again and never re-reads, so the error stays."""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    make_queue(sim, "default")
    service = SchedulerService(sim.api_client, config_source=ConfigFile(conf), act=True).start(
        sync_timeout=5
    )
    try:
        assert service.run_once().config.error == ""
        aside = tmp_path / "aside.conf"
        os.rename(conf, aside)
        assert "No such file" in service.run_once().config.error
        os.rename(aside, conf)
        report = service.run_once()
        assert report.config.error == "", report.config.error
    finally:
        service.stop()


def test_schedule_command_reads_the_configmap_named_by_the_settings(sim, tmp_path, settings):
    """README (Configuration): ``SLUICE_SCHEDULER_CONFIGMAP`` names a ConfigMap holding the
    configuration, and ``manage.py schedule`` runs "with the same configuration and admission
    check as the Celery worker"; issue 14: the configuration is read "by every entry point
    alike". The worker reads the ConfigMap (dashboard.tasks.admission.scheduler_config_source);
    the command only ever builds a ConfigFile from ``--scheduler-conf`` and otherwise runs
    Sluice's default. Here the ConfigMap runs enqueue only, so nothing may be bound; the
    default configuration binds the pod."""
    settings.SLUICE_SCHEDULER_CONF = ""
    settings.SLUICE_SCHEDULER_CONFIGMAP = "default/volcano-scheduler-configmap"
    only_enqueue = CONF.replace('"enqueue, allocate, backfill"', '"enqueue"')
    sim.core.create_namespaced_config_map("default", config_map(only_enqueue))
    make_node(sim, "n1")
    make_queue(sim, "default")
    make_pod(sim, "p")
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    out, _ = schedule_command("--kubeconfig", str(kubeconfig), "--once", "--mode", "act")
    assert node_of(sim, "p") is None, out


def test_the_scheduler_names_are_a_setting_not_a_configuration_key(sim, tmp_path, settings):
    """Found here: README listed ``schedulerName`` among Sluice's configuration keys; Sluice
    parsed it, showed it and never used it. Which pods are ours is the process's setting, as
    Volcano's ``--scheduler-name``: the key is now refused with a message saying where the
    names go, and ``--scheduler-name batch`` schedules the pod of ``schedulerName: batch``."""
    settings.SLUICE_SCHEDULER_CONFIGMAP = ""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF + "schedulerName: batch\n")
    make_node(sim, "n1")
    make_queue(sim, "default")
    make_pod(sim, "p", scheduler="batch")
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    with pytest.raises(CommandError, match="SLUICE_SCHEDULER_NAMES"):
        schedule_command(
            "--kubeconfig", str(kubeconfig), "--once", "--mode", "act",
            "--scheduler-conf", str(conf),
        )  # fmt: skip
    conf.write_text(CONF)
    out, _ = schedule_command(
        "--kubeconfig", str(kubeconfig), "--once", "--mode", "act", "--scheduler-conf", str(conf),
        "--scheduler-name", "volcano", "--scheduler-name", "batch",
    )  # fmt: skip
    assert node_of(sim, "p") == "n1", out


def test_observe_mode_writes_nothing_over_several_cycles(sim):
    """README: ``observe`` "never writes to the cluster and still computes every figure".
    Several observe cycles over gated, ungated, gang and unschedulable pods must leave every
    object's resourceVersion as it was (no binds, gate removals, conditions, PodGroup status,
    events, nominations). (Regression test: passes today.)"""
    from tests.adversary.helpers import make_podgroup

    make_node(sim, "n1", cpu="2")
    make_queue(sim, "default")
    make_queue(sim, "small", capability={"cpu": "1"})
    make_pod(sim, "fits")
    make_pod(sim, "huge", cpu="64")
    gate = "scheduling.volcano.sh/queue-allocation-gate"
    make_pod(sim, "gated", queue="small", gates=[gate], opt_in=True)
    make_podgroup(sim, "gang", 3, min_resources={"cpu": "3"})
    make_pod(sim, "gang-0", group="gang")
    service = SchedulerService(sim.api_client, act=False).start(sync_timeout=5)
    try:
        settle(sim, service)
        before = sim.store.latest_version(["pods", "podgroups", "events", "nodes", "queues"])
        reports = [cycle(sim, service) for _ in range(3)]
        after = sim.store.latest_version(["pods", "podgroups", "events", "nodes", "queues"])
        assert after == before
        assert any(t.name == "fits" for t in reports[0].transitions)  # it still decides
    finally:
        service.stop()
