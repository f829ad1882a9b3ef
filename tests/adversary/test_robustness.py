"""One bad object or one bad number must not stop the scheduler (README, Differences from
Volcano, "Bad queue": "one bad object must not stop the cluster"; "a text that does not load
keeps the configuration in force, and the Scheduler page and manage.py schedule say why")."""

from __future__ import annotations

import os

import pytest

from scheduler.config import ConfigFile
from scheduler.service import SchedulerService
from tests.adversary.helpers import cycle, make_node, make_pod, make_queue, node_of

GOOD = """\
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


def rewrite(path, text: str) -> None:
    """Write ``text`` with an mtime one second later than the last, so a reload sees it."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


@pytest.mark.parametrize(
    "bad",
    [
        GOOD.replace("enableHierarchy: true", "enableHierarchy: true\n    arguments: {ancestorReclaimLevel: .nan}"),
        GOOD.replace("enableHierarchy: true", "enableHierarchy: true\n    arguments: {ancestorReclaimLevel: 1.0e+400}"),
        GOOD + "  - name: binpack\n    arguments: {binpack.cpu: .inf}\n",
    ],
    ids=["ancestorReclaimLevel-nan", "ancestorReclaimLevel-1e400", "binpack.cpu-inf"],
)  # fmt: skip
def test_a_numeric_argument_that_cannot_be_used_is_a_configuration_error(sim, tmp_path, bad):
    """README: an argument Sluice cannot use is a configuration error that names it, and a
    reloaded text that does not load keeps the configuration in force with the error shown.
    (Volcano's Arguments.GetInt refuses a non-int with a warning and keeps the default.)
    Sluice's argument check (Plugin.argument) accepts any float, NaN and infinity included:

    * ``ancestorReclaimLevel: .nan`` / ``1.0e+400`` loads, is put in force, and then every
      cycle raises (CapacityPlugin.on_session_open: ``int(nan)`` ValueError, ``int(inf)``
      OverflowError) — the scheduler stops for good;
    * ``binpack.cpu: .inf`` raises OverflowError inside registry.check (only ValueError is
      caught), out of LiveConfig.current (only ConfigError/OSError are caught): that cycle
      dies, and the next one silently runs the old configuration with *no* error reported.

    The promise: no cycle raises, the previous configuration stays in force, and the report's
    configuration error names the argument."""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(GOOD)
    make_node(sim, "n1", cpu="4")
    make_queue(sim, "default")
    service = SchedulerService(sim.api_client, config_source=ConfigFile(conf), act=True).start(
        sync_timeout=5
    )
    try:
        assert service.run_once().config.error == ""
        rewrite(conf, bad)
        errors = [service.run_once().config.error for _ in range(2)]
        name = "binpack.cpu" if "binpack" in bad else "ancestorReclaimLevel"
        assert all(name in e for e in errors), errors
        make_pod(sim, "p")
        cycle(sim, service)
        assert node_of(sim, "p") == "n1"
    finally:
        service.stop()


def test_a_queue_with_an_enormous_capability_stops_only_itself(sim):
    """``capability: {cpu: 1e400}`` is a valid Kubernetes quantity (the Queue CRD's
    int-or-string quantity pattern accepts it, and resource.ParseQuantity parses it). Sluice
    parses it into a 400-digit integer, and the first comparison with a float bound
    (Resource.insufficient: ``limit.get(k) + _EPSILON``) raises OverflowError — out of the
    whole cycle, so no pod of *any* queue is scheduled. README: "one bad object must not stop
    the cluster". A pod of the default queue must still bind."""
    make_node(sim, "n1", cpu="4")
    make_queue(sim, "default")
    make_queue(sim, "huge", capability={"cpu": "1e400"})
    make_pod(sim, "in-huge", queue="huge")
    make_pod(sim, "other")
    from scheduler.service import SchedulerService as Service

    service = Service(sim.api_client, act=True).start(sync_timeout=5)
    try:
        cycle(sim, service)
        assert node_of(sim, "other") == "n1"
    finally:
        service.stop()


def test_a_pod_with_an_enormous_request_stops_only_itself(sim):
    """A pod requesting ``cpu: 1e400`` is accepted by the simulated API server (as by
    kube-apiserver: a non-negative quantity). The engine turns it into a 400-digit integer
    and NodeMatrix.vector raises OverflowError writing it into a float array — the whole cycle
    fails and no other pod is scheduled. The pod should simply not fit (Insufficient cpu),
    and the others bind."""
    make_node(sim, "n1", cpu="4")
    make_queue(sim, "default")
    make_pod(sim, "absurd", cpu="1e400")
    make_pod(sim, "other")
    from scheduler.service import SchedulerService as Service

    service = Service(sim.api_client, act=True).start(sync_timeout=5)
    try:
        cycle(sim, service)
        assert node_of(sim, "other") == "n1"
    finally:
        service.stop()


def test_a_configuration_file_that_is_not_utf8_keeps_the_configuration_in_force(sim, tmp_path):
    """An editor saves the configuration in Latin-1 (``# café`` in a comment). README: "a
    text that does not load keeps the configuration in force, and the Scheduler page and
    manage.py schedule say why". ConfigFile.changed calls ``Path.read_text()``, whose
    UnicodeDecodeError is neither OSError nor ConfigError: it escapes LiveConfig.current, and
    since the file's (mtime, size) is remembered only after a successful read, *every* later
    cycle reads it again and raises — the scheduler stops until someone fixes the file.
    Volcano reads the bytes and keeps the previous configuration when they do not parse."""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(GOOD)
    make_node(sim, "n1", cpu="4")
    make_queue(sim, "default")
    service = SchedulerService(sim.api_client, config_source=ConfigFile(conf), act=True).start(
        sync_timeout=5
    )
    try:
        assert service.run_once().config.error == ""
        before = conf.stat().st_mtime_ns
        conf.write_bytes(GOOD.encode() + "# caf\u00e9\n".encode("latin-1"))
        os.utime(conf, ns=(before + 1_000_000_000, before + 1_000_000_000))
        errors = [service.run_once().config.error for _ in range(2)]
        assert all(str(conf) in e for e in errors), errors
        make_pod(sim, "p")
        cycle(sim, service)
        assert node_of(sim, "p") == "n1"
    finally:
        service.stop()


def test_schedule_command_refuses_a_non_utf8_configuration_with_a_clear_error(sim, tmp_path):
    """``manage.py schedule --scheduler-conf FILE`` turns a configuration that does not load
    into a CommandError naming ``--scheduler-conf`` (it catches ConfigError and OSError). A
    file that is not UTF-8 raises UnicodeDecodeError instead: a traceback, not an answer."""
    from django.core.management import CommandError

    from tests.adversary.helpers import schedule_command

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_bytes(GOOD.encode() + "# caf\u00e9\n".encode("latin-1"))
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    with pytest.raises(CommandError, match="scheduler-conf"):
        schedule_command("--kubeconfig", str(kubeconfig), "--once", "--scheduler-conf", str(conf))
