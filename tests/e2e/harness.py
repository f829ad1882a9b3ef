"""A simulated cluster on virtual time, reached through its HTTP API by a real scheduler.

Each step advances the simulation (arrivals, kubelet, autoscaler), lets the scheduler's
informers catch up, runs one cycle, waits for the queued gate removals and lets the informers
catch up again — so every test reads a settled cluster, deterministically.
"""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client

from scheduler.admission.context import Admission
from scheduler.admission.node_groups import sized_for
from scheduler.admission.source import PeriodicSnapshot, fetch_snapshot
from scheduler.clock import VirtualClock
from scheduler.config import SchedulerConfig, default_config
from scheduler.loop import CycleReport
from scheduler.service import WATCHED_KINDS, SchedulerService
from simcluster.api import ApiServer, Cluster, Webhook
from simcluster.api.app import scenario_pod_creator
from simcluster.bootstrap import ensure_system_namespace
from simcluster.runtime import Simulation
from simcluster.scenario import parse
from simcluster.store import Store
from tests.conftest import wait_until
from tests.invariants import check_cycle, store_conditions

START = 1_700_000_000.0


def config_with(capacity: dict | None = None) -> SchedulerConfig:
    """The default configuration, with extra arguments for the capacity plugin."""
    raw = default_config().to_dict()
    for tier in raw["tiers"]:
        for plugin in tier["plugins"]:
            if plugin["name"] == "capacity":
                plugin["arguments"] = {**plugin["arguments"], **(capacity or {})}
    return SchedulerConfig.from_dict(raw)


class Harness:
    def __init__(
        self,
        scenario: dict,
        *,
        autoscaler: str = "none",
        webhook_url: str = "",
        config: SchedulerConfig | None = None,
        setup: Callable[[Harness], None] | None = None,
        uid_seed: str | None = None,
    ) -> None:
        """``setup(harness)``, when given, runs once the cluster and the simulation exist and
        before the scheduler starts (its informers' first list and watch come after it);
        ``uid_seed`` makes the cluster's UIDs the same in every run (``Store.uid_seed``)."""
        self.clock = VirtualClock(START)
        self.store = Store(self.clock.now)
        self.store.uid_seed = uid_seed
        ensure_system_namespace(self.store)  # as kube-apiserver: the cluster's identity
        webhook = Webhook(webhook_url, "Fail", 5.0) if webhook_url else None
        self.cluster = Cluster(self.store, self.clock.now, webhook)
        self.server = ApiServer(self.cluster, port=0).start()
        self.sim = Simulation(
            self.store,
            self.clock,
            create_pod=scenario_pod_creator(self.cluster),
            autoscaler=autoscaler,
            scenario=parse(scenario),
        )
        self.sim.install(self.clock.now())
        self.api = client.ApiClient(client.Configuration(host=self.server.url))
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.config = config or default_config()
        if setup is not None:
            setup(self)
        self.service = self._new_service()
        self.standby: list[SchedulerService] = []  # services a failover left running idle
        self.reports: list[CycleReport] = []

    def _new_service(self) -> SchedulerService:
        return SchedulerService(self.api, config=self.config, act=True, clock=self.clock.now).start(
            sync_timeout=10
        )

    def restart(self) -> None:
        """The scheduler process restarts: everything it held in memory is gone."""
        self.service.stop()
        self.service = self._new_service()

    def failover(self) -> None:
        """A second scheduler (another worker, its own cache) takes the cycles over while the
        first one stays up and idle."""
        self.standby.append(self.service)
        self.service = self._new_service()

    def attach_admission(self, *, node_groups: bool = True) -> None:
        """Give the scheduler the node-capacity check (as its configuration says), fed by
        snapshots of this cluster on its clock (the resource monitor's job in the product),
        with the scenario's node groups as the shapes a scale-up can add."""
        self.snapshots = PeriodicSnapshot(lambda now: fetch_snapshot(self.api, now), self.clock.now)
        groups = [g.for_admission() for g in self.sim.scenario.node_groups] if node_groups else []
        self.service.admission = Admission.for_config(
            self.service.config,
            self.snapshots,
            node_groups=(lambda snap: sized_for(snap, groups)) if groups else None,
        )

    def settle(self) -> None:
        """Wait until each kind's watch has delivered that kind's latest change."""
        targets = {kind: self.store.latest_version([kind]) for kind in WATCHED_KINDS}
        wait_until(lambda: self.service.feeder.caught_up(targets.__getitem__), timeout=10)

    def cycle(self) -> CycleReport:
        self.settle()
        report = self.service.run_once()
        assert self.service.gate_pool.wait_idle(10), "gate removals did not finish"
        assert self.service.cache.wait_for_writes(10), "status patches did not finish"
        self.settle()
        check_cycle(report, store_conditions(self.store))
        self.reports.append(report)
        return report

    def step(self, seconds: int = 1, controller=None) -> None:
        """``seconds`` one-second rounds of simulation then one scheduling cycle; a
        ``controller`` callable plays a workload controller between the two."""
        for _ in range(seconds):
            self.sim.step(self.clock.now())
            if controller is not None:
                self.settle()
                controller()
            self.cycle()
            self.clock.advance(1)

    def pod(self, name: str, namespace: str = "default") -> dict:
        return self.store.get("pods", namespace, name)

    def close(self) -> None:
        for service in self.standby:
            service.stop()
        self.service.stop()
        self.api.close()
        self.server.stop()


def gates(pod: dict) -> list[str]:
    return [g["name"] for g in (pod.get("spec") or {}).get("schedulingGates") or []]


def condition(pod: dict, kind: str = "PodScheduled") -> dict:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return {}
