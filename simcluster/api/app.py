"""The running simulated cluster: store, clock, simulation and API server, wired together.

``python manage.py simcluster`` parses its arguments into ``SimClusterOptions`` and calls
``serve``; nothing here imports Django.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scheduler.admission.node_groups import dump_node_groups
from scheduler.clock import WallClock
from simcluster.api.cluster import Cluster
from simcluster.api.errors import ApiError
from simcluster.api.server import ApiServer
from simcluster.api.webhook import Webhook
from simcluster.bootstrap import ensure_system_namespace
from simcluster.catalog import resolve
from simcluster.faults import FaultConfig, Faults
from simcluster.metrics import exposition as simulation_metrics
from simcluster.persistence import Journal, SavedState, read_state
from simcluster.runtime import Simulation
from simcluster.store import AlreadyExists, Store

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class SimClusterOptions:
    host: str = "127.0.0.1"
    port: int = 0
    kubeconfig: str = ".run/kubeconfig"
    scenario: str = "demo"
    speed: float = 1.0
    webhook_url: str = ""
    webhook_failure_policy: str = "Fail"
    webhook_timeout: float = 10.0
    # "<name>.<namespace>.svc=PORT": where a stored MutatingWebhookConfiguration's
    # clientConfig.service is called (127.0.0.1:PORT), as the cluster's DNS would resolve it.
    webhook_service: tuple[str, ...] = ()
    autoscaler: str = "none"
    state: str = ""
    node_groups_file: str = ""  # where to describe the node groups for the admission check
    faults: str = (
        ""  # simcluster.faults: "all", "all=0.02" or "conflict=0.05,…"; replaces the scenario's
    )


@dataclass
class SimCluster:
    store: Store
    cluster: Cluster
    server: ApiServer
    simulation: Simulation
    options: SimClusterOptions
    journal: Journal | None = None  # keeps ``--state`` current (simcluster.persistence)
    restored: SavedState | None = None
    faults: Faults | None = None  # what --faults or the scenario's faults: section injects

    def stop(self) -> None:
        """Stop the simulation and the server, then write ``--state``'s last snapshot."""
        self.simulation.stop()
        self.server.stop()
        if self.journal is not None:
            self.journal.close()


def build(options: SimClusterOptions) -> SimCluster:
    """The cluster, restored from ``--state`` when the file exists and journaled into it from
    ``start_journal`` on (``serve`` does both)."""
    restored = read_state(options.state) if options.state else None
    clock = restored.clock_at(options.speed) if restored else WallClock(options.speed)
    store = Store(clock.now)
    if restored is not None:
        store.load(restored.store)
    webhook = None
    if options.webhook_url:
        webhook = Webhook(
            options.webhook_url, options.webhook_failure_policy, options.webhook_timeout
        )
    cluster = Cluster(store, clock.now, webhook, parse_webhook_services(options.webhook_service))
    ensure_system_namespace(store)  # kept from a restored state: the cluster's identity
    scenario = resolve(options.scenario)
    config = FaultConfig.from_text(options.faults) if options.faults else None
    if config is None and scenario is not None:
        config = scenario.faults
    faults = Faults(config, cluster) if config is not None and config.enabled else None
    if faults is not None and cluster.webhook is not None:
        cluster.webhook = dataclasses.replace(cluster.webhook, faults=faults)
    cluster.webhook_faults = faults
    simulation = Simulation(
        store,
        clock,
        create_pod=scenario_pod_creator(cluster),
        autoscaler=options.autoscaler,
        scenario=scenario,
        faults=faults,
    )
    if restored is not None and restored.simulation:
        simulation.resume(restored.simulation)
    server = ApiServer(cluster, host=options.host, port=options.port)
    server.faults = faults
    server.metrics = functools.partial(simulation_metrics, simulation)
    return SimCluster(store, cluster, server, simulation, options, restored=restored, faults=faults)


def parse_webhook_services(entries: tuple[str, ...] | list[str]) -> dict[str, int]:
    """``["sluice-webhook.sluice.svc=8443"]`` -> ``{"sluice-webhook.sluice.svc": 8443}``."""
    services = {}
    for entry in entries:
        host, _, port = entry.partition("=")
        if not host.endswith(".svc") or host.count(".") != 2 or not port.isdigit():
            raise ValueError(f"--webhook-service {entry!r}: expected <name>.<namespace>.svc=<port>")
        if not 0 < int(port) < 65536:
            raise ValueError(f"--webhook-service {entry!r}: the port must be 1-65535")
        services[host] = int(port)
    return services


def describe_faults(faults: Faults) -> str:
    """One line: the faults injected so far, by kind (every kind, zeros included)."""
    counts = ", ".join(f"{kind} {count}" for kind, count in faults.summary().items())
    return f"Faults injected (seed {faults.config.seed}): {counts}"


def start_journal(sim: SimCluster) -> Journal | None:
    """From now on every change reaches ``--state`` before the API answers (a snapshot first)."""
    if not sim.options.state:
        return None
    clock = sim.simulation.clock
    assert isinstance(clock, WallClock)
    sim.journal = Journal(sim.options.state, sim.store, clock, sim.simulation.progress).start()
    sim.simulation.on_step = sim.journal.record_progress
    return sim.journal


def scenario_pod_creator(cluster: Cluster) -> Callable[[dict], dict]:
    """Scenario pods go through admission and the rules; a restored duplicate is skipped."""

    def create(pod: dict) -> dict:
        try:
            return cluster.create_object("pods", pod)
        except ApiError as error:
            if error.reason == "AlreadyExists":
                raise AlreadyExists(error.message) from None
            raise

    return create


def serve(options: SimClusterOptions, announce: Callable[[str], None] = print) -> None:
    """Run until SIGINT (Ctrl-C) or SIGTERM, then shut down cleanly and save state."""
    sim = build(options)
    if sim.restored is not None:
        counts = ", ".join(
            f"{sim.restored.count(kind)} {kind}"
            for kind in ("nodes", "pods", "queues", "podgroups")
        )
        announce(f"Restored the simulated cluster from {options.state}: {counts}")
    start_journal(sim)
    sim.server.start()
    sim.simulation.start()
    path = sim.server.write_kubeconfig(options.kubeconfig, clock=sim.simulation.clock.describe())
    announce(f"Simulated cluster at {sim.server.url} (port {sim.server.port}); kubeconfig {path}")
    if sim.faults is not None:
        rates = ", ".join(
            f"{k} {v:g}"
            for k, v in sim.faults.config.to_dict().items()
            if k not in ("seed", "slowSeconds") and v
        )
        announce(f"Injecting faults (seed {sim.faults.config.seed}): {rates}")
    if options.node_groups_file:
        write_node_groups(sim.simulation, options.node_groups_file)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in STOP_SIGNALS}
    try:
        while not stop.wait(0.5):
            pass
        announce("Shutting down the simulated cluster…")
    finally:
        sim.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if sim.faults is not None:
        announce(describe_faults(sim.faults))
    if options.state:
        announce(f"Saved state to {options.state}")


def write_node_groups(simulation: Simulation, path: str) -> Path:
    """Describe the scenario's node groups in the file the node-capacity check reads."""
    groups = simulation.scenario.node_groups if simulation.scenario else []
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump_node_groups(g.described() for g in groups))
    return target
