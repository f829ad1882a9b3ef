"""Scenarios in the spirit of Volcano's uthelper: objects in (from tests.builders), cluster
writes out (recorded by tests.fakes.RecordingClusterClient)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.cache import SchedulerCache
from scheduler.config import SchedulerConfig, default_config
from scheduler.framework.session import Session
from scheduler.framework.writer import Writer
from scheduler.loop import CycleReport, run_cycle
from tests.fakes import RecordingClusterClient


@dataclass
class Scenario:
    nodes: list = field(default_factory=list)
    pods: list = field(default_factory=list)
    podgroups: list = field(default_factory=list)
    queues: list = field(default_factory=list)
    config: SchedulerConfig | None = None
    priority_classes: dict | None = None
    disruption_budgets: list = field(default_factory=list)

    def cache(self) -> SchedulerCache:
        cache = SchedulerCache(priority_classes=self.priority_classes)
        for budget in self.disruption_budgets:
            cache.add_disruption_budget(budget)
        for q in self.queues:
            cache.add_queue(q)
        for n in self.nodes:
            cache.add_node(n)
        for pg in self.podgroups:
            cache.add_podgroup(pg)
        for p in self.pods:
            cache.add_pod(p)
        return cache

    def run(self, act: bool = True) -> tuple[CycleReport, RecordingClusterClient]:
        client = RecordingClusterClient()
        report = run_cycle(self.cache(), self.config or default_config(), client, now=0.0, act=act)
        return report, client


def open_session(scenario: Scenario) -> tuple[Session, RecordingClusterClient]:
    """An open Session over the scenario's cache, writing to a recording client."""
    cache = scenario.cache()
    client = RecordingClusterClient()
    ssn = Session(cache.snapshot(), default_config(), Writer(cache, client), now=0)
    ssn.open()
    return ssn, client


def binds(client: RecordingClusterClient) -> dict[str, str]:
    return client.binds()


def conditions(client: RecordingClusterClient) -> dict[str, dict]:
    """Last PodScheduled patch per pod."""
    return {c[1]: c[2] for c in client.of("patch_pod_condition")}


def pg_status(client: RecordingClusterClient) -> dict[str, dict]:
    return {c[1]: c[2] for c in client.of("patch_podgroup_status")}


def waiting(report: CycleReport) -> dict[str, str]:
    return {f"{w.namespace}/{w.name}": w.status.message for w in report.waiting}
