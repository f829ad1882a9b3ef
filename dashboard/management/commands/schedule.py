"""``python manage.py schedule``: run scheduling cycles against a cluster from the terminal.

The Celery scheduler worker runs the same SchedulerService with the same configuration; this
command is the whole scheduler in one process, for trying Sluice against a cluster or a
simulation: ``--scheduler-conf`` (or ``SLUICE_SCHEDULER_CONF``, or the ConfigMap
``SLUICE_SCHEDULER_CONFIGMAP`` names) holds a configuration in Volcano's format, read again
when it changes; the node-capacity admission check runs as that configuration says, with
snapshots it takes from the cluster itself. ``--scheduler-name`` (repeatable, default
``SLUICE_SCHEDULER_NAMES``) says which pods are ours, as Volcano's flag.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from kubernetes import client
from kubernetes import config as kube_config

from dashboard.tasks.admission import (
    known_node_groups,
    scheduler_config,
    scheduler_config_source,
)
from scheduler.admission.context import Admission
from scheduler.admission.source import PeriodicSnapshot, fetch_snapshot
from scheduler.api.report import CycleReport
from scheduler.config import ConfigError, ConfigFile
from scheduler.kube.config import clock_from_kubeconfig
from scheduler.service import SchedulerService


def _admission(api: client.ApiClient, clock: Callable[[], float]) -> Admission:
    """The node-capacity check with snapshots taken from the cluster every refresh period;
    whether it holds workloads is the configuration's enqueue arguments' call."""
    snapshots = PeriodicSnapshot(
        lambda now: fetch_snapshot(api, now), clock, refresh_s=settings.SLUICE_ADMISSION_REFRESH_S
    )
    return Admission(snapshots, node_groups=known_node_groups())


class Command(BaseCommand):
    help = "Run scheduling cycles. Against a real cluster the default mode is observe (read-only)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kubeconfig", default=settings.SLUICE_KUBECONFIG)
        runs = parser.add_mutually_exclusive_group()
        runs.add_argument("--once", action="store_true", help="run one cycle and exit")
        runs.add_argument("--cycles", type=int, default=0, help="run N cycles (0: until Ctrl-C)")
        parser.add_argument("--period", type=float, default=settings.SLUICE_CYCLE_PERIOD)
        parser.add_argument(
            "--scheduler-name",
            action="append",
            help="a spec.schedulerName that is ours (repeatable; default SLUICE_SCHEDULER_NAMES)",
        )
        parser.add_argument("--mode", choices=["act", "observe"], default="observe")
        parser.add_argument(
            "--scheduler-conf",
            default=settings.SLUICE_SCHEDULER_CONF,
            help="a scheduler configuration in Volcano's format (default: Sluice's)",
        )

    def handle(self, *args, kubeconfig: str, once: bool, cycles: int, period: float, **options):
        try:
            api = kube_config.new_client_from_config(config_file=kubeconfig)
        except (kube_config.ConfigException, OSError) as exc:
            raise CommandError(f"--kubeconfig {kubeconfig}: {exc}") from exc
        clock = clock_from_kubeconfig(kubeconfig)  # follows a simulation's --speed
        config = scheduler_config()
        source = (
            ConfigFile(options["scheduler_conf"])
            if options["scheduler_conf"]
            else scheduler_config_source(api)  # the ConfigMap of the settings, as the worker
        )
        try:
            service = SchedulerService(
                api,
                config=config,
                config_source=source,
                scheduler_name=options["scheduler_name"] or settings.SLUICE_SCHEDULER_NAMES,
                act=options["mode"] == "act",
                clock=clock,
                admission=_admission(api, clock),
                period=period,
            )
        except (ConfigError, OSError) as exc:
            where = "--scheduler-conf" if options["scheduler_conf"] else "configuration"
            raise CommandError(f"{where}: {exc}") from exc
        try:
            service.start(sync_timeout=30)
        except TimeoutError as exc:
            raise CommandError(f"cluster at {api.configuration.host}: {exc}") from exc
        try:
            self._loop(service, 1 if once else cycles, period)
        except KeyboardInterrupt:
            pass
        finally:
            service.stop()

    def _loop(self, service: SchedulerService, cycles: int, period: float) -> None:
        done = 0
        while cycles == 0 or done < cycles:
            started = time.monotonic()
            self._print(service.run_once())
            done += 1
            if cycles == 0 or done < cycles:
                time.sleep(max(0.0, period - (time.monotonic() - started)))

    def _print(self, report: CycleReport) -> None:
        if report.failure:
            self.stderr.write(f"cycle {report.mode} failed: {report.failure}")
            return
        decisions = len(report.transitions)
        self.stdout.write(
            f"cycle {report.mode}: {report.duration_s * 1000:.1f} ms, {decisions} decisions, "
            f"{len(report.waiting)} pods waiting"
        )
        for t in report.transitions:
            node = f" on {t.node}" if t.node else ""
            self.stdout.write(
                f"  {t.namespace}/{t.name}: {t.kind} ({t.from_state} -> {t.to_state}){node}"
            )
        for w in report.waiting:
            self.stdout.write(
                f"  waiting {w.namespace}/{w.name} (queue {w.queue}): {w.state}: {w.status}"
            )
        for obj in report.invalid:  # pods among them are listed as waiting already
            if obj.kind == "pod":
                continue
            where = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
            self.stderr.write(f"  cannot use {obj.kind} {where}: {obj.message}")
        for error in report.errors:
            self.stderr.write(f"  error: {error}")
        if report.config is not None and report.config.error:
            self.stderr.write(f"  configuration: {report.config.error}")
