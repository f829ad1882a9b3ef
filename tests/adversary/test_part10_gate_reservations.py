"""Part 10, gates when real life happens — the states the scenario tests do not reach.

Played through the simulated cluster's API with a real scheduler on virtual time (the e2e
Harness: after every cycle it checks that no pod waiting for its queue is marked
Unschedulable). The promises (README "Gate-controlled scheduling" and its "When real life
happens"; issue 15 items 1, 3, 4, 5, 6): an ungated pod keeps its share of the queue reserved
so no later pod takes it, for at most ``reservationTimeout``; a gang is ungated all together
once its minimum fits its queue, or not at all, and below it nothing is held; a pod held only
by our gate preempts within its queue and "its gate goes with the evictions, and stays if none
stand"; a pod that waits only for its queue is never ``Unschedulable``.

What these tests find: reservations are counted by every other pod's check but never checked
against the queue themselves, so once they add up to more than the queue holds — a
capability lowered, a gang half-ungated by an earlier scheduler, gate removals still in the
Celery queue when the scheduler restarts, an annotation a user wrote — they block the queue
(every holder refuses every other) until they time out, or for ever.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from scheduler.api.labels import QUEUE_ALLOCATION_GATE, QUEUE_RESERVATION_ANNOTATION
from scheduler.kube.gates import remove_gate
from scheduler.service import SchedulerService
from tests.adversary.helpers import without_pdb
from tests.builders import body, node, pod, podgroup
from tests.e2e.harness import Harness, condition, config_with, gates
from tests.invariants import check_cycle, store_conditions

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
NS = "team"
# The node an autoscaler would add for pods that need pool "new" (none exists at first).
NEW_NODE = body(node("n2", "8", "32Gi", labels={"pool": "new", "kubernetes.io/hostname": "n2"}))
NEEDS_NEW_NODE = {"nodeSelector": {"pool": "new"}}


def scenario(cpu: str) -> dict:
    return {
        "namespaces": [{"name": NS}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": cpu, "memory": "32Gi"},
                                          "reclaimable": False}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }  # fmt: skip


def harness(
    cpu: str = "2", *, capacity: dict | None = None, cls=Harness, pdb: bool = True
) -> Harness:
    config = config_with(capacity)
    h = cls(scenario(cpu), config=config if pdb else without_pdb(config))
    client.SchedulingV1Api(h.api).create_priority_class(
        {"metadata": {"name": "high"}, "value": 1000}
    )
    return h


def gated(h: Harness, name: str, cpu: str = "1", *, priority_class: str | None = None,
          **spec) -> None:  # fmt: skip
    """A pod as the webhook leaves it (opted in, gated) in a PodGroup of its own."""
    group = podgroup(f"pg-{name}", namespace=NS, queue="q", priority_class=priority_class)
    h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
    obj = pod(name, cpu, "1Gi", namespace=NS, group=f"pg-{name}", opt_in=True,
              gates=[QUEUE_ALLOCATION_GATE], priority_class=priority_class, spec=spec)  # fmt: skip
    h.core.create_namespaced_pod(NS, body(obj))


def trio(h: Harness, ungated: int, *, stamped: bool, **spec) -> None:
    """A gang of three 1-CPU opted-in members; the first ``ungated`` have lost their gate
    already — removed one by one by Volcano (no Sluice annotation), or by Sluice's own
    removals of which the last did not land (``stamped``: the annotation Sluice writes)."""
    group = podgroup("trio", 3, namespace=NS, queue="q")
    h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
    for i in range(3):
        lifted = i < ungated
        notes = (
            {QUEUE_RESERVATION_ANNOTATION: "2023-11-14T22:13:00Z"} if stamped and lifted else None
        )
        obj = pod(f"trio-{i}", "1", "1Gi", namespace=NS, group="trio", opt_in=True,
                  gates=[] if lifted else [QUEUE_ALLOCATION_GATE], annotations=notes,
                  spec=spec)  # fmt: skip
        h.core.create_namespaced_pod(NS, body(obj))


def get(h: Harness, name: str) -> dict:
    return h.pod(name, NS)


def node_of(h: Harness, name: str) -> str:
    return get(h, name)["spec"].get("nodeName") or ""


def queue_figures(h: Harness) -> tuple[dict, dict]:
    q = {r.name: r for r in h.reports[-1].queues}["q"]
    return q.allocated, q.reserved


# --- a gang in mixed states ------------------------------------------------------------------


@pytest.mark.parametrize("stamped", [False, True], ids=["ungated-by-volcano", "ungated-by-sluice"])
def test_a_half_ungated_gang_that_cannot_fit_its_queue_holds_none_of_it(stamped):
    """Issue 15 item 5 and README "Gangs are ungated together once their minimum fits the
    queue; below it none is, and nothing is held". Queue q holds 2 CPU; the gang ``trio``
    needs 3 (minMember 3 × 1 CPU), so it can never run in q. Two members lost their gate
    before this scheduler (Volcano removes gates one task at a time; or Sluice's removal of
    the third failed and the capability was lowered since). Then ``solo-0`` and ``solo-1``,
    1 CPU each, opted in, arrive: the queue runs nothing, so both must be let through and run
    on n1.

    What happens: each ungated member passes its own check and is reserved
    (``GateReservations.reserve_if_opted_in``, or ``load`` from the annotation); the gang is
    then discarded (``Statement.discard`` only undoes UNGATE operations, and these members
    had none), so the reservations stay — in ``ssn.reservations``, across cycles. The solos
    are refused ("reserved 1 CPU" or "reserved 2 CPU", as the members' order falls) and stay
    gated for the whole ``reservationTimeout`` (15 min)."""
    h = harness("2")
    try:
        trio(h, ungated=2, stamped=stamped)
        h.step(3)
        gated(h, "solo-0")
        gated(h, "solo-1")
        h.step(4)
        waiting = [(w.name, w.status.message) for w in h.reports[-1].waiting]
        assert [node_of(h, f"solo-{i}") for i in range(2)] == ["n1", "n1"], waiting
        assert queue_figures(h)[1].get("cpu", 0) == 0  # the trio holds nothing of q
    finally:
        h.close()


def test_a_half_ungated_gang_waiting_for_its_queue_is_not_marked_unschedulable():
    """Issue 15 item 4 ("a gang discarded after some members were ungated — is marked
    Unschedulable") and README: "A gang member waits for what the rest of its gang lacks:
    nodes, or its queue". The trio (3 CPU) can never run in q (2 CPU): buying a node changes
    nothing, so no member may say ``Unschedulable`` — Cluster Autoscaler would scale up for
    it over and over. Its ungated members need a node of pool "new" too.

    What happens: trio-0 is marked ``PodScheduled=False reason Unschedulable`` ("didn't match
    Pod's node affinity/selector"): its own status (a node shortfall, from ``_select_node``)
    wins over the gang's, and ``gang_cause`` says UNSCHEDULABLE as soon as any member lacked
    a node, though the queue refuses the gang whatever the nodes. The harness's invariant does
    not see it: the status code is UNSCHEDULABLE, not a queue code."""
    h = harness("2")
    try:
        trio(h, ungated=2, stamped=False, **NEEDS_NEW_NODE)
        h.step(3)
        for i in range(2):
            member = get(h, f"trio-{i}")
            assert gates(member) == []
            assert condition(member).get("reason") != "Unschedulable", condition(member)
    finally:
        h.close()


# --- reservations that add up to more than the queue --------------------------------------------


def test_a_capability_lowered_below_the_reservations_still_lets_one_pod_run():
    """README: an ungated pod "keeps its share of the queue reserved so no later pod takes
    it", and a queue whose capability is lowered after the gate went makes its pods wait for
    it (SchedulingSkipped). It must not make the queue unusable. a and b (1 CPU each, both
    needing the new pool) were let through into q (2 CPU) and reserved; the administrator
    lowers q to 1 CPU; the new node arrives. q has room for exactly one of them: one runs.

    What happens: neither ever does (until ``reservationTimeout``, 15 min): a's check counts
    b's reservation ("allocated nothing; reserved 1 CPU ... capability 1 CPU") and b's counts
    a's — ``CapacityPlugin.allocatable`` adds every other holder's reservation, and nothing
    ever reconciles the reservations with a capability that shrank below their sum. The
    queue stays empty with a node and two pods that fit."""
    h = harness("2")
    try:
        gated(h, "a", **NEEDS_NEW_NODE)
        h.clock.advance(1)
        gated(h, "b", **NEEDS_NEW_NODE)
        h.step(3)
        assert gates(get(h, "a")) == [] and gates(get(h, "b")) == []
        h.custom.patch_cluster_custom_object(
            *VOLCANO, "queues", "q", {"spec": {"capability": {"cpu": "1", "memory": "32Gi"}}}
        )
        h.store.create("nodes", NEW_NODE)
        h.step(6)
        placed = [name for name in ("a", "b") if node_of(h, name)]
        waiting = [(w.name, w.status.message) for w in h.reports[-1].waiting]
        assert len(placed) == 1, waiting
    finally:
        h.close()


class Broker:
    """The Celery queue ``gates`` (README: the cycle queues the gate's removal to it and goes
    on): removals wait here, surviving a scheduler restart, until a gates worker runs them."""

    def __init__(self) -> None:
        self.queued: list[tuple[str, str, str, str | None]] = []

    def submit(self, namespace: str, name: str, uid: str, reserved_at: str | None = None) -> None:
        self.queued.append((namespace, name, uid, reserved_at))

    def drain(self, cluster) -> None:
        while self.queued:
            namespace, name, uid, stamp = self.queued.pop(0)
            remove_gate(cluster, namespace, name, uid, reserved_at=stamp)


class CeleryHarness(Harness):
    """The Harness with the product's layout: gate removals go to a broker, and the gates
    worker runs them after each cycle."""

    def __init__(self, *args, **kwargs) -> None:
        self.broker = Broker()
        super().__init__(*args, **kwargs)

    def _new_service(self) -> SchedulerService:
        return SchedulerService(
            self.api, config=self.config, act=True, clock=self.clock.now,
            gate_remover=self.broker.submit,
        ).start(sync_timeout=10)  # fmt: skip

    def cycle(self):
        self.settle()
        report = self.service.run_once()
        assert self.service.cache.wait_for_writes(10)
        self.broker.drain(self.service.cluster)
        self.settle()
        check_cycle(report, store_conditions(self.store))
        self.reports.append(report)
        return report


def test_a_restart_while_a_gangs_gate_removals_are_queued_keeps_its_room_and_no_more():
    """Issue 15 item 1 (the design's race across a restart) and item 5, with the product's
    layout: gate removals travel through the Celery queue ``gates``, which outlives a
    scheduler worker restart. The gang ``trio`` (3 × 1 CPU, needs the new pool) fits q
    (3 CPU): its three removals are queued; the scheduler worker restarts before the gates
    worker runs them. ``solo`` (1 CPU, higher priority) arrives.

    What happened (found by the adversary): the restarted scheduler saw the trio still gated
    and nothing reserved, and let solo through; then the queued removals landed and the
    trio's annotations reserved 3 CPU in a queue already running solo — reservations past
    the capability, which blocked ``late`` (1 CPU) for 15 minutes. Now the cycle stamps each
    reservation on its pod while the removal is queued, so the restarted scheduler knows
    the trio holds q: solo waits gated, and q never holds more than its capability."""
    h = harness("3", cls=CeleryHarness)
    try:
        group = podgroup("trio", 3, namespace=NS, queue="q")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        for i in range(3):
            obj = pod(f"trio-{i}", "1", "1Gi", namespace=NS, group="trio", opt_in=True,
                      gates=[QUEUE_ALLOCATION_GATE], spec=NEEDS_NEW_NODE)  # fmt: skip
            h.core.create_namespaced_pod(NS, body(obj))
        h.sim.step(h.clock.now())
        h.settle()
        h.service.run_once()  # the gang fits q: its three removals go to the broker
        assert h.service.cache.wait_for_writes(10)
        assert len(h.broker.queued) == 3
        h.restart()  # the scheduler worker restarts; the broker keeps its messages
        gated(h, "solo", priority_class="high")
        h.step(3)  # the trio's removals land
        assert all(gates(get(h, f"trio-{i}")) == [] for i in range(3))
        assert node_of(h, "solo") == "" and gates(get(h, "solo")) == [QUEUE_ALLOCATION_GATE]
        allocated, reserved = queue_figures(h)
        assert allocated.get("cpu", 0) + reserved.get("cpu", 0) <= 3000, (allocated, reserved)
        h.store.create("nodes", NEW_NODE)
        h.step(3)
        assert all(node_of(h, f"trio-{i}") == "n2" for i in range(3))
    finally:
        h.close()


def test_a_reservation_annotation_a_user_wrote_is_not_a_reservation():
    """README: reservations are released after ``reservationTimeout``, and "Sluice counts
    only the pods whose gate it removed, so a pod that skipped the webhook does not claim room
    it was never checked for". The annotation ``sluice.io/queue-reservation-since`` is on the
    pod, where anyone who can create pods in the namespace can write it. ``squat`` asks 4 CPU
    of a 2-CPU queue — no check could ever pass it — opts in, carries no gate and writes the
    annotation with a date far in the future. ``victim`` (1 CPU, another team's pod in the
    shared queue) arrives: the queue is empty, it must run; with a 5 s reservationTimeout, an
    honest reservation would be gone anyway.

    What happens: ``GateReservations.load`` takes any Pending, ungated, opted-in pod with a
    readable annotation as a reservation, whatever its date (``ssn.now - since`` is negative,
    so ``expire`` never releases it) and whether or not its request ever fitted the queue:
    victim is refused "reserved 4 CPU" for ever. One pod blocks a shared queue permanently."""
    h = harness("2", capacity={"reservationTimeout": 5})
    try:
        group = podgroup("pg-squat", namespace=NS, queue="q")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        obj = pod("squat", "4", "1Gi", namespace=NS, group="pg-squat", opt_in=True,
                  annotations={QUEUE_RESERVATION_ANNOTATION: "2099-01-01T00:00:00Z"},
                  spec=NEEDS_NEW_NODE)  # fmt: skip
        h.core.create_namespaced_pod(NS, body(obj))
        h.step(2)
        gated(h, "victim")
        h.step(10)
        assert node_of(h, "victim") == "n1", [
            (w.name, w.status.message) for w in h.reports[-1].waiting
        ]
    finally:
        h.close()


# --- best effort, preemption ---------------------------------------------------------------------


def test_a_best_effort_member_of_a_gang_that_does_not_fit_its_queue_stays_gated():
    """README: "A gang is ungated all together, once its minimum fits its queue, or not at
    all", and gang scheduling itself: no member runs before the gang can. ``mix`` is a gang
    of three (minMember 3): one best-effort member (a sidecar-like pod asking nothing) and two
    1-CPU members, all gated; q holds 1 CPU, so the gang can never fit and must stay gated
    whole.

    What happens: allocate refuses the gang (the statement is discarded, the best-effort
    member re-gated), then backfill takes the gated best-effort member on its own
    (``backfill._backfill``: its queue check passes, it asks nothing), lifts its gate and
    binds it to n1 — one member of a gang that cannot run is running."""
    h = harness("1")
    try:
        group = podgroup("mix", 3, namespace=NS, queue="q")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        members = [("mix-be", None, None), ("mix-0", "1", "1Gi"), ("mix-1", "1", "1Gi")]
        for name, cpu, memory in members:
            obj = pod(name, cpu, memory, namespace=NS, group="mix", opt_in=True,
                      gates=[QUEUE_ALLOCATION_GATE])  # fmt: skip
            h.core.create_namespaced_pod(NS, body(obj))
        h.step(3)
        assert gates(get(h, "mix-0")) == [QUEUE_ALLOCATION_GATE]  # the gang does not fit q
        be = get(h, "mix-be")
        assert node_of(h, "mix-be") == "" and gates(be) == [QUEUE_ALLOCATION_GATE]
    finally:
        h.close()


def test_a_gated_pod_whose_preemption_evictions_are_all_refused_keeps_its_gate():
    """README ("Priority within a queue"): "A pod held only by the gate preempts
    lower-priority pods of its full queue (Volcano's preempt); its gate goes with the
    evictions, and stays if none stand." q (4 CPU) is full with four low-priority pods on
    n1 (8 CPU: the nodes have room, the queue does not); a PodDisruptionBudget lets none of
    them go. ``urgent`` (2 CPU, high priority, opted in, gated) tries to preempt: every
    eviction is refused (429). None stands, so urgent keeps its gate, holds no reservation,
    and is never ``Unschedulable`` (it waits for its queue, not for nodes).

    What happens: the statement commits the UNGATE operation first and the evictions after
    (``Statement.commit`` undoes only the pipeline when an eviction is refused): urgent loses
    its gate, gets the reservation annotation, holds 2 CPU of a queue already at its 4-CPU
    capability (reserved past the capability), and for a cycle carries
    ``PodScheduled=False reason Unschedulable`` ("not pipelined on n1: the eviction of ...
    was refused", a hard-coded UNSCHEDULABLE code) — Cluster Autoscaler would add a node
    that cannot help.

    Played without the pdb plugin (Volcano's default configuration), so the API refuses."""
    h = harness("4", pdb=False)
    try:
        for i in range(4):
            obj = pod(f"low-{i}", "1", namespace=NS, queue="q", grace=10, labels={"app": "low"})
            h.core.create_namespaced_pod(NS, body(obj))
        h.step(3)
        client.PolicyV1Api(h.api).create_namespaced_pod_disruption_budget(
            NS,
            {"metadata": {"name": "low"},
             "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "low"}}}},
        )  # fmt: skip
        gated(h, "urgent", "2", priority_class="high")
        reasons = []
        for _ in range(4):
            h.step(1)
            reasons.append(condition(get(h, "urgent")).get("reason"))
        refused = [e for r in h.reports for e in r.errors if e.startswith("evict ")]
        assert refused, "the disruption budget refused nothing: the scenario did not happen"
        assert "Unschedulable" not in reasons, reasons
        urgent = get(h, "urgent")
        assert gates(urgent) == [QUEUE_ALLOCATION_GATE]
        assert QUEUE_RESERVATION_ANNOTATION not in urgent["metadata"].get("annotations", {})
        assert queue_figures(h)[1].get("cpu", 0) == 0
    finally:
        h.close()
