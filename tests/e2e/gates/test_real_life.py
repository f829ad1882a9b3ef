"""Gate-controlled scheduling when real life happens, through the simulated cluster's API with
a real scheduler: restarts, a second scheduler taking over, priorities, best-effort pods, queue
refusals after the gate is gone, gangs, preemption, and the small things (an opt-in taken back,
a queue recreated, a hierarchy, observe mode).

The cast is the race of Volcano's gate-controlled scheduling design: queue q holds 1 CPU;
pod-2 (1 CPU) wants a node of pool "new" that does not exist yet; pod-3 arrives after pod-2
was let through. Every cycle, the harness checks that no pod waiting for its queue carries
PodScheduled=False with reason Unschedulable (tests/invariants.py).
"""

from __future__ import annotations

import pytest
from kubernetes import client

from scheduler.api.labels import QUEUE_ALLOCATION_GATE, QUEUE_RESERVATION_ANNOTATION
from scheduler.api.report import TransitionKind
from scheduler.service import SchedulerService
from tests.builders import body, node, pod, podgroup, queue
from tests.e2e.harness import Harness, condition, config_with, gates

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
NS = "team"
NEW_NODE = body(node("n2", "8", "32Gi", labels={"pool": "new", "kubernetes.io/hostname": "n2"}))


def scenario(*queues: dict) -> dict:
    return {
        "namespaces": [{"name": NS}],
        "queues": list(queues) or [{"name": "q", "spec": {"capability": {"cpu": "1", "memory": "1Gi"}}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }  # fmt: skip


@pytest.fixture
def h(request):
    params = getattr(request, "param", {})
    harness = Harness(
        scenario(*params.get("queues", [])), config=config_with(params.get("capacity"))
    )
    client.SchedulingV1Api(harness.api).create_priority_class(
        {"metadata": {"name": "high"}, "value": 1000}
    )
    yield harness
    harness.close()


def gated(h: Harness, name: str, *, group: bool = True, queue_name: str = "q", cpu: str = "1",
          priority_class: str | None = None, **spec) -> None:  # fmt: skip
    """A pod as the webhook leaves it (annotated, gated), in its own PodGroup (no
    minResources: admitted at once) or, with ``group=False``, a plain pod."""
    if group:
        pg = podgroup(f"pg-{name}", namespace=NS, queue=queue_name, priority_class=priority_class)
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(pg))
    obj = pod(
        name, cpu, "1Gi" if cpu else None, namespace=NS, group=f"pg-{name}" if group else None,
        queue=None if group else queue_name, gates=[QUEUE_ALLOCATION_GATE], opt_in=True,
        priority_class=priority_class, spec=spec,
    )  # fmt: skip
    h.core.create_namespaced_pod(NS, body(obj))


def get(h: Harness, name: str) -> dict:
    return h.pod(name, NS)


def node_of(h: Harness, name: str) -> str:
    return get(h, name)["spec"].get("nodeName") or ""


def pod_2_let_through(h: Harness, *, group: bool = True, newcomer: str | None = "high") -> None:
    """pod-1 runs; pod-2 waits gated; pod-1 goes; pod-2 is ungated and reserved (no node yet);
    pod-3 — of a higher priority by default — arrives and must wait for pod-2's room."""
    gated(h, "pod-1", group=group)
    h.clock.advance(1)
    gated(h, "pod-2", group=group, nodeSelector={"pool": "new"})
    h.step(3)
    assert node_of(h, "pod-1") == "n1" and gates(get(h, "pod-2")) == [QUEUE_ALLOCATION_GATE]
    h.core.delete_namespaced_pod("pod-1", NS, grace_period_seconds=0)
    h.step(2)
    pod2 = get(h, "pod-2")
    assert gates(pod2) == [] and condition(pod2)["reason"] == "Unschedulable"
    assert QUEUE_RESERVATION_ANNOTATION in pod2["metadata"]["annotations"]
    gated(h, "pod-3", group=group, priority_class=newcomer)


def pod_2_keeps_its_room(h: Harness, *, preempts: bool = True) -> None:
    """pod-3 waits gated; pod-2 runs on the node bought for it. Then, if pod-3 is of a
    higher priority, it preempts pod-2 as Volcano's preempt does within a queue (the room it
    takes is the queue's, now pod-2 runs); else it waits for pod-2 to finish."""
    h.step(3)
    assert gates(get(h, "pod-3")) == [QUEUE_ALLOCATION_GATE]  # the room is pod-2's
    assert condition(get(h, "pod-3"))["reason"] == "SchedulingGated"
    h.store.create("nodes", NEW_NODE)
    h.step(1)
    assert node_of(h, "pod-2") == "n2"
    h.step(2)
    if preempts and get(h, "pod-3")["spec"].get("priorityClassName"):
        evicted = [t.name for t in h.reports[-2].transitions + h.reports[-1].transitions
                   if t.kind is TransitionKind.EVICTED]  # fmt: skip
        assert evicted == ["pod-2"] and gates(get(h, "pod-3")) == []
    else:
        assert gates(get(h, "pod-3")) == [QUEUE_ALLOCATION_GATE]  # one at a time, still


# --- 1. reservations survive a restart and a failover -------------------------------------


@pytest.mark.parametrize("newcomer", ["high", None])
@pytest.mark.parametrize("how", ["restart", "failover"])
def test_the_race_across_a_restart_or_failover(h, how, newcomer):
    pod_2_let_through(h, newcomer=newcomer)
    getattr(h, how)()  # everything the scheduler held in memory is gone
    pod_2_keeps_its_room(h)


# --- 2. plain pods (no PodGroup) behind a higher-priority newcomer --------------------------


@pytest.mark.parametrize("how", [None, "restart"])
def test_plain_pods_do_not_deadlock_behind_a_higher_priority_newcomer(h, how):
    """Without PodGroups each pod's admission is re-decided every cycle: the reserved pod-2
    stays admitted (its reservation is on the pod), so the newcomer waits gated instead of
    being admitted, refusing pod-2, and being refused by pod-2's reservation in turn."""
    pod_2_let_through(h, group=False)
    if how:
        getattr(h, how)()
    # A plain pod's gang of one is sized by its request: refused by the full queue, pod-3's is
    # not admitted, so it cannot preempt (as in Volcano, whose PodGroup for a plain pod has
    # minResources): it waits gated for pod-2 to finish.
    pod_2_keeps_its_room(h, preempts=False)
    h.core.delete_namespaced_pod("pod-2", NS, grace_period_seconds=0)
    h.step(3)
    assert node_of(h, "pod-3") == "n1"


# --- 3. best-effort pods --------------------------------------------------------------------


def test_a_gated_best_effort_pod_runs(h):
    """It asks its queue for nothing: an older webhook gated it anyway; it must not hang."""
    gated(h, "be", group=False, cpu=None)
    h.step(3)
    assert gates(get(h, "be")) == [] and node_of(h, "be") == "n1"


# --- 4. a queue refusal after the gate is gone is not Unschedulable -------------------------


def test_a_queue_closed_after_the_gate_went_does_not_make_the_pod_unschedulable(h):
    pod_2_let_through(h)
    h.custom.patch_cluster_custom_object_status(
        *VOLCANO, "queues", "q", {"status": {"state": "Closed"}}
    )
    h.step(2)  # the harness checks the invariant every cycle
    pod2 = get(h, "pod-2")
    assert condition(pod2)["reason"] == "SchedulingSkipped"
    assert "not open" in condition(pod2)["message"]


def test_a_capability_lowered_after_the_gate_went_does_not_make_the_pod_unschedulable(h):
    pod_2_let_through(h)
    h.custom.patch_cluster_custom_object(
        *VOLCANO, "queues", "q", {"spec": {"capability": {"cpu": "500m", "memory": "1Gi"}}}
    )
    h.step(2)
    assert condition(get(h, "pod-2"))["reason"] == "SchedulingSkipped"


@pytest.mark.parametrize("h", [{"capacity": {"reservationTimeout": 5}}], indirect=True)
def test_an_expired_reservation_leaves_its_pod_waiting_for_the_queue_not_for_nodes(h):
    pod_2_let_through(h)
    h.step(8)  # pod-2's reservation expires; pod-3 takes the room
    assert node_of(h, "pod-3") == "n1"
    pod2 = get(h, "pod-2")
    assert condition(pod2)["reason"] == "SchedulingSkipped"
    reasons = [e.reason for e in h.core.list_namespaced_event(NS).items
               if e.involved_object.name == "pod-2"]  # fmt: skip
    assert reasons.count("QueueReservationExpired") == 1


# --- 5. gangs are ungated together or not at all --------------------------------------------


def gang(h: Harness, name: str, members: int, queue_name: str = "q", **spec) -> None:
    pg = podgroup(name, members, namespace=NS, queue=queue_name)
    h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(pg))
    for i in range(members):
        obj = pod(f"{name}-{i}", "1", "1Gi", namespace=NS, group=name,
                  gates=[QUEUE_ALLOCATION_GATE], opt_in=True, spec=spec)  # fmt: skip
        h.core.create_namespaced_pod(NS, body(obj))


@pytest.mark.parametrize(
    "h", [{"queues": [{"name": "q", "spec": {"capability": {"cpu": "2"}}}]}], indirect=True
)
def test_a_gang_larger_than_its_queue_stays_gated_and_holds_nothing(h):
    gang(h, "trio", 3)
    h.step(3)
    for i in range(3):
        member = get(h, f"trio-{i}")
        assert gates(member) == [QUEUE_ALLOCATION_GATE]
        assert condition(member)["reason"] == "SchedulingGated"
        assert QUEUE_RESERVATION_ANNOTATION not in member["metadata"]["annotations"]
    assert {q.name: q.reserved for q in h.reports[-1].queues}["q"] == {}


@pytest.mark.parametrize(
    "h", [{"queues": [{"name": "q", "spec": {"capability": {"cpu": "3"}}}]}], indirect=True
)
def test_a_gang_that_fits_its_queue_but_no_node_is_ungated_all_together(h):
    gang(h, "trio", 3, nodeSelector={"pool": "new"})
    h.step(1)
    ungated = [t.name for t in h.reports[-1].transitions if t.kind is TransitionKind.GATE_REMOVED]
    assert sorted(ungated) == ["trio-0", "trio-1", "trio-2"]  # in one cycle
    h.step(1)
    for i in range(3):
        member = get(h, f"trio-{i}")
        assert gates(member) == [] and condition(member)["reason"] == "Unschedulable"
    assert {q.name: q.reserved for q in h.reports[-1].queues}["q"]["cpu"] == 3000
    h.store.create("nodes", NEW_NODE)
    h.step(3)
    assert {node_of(h, f"trio-{i}") for i in range(3)} == {"n2"}


# --- 6. an opted-in high-priority pod still preempts within its queue -----------------------


@pytest.mark.parametrize(
    "h",
    [{"queues": [{"name": "q", "spec": {"capability": {"cpu": "4"}, "reclaimable": False}}]}],
    indirect=True,
)
def test_an_opted_in_high_priority_pod_preempts_within_its_full_queue(h):
    for i in range(4):
        h.core.create_namespaced_pod(
            NS, body(pod(f"low-{i}", "1", namespace=NS, queue="q", grace=5))
        )
    h.step(3)
    gated(h, "urgent", cpu="2", priority_class="high")
    h.step(2)
    evicted = [t.name for r in h.reports for t in r.transitions if t.kind is TransitionKind.EVICTED]
    assert len(evicted) == 2 and all(n.startswith("low-") for n in evicted)
    urgent = get(h, "urgent")
    assert gates(urgent) == [] and urgent["status"].get("nominatedNodeName") == "n1"
    h.step(8)
    assert node_of(h, "urgent") == "n1"


# --- 7. the small things ----------------------------------------------------------------------


def test_an_opt_in_taken_back_lets_the_pod_through_without_a_reservation(h):
    gated(h, "pod-1")
    h.clock.advance(1)
    gated(h, "quits", nodeSelector={"pool": "new"})
    h.step(2)
    h.core.patch_namespaced_pod(
        "quits", NS, {"metadata": {"annotations": {QUEUE_ALLOCATION_GATE: None}}}
    )
    h.core.delete_namespaced_pod("pod-1", NS, grace_period_seconds=0)
    h.step(2)
    quits = get(h, "quits")
    assert gates(quits) == [] and condition(quits)["reason"] == "Unschedulable"
    assert QUEUE_RESERVATION_ANNOTATION not in (quits["metadata"].get("annotations") or {})
    assert {q.name: q.reserved for q in h.reports[-1].queues}["q"] == {}


def test_a_queue_deleted_and_created_again_keeps_the_reservations(h):
    pod_2_let_through(h)
    spec = h.custom.get_cluster_custom_object(*VOLCANO, "queues", "q")["spec"]
    h.custom.delete_cluster_custom_object(*VOLCANO, "queues", "q")
    h.step(1)
    h.custom.create_cluster_custom_object(*VOLCANO, "queues", body(queue("q", **{
        "capability": spec["capability"]})))  # fmt: skip
    pod_2_keeps_its_room(h)


@pytest.mark.parametrize(
    "h",
    [{"queues": [
        {"name": "dept", "spec": {"capability": {"cpu": "1", "memory": "1Gi"}}},
        {"name": "a", "spec": {"parent": "dept"}},
        {"name": "b", "spec": {"parent": "dept"}},
    ]}],
    indirect=True,
)  # fmt: skip
def test_a_reservation_in_one_child_holds_the_parents_capability_against_a_sibling(h):
    gated(h, "pod-1", queue_name="a")
    h.clock.advance(1)
    gated(h, "pod-2", queue_name="a", nodeSelector={"pool": "new"})
    h.step(3)
    h.core.delete_namespaced_pod("pod-1", NS, grace_period_seconds=0)
    h.step(2)
    assert gates(get(h, "pod-2")) == []
    gated(h, "sibling", queue_name="b")
    h.step(3)
    assert gates(get(h, "sibling")) == [QUEUE_ALLOCATION_GATE]
    h.store.create("nodes", NEW_NODE)
    h.step(3)
    assert node_of(h, "pod-2") == "n2"


def test_observe_mode_reports_a_gate_decision_once(h):
    observer = SchedulerService(h.api, config=h.config, act=False, clock=h.clock.now)
    observer.start(sync_timeout=5)
    try:
        gated(h, "watched")
        h.settle()
        reports = []
        for _ in range(3):
            h.sim.step(h.clock.now())
            h.settle()
            reports.append(observer.run_once())
            h.clock.advance(1)
    finally:
        observer.stop()
    ungates = [[t.name for t in r.transitions if t.kind is TransitionKind.GATE_REMOVED]
               for r in reports]  # fmt: skip
    assert ungates == [["watched"], [], []]
    assert gates(get(h, "watched")) == [QUEUE_ALLOCATION_GATE]  # nothing was written
