"""Part 10 with two scheduler workers up at once, as the product runs them under Celery
(README "What make run starts": a Redis lock lets one worker run each cycle; beat sends a
cycle every ``SLUICE_CYCLE_PERIOD`` = 1 s; gate removals go to the Celery queue ``gates``,
served by the gates worker together with queue ``default``). Issue 15 item 1: "a restarted
scheduler worker, or a second one taking the cycle" keeps the reservations, so the
design's race — a pod taking the queue room another pod was let through for — never returns.

Played through the simulated cluster's API on virtual time; after every cycle the harness's
invariant (no pod waiting for its queue is Unschedulable) is checked.
"""

from __future__ import annotations

from kubernetes import client

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.service import WATCHED_KINDS, SchedulerService
from tests.adversary.test_part10_gate_reservations import NEEDS_NEW_NODE, NEW_NODE, NS, Broker
from tests.builders import body, podgroup
from tests.builders import pod as a_pod
from tests.conftest import wait_until
from tests.e2e.harness import Harness, config_with, gates
from tests.invariants import check_cycle, store_conditions

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


class TwoWorkers(Harness):
    """Two scheduler workers, each with its own cache, taking the cycles in turn (whichever
    gets the lock); the gates worker runs the queued removals after every second cycle (it
    lags one cycle behind: it serves queue ``default`` too)."""

    def __init__(self, *args, **kwargs) -> None:
        self.broker = Broker()
        super().__init__(*args, **kwargs)
        self.other = self._new_service()
        self.turn = 0

    def _new_service(self) -> SchedulerService:
        return SchedulerService(
            self.api, config=self.config, act=True, clock=self.clock.now,
            gate_remover=self.broker.submit,
        ).start(sync_timeout=10)  # fmt: skip

    def cycle(self):
        service = (self.service, self.other)[self.turn % 2]
        self.turn += 1
        target = {kind: self.store.latest_version([kind]) for kind in WATCHED_KINDS}
        wait_until(lambda: service.feeder.caught_up(target.__getitem__), timeout=10)
        report = service.run_once()
        assert service.cache.wait_for_writes(10)
        if self.turn % 2 == 0:
            self.broker.drain(service.cluster)
        target = {kind: self.store.latest_version([kind]) for kind in WATCHED_KINDS}
        for each in (self.service, self.other):
            wait_until(lambda each=each: each.feeder.caught_up(target.__getitem__), timeout=10)
        check_cycle(report, store_conditions(self.store))
        self.reports.append(report)
        return report

    def close(self) -> None:
        self.standby.append(self.other)
        super().close()


def gated(h: Harness, name: str, *, priority_class: str | None = None, **spec) -> None:
    group = podgroup(f"pg-{name}", namespace=NS, queue="q", priority_class=priority_class)
    h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
    obj = a_pod(name, "1", "1Gi", namespace=NS, group=f"pg-{name}", opt_in=True,
                gates=[QUEUE_ALLOCATION_GATE], priority_class=priority_class, spec=spec)  # fmt: skip
    h.core.create_namespaced_pod(NS, body(obj))


def test_a_second_worker_keeps_the_room_the_first_let_a_pod_through_for():
    """The seed's race (gate-controlled scheduling design; README "When real life happens":
    "a second one taking the cycles, takes it up from the pod"), with two workers up. Queue q
    holds 1 CPU. Worker A lets pod-2 (1 CPU, needs a node of pool "new") through: its gate
    removal is queued, and pod-2's room is reserved. pod-3 (1 CPU, higher priority, fits n1
    now) arrives; the next cycle is worker B's, one second later, before the gates worker has
    run pod-2's removal. pod-2's room must stay pod-2's: pod-3 waits gated
    (``SchedulingGated``), as it does after a restart or failover in
    tests/e2e/gates/test_real_life.py, and pod-2 runs on the node bought for it.

    What happens: the reservation lives only in A's memory until the annotation lands with
    the removal, and B's cache does not know the removal is queued: B sees pod-2 gated and
    the queue empty, lets pod-3 through and binds it to n1. pod-2, whose Unschedulable
    condition has already made the autoscaler buy a node, then waits for its queue
    ("capability exceeded: allocated 1 CPU") — the race the reservation was built to close."""
    scenario = {
        "namespaces": [{"name": NS}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "1", "memory": "32Gi"}}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }
    h = TwoWorkers(scenario, config=config_with())
    try:
        client.SchedulingV1Api(h.api).create_priority_class(
            {"metadata": {"name": "high"}, "value": 1000}
        )
        gated(h, "pod-2", **NEEDS_NEW_NODE)
        h.step(1)  # worker A: pod-2 passes its queue, its removal is queued
        assert len(h.broker.queued) == 1
        gated(h, "pod-3", priority_class="high")
        h.step(3)  # worker B, then A, B...; the gates worker runs every second cycle
        assert gates(h.pod("pod-2", NS)) == []
        assert gates(h.pod("pod-3", NS)) == [QUEUE_ALLOCATION_GATE]
        assert not h.pod("pod-3", NS)["spec"].get("nodeName")
        h.store.create("nodes", NEW_NODE)
        h.step(2)
        assert h.pod("pod-2", NS)["spec"].get("nodeName") == "n2"
    finally:
        h.close()
