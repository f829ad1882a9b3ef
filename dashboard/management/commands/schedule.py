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

import argparse
import signal
import time
from collections.abc import Callable

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from kubernetes import client
from kubernetes import config as kube_config

from dashboard.leader import election_config
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
from scheduler.kube.leader import LeaderElector, default_identity
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
        # Volcano's and kube-scheduler's leader election flags (component-base), in seconds.
        parser.add_argument(
            "--leader-elect", action="store_true",
            help="schedule only while holding the Lease (coordination.k8s.io/v1); stand by else",
        )  # fmt: skip
        for flag, what in (("lease-duration", "LEASE_DURATION"),
                           ("renew-deadline", "RENEW_DEADLINE"),
                           ("retry-period", "RETRY_PERIOD")):  # fmt: skip
            parser.add_argument(
                f"--leader-elect-{flag}", type=float, default=None,
                help=f"seconds (default SLUICE_LEADER_ELECT_{what})",
            )  # fmt: skip
        parser.add_argument("--leader-elect-resource-namespace", default=None)
        parser.add_argument("--leader-elect-resource-name", default=None)
        parser.add_argument(
            "--kube-api-qps", type=float, default=settings.SLUICE_KUBE_API_QPS,
            help="requests per second to the API server (Volcano's --kube-api-qps)",
        )  # fmt: skip
        parser.add_argument(
            "--kube-api-burst", type=int, default=settings.SLUICE_KUBE_API_BURST,
            help="burst of requests above the QPS (Volcano's --kube-api-burst)",
        )  # fmt: skip
        parser.add_argument(
            "--bind-workers", type=int, default=settings.SLUICE_BIND_WORKERS,
            help="binds and status writes of a cycle in flight at once",
        )  # fmt: skip
        parser.add_argument(
            "--bind-process", action=argparse.BooleanOptionalAction,
            default=settings.SLUICE_BIND_PROCESS,
            help="send the binds from a process of their own (default: SLUICE_BIND_PROCESS)",
        )  # fmt: skip
        parser.add_argument(
            "--scheduler-conf",
            default=settings.SLUICE_SCHEDULER_CONF,
            help="a scheduler configuration in Volcano's format (default: Sluice's)",
        )

    def handle(self, *args, kubeconfig: str, once: bool, cycles: int, period: float, **options):
        _stop_on_signals()
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
        elector = self._elector(api, options)
        try:
            service = SchedulerService(
                api,
                config=config,
                config_source=source,
                scheduler_name=options["scheduler_name"] or settings.SLUICE_SCHEDULER_NAMES,
                act=options["mode"] == "act",
                clock=clock,
                admission=_admission(api, clock),
                leading=elector.is_leader if elector is not None else None,
                period=period,
                kube_api_qps=options["kube_api_qps"],
                kube_api_burst=options["kube_api_burst"],
                bind_workers=options["bind_workers"],
                bind_process=options["bind_process"],
            )
        except (ConfigError, OSError) as exc:
            where = "--scheduler-conf" if options["scheduler_conf"] else "configuration"
            raise CommandError(f"{where}: {exc}") from exc
        except ValueError as exc:  # a QPS, burst or worker count out of range
            raise CommandError(str(exc)) from exc
        try:
            if elector is not None:
                self._await_leadership(elector)  # a standby builds no cache and writes nothing
            try:
                service.start(sync_timeout=30)
            except TimeoutError as exc:
                raise CommandError(f"cluster at {api.configuration.host}: {exc}") from exc
            try:
                self._loop(service, 1 if once else cycles, period, elector)
            finally:
                service.stop()
        except KeyboardInterrupt:
            pass
        finally:
            if elector is not None:
                elector.stop()  # a leader releases the Lease: a standby takes over at once

    def _elector(self, api: client.ApiClient, options: dict) -> LeaderElector | None:
        if not options["leader_elect"]:
            return None
        try:
            config = election_config(
                options["scheduler_name"] or settings.SLUICE_SCHEDULER_NAMES,
                lease_duration=options["leader_elect_lease_duration"],
                renew_deadline=options["leader_elect_renew_deadline"],
                retry_period=options["leader_elect_retry_period"],
                namespace=options["leader_elect_resource_namespace"],
                name=options["leader_elect_resource_name"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        return LeaderElector(api, config, default_identity())

    def _await_leadership(self, elector: LeaderElector) -> None:
        lease = f"{elector.config.namespace}/{elector.config.name}"
        elector.start()
        said = ""
        while not elector.is_leader():
            if elector.holder and elector.holder != said:
                said = elector.holder
                self.stdout.write(f"standing by: lease {lease} is held by {said}")
            time.sleep(0.05)
        self.stdout.write(f"leading as {elector.identity} (lease {lease})")

    def _loop(
        self,
        service: SchedulerService,
        cycles: int,
        period: float,
        elector: LeaderElector | None = None,
    ) -> None:
        done = 0
        while cycles == 0 or done < cycles:
            if elector is not None and not elector.is_leader():
                # Volcano's OnStoppedLeading: klog.Fatalf("leaderelection lost"). Its cache is
                # dropped with the process; whoever leads next rebuilds from the cluster.
                raise CommandError(f"leader election lost: {elector.identity} no longer leads")
            started = time.monotonic()
            self._print(service.run_once())
            done += 1
            if cycles == 0 or done < cycles:
                until = started + period
                while time.monotonic() < until and (elector is None or elector.is_leader()):
                    time.sleep(min(0.05, max(0.0, until - time.monotonic())))

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


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _stop_on_signals() -> None:
    """SIGTERM (what Kubernetes sends a pod to stop) and SIGINT stop the command cleanly: the
    cycle in progress ends, writes finish, a leader releases its Lease. Installed explicitly:
    a process started in the background by a shell inherits SIGINT ignored, and Python then
    never turns it into KeyboardInterrupt."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
