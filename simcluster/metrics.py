"""The simulated autoscaler's own figures in Prometheus format, at the simulated API server's
``GET /metrics`` (a real Cluster Autoscaler serves its own on ``--address``, :8085 by default).

They come from the ledger (``simcluster.autoscaler.records``): scale-ups, the false ones (no
triggering pod could have run in its queue), and the node-seconds the added nodes spent with
nothing on them; with faults on, how many of each kind were injected. The web's ``/metrics`` passes them on while it points at a simulated cluster
(``SLUICE_SIM_METRICS``).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from simcluster.runtime import Simulation

PREFIX = "sluice_sim_"


class LedgerCollector(Collector):
    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def collect(self) -> Iterator[Metric]:
        report = self.simulation.report()
        labels = [report["autoscaler"]]
        summary = report["summary"]
        for name, key, help_text in (
            ("scale_ups", "scale_ups", "Nodes the simulated autoscaler added"),
            (
                "false_scale_ups",
                "false_scale_ups",
                "Scale-ups none of whose triggering pods could have run in its queue",
            ),
            (
                "wasted_node_seconds",
                "wasted_node_seconds",
                "Seconds the added nodes existed with no pod but DaemonSet or static pods",
            ),
            ("scale_downs", "scale_downs", "Nodes the simulated autoscaler removed"),
        ):
            family = CounterMetricFamily(f"{PREFIX}{name}", help_text, labels=["autoscaler"])
            family.add_metric(labels, float(summary[key]))
            yield family
        if self.simulation.faults is not None:  # --faults or the scenario's faults: section
            family = CounterMetricFamily(
                f"{PREFIX}faults_injected", "Faults the simulated cluster injected, by kind",
                labels=["kind"],
            )  # fmt: skip
            for kind, count in report["faults"].items():
                family.add_metric([kind], float(count))
            yield family


def exposition(simulation: Simulation) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LedgerCollector(simulation))
    return generate_latest(registry)
