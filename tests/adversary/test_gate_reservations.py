"""Gate reservations (Volcano's gate-controlled scheduling design, README "Gate-controlled
scheduling" and "Differences from Volcano"): a pod whose queue check passed and whose gate was
removed holds its share of the queue until it binds, so no later pod takes the room it saw."""

from __future__ import annotations

from tests.adversary.helpers import (
    cycle,
    get_pod,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    node_of,
    scheduling,
    start_service,
)

GATE = "scheduling.volcano.sh/queue-allocation-gate"


def gates_of(sim, name: str) -> list[str]:
    return [g["name"] for g in get_pod(sim, name)["spec"].get("schedulingGates") or []]


def test_a_parent_capability_holds_the_reservations_of_every_child(sim):
    """README, Differences from Volcano, "Reservations up the tree": a gate reservation counts
    "also against the queue's ancestors — a parent's capability holds reserved pods of its
    children too". Parent ``p`` (2 CPU) has children ``a`` and ``b``. a1 (2 CPU, opted in)
    passes, loses its gate and finds no node: it holds 2 CPU of ``p`` (the cycle report says
    p reserved 2 CPU). b1 (1 CPU, opted in, queue ``b``) must then stay gated: p would be at
    3 of 2 CPU. CapacityPlugin.allocatable adds only the *candidate's own queue's* reservations
    (held_by_others(queue.name, ...)) at every level of the chain, so b1 passes p's check,
    loses its gate and binds — and a1, the pod the reservation was for, can never run in p
    (the design's race, one level up). PodGroups without minResources keep enqueue out of it."""
    make_node(sim, "n1", cpu="1")
    make_queue(sim, "p", capability={"cpu": "2"})
    make_queue(sim, "a", parent="p")
    make_queue(sim, "b", parent="p")
    make_podgroup(sim, "ga", queue="a")
    make_pod(sim, "a1", cpu="2", group="ga", gates=[GATE], opt_in=True)
    service = start_service(sim)
    try:
        report = cycle(sim, service)
        assert gates_of(sim, "a1") == []  # passed its queue: ungated, no node fits
        reserved = {q.name: q.reserved.get("cpu", 0) for q in report.queues}
        assert reserved["p"] == 2000  # the report itself counts it against the parent
        make_podgroup(sim, "gb", queue="b")
        make_pod(sim, "b1", cpu="1", group="gb", gates=[GATE], opt_in=True)
        cycle(sim, service)
        cycle(sim, service)
        assert gates_of(sim, "b1") == [GATE] and node_of(sim, "b1") is None
    finally:
        service.stop()


def test_a_restarted_scheduler_keeps_the_reservations_of_ungated_pods(sim):
    """Volcano's gate-controlled scheduling design rebuilds the reserved set at every session
    open from the pods themselves ("Tasks that passed capacity have: NO gate + HAS annotation
    + Pending status", buildQueueReservedTasksCache), so a scheduler restart (a Celery worker
    restarted, a new SchedulerService on the same cluster) keeps every reservation. Sluice
    keeps them only in the cache's memory (GateReservations.load: "Only a pass this scheduler
    saw counts"). Queue ``q`` holds 1 CPU; a1 passed, was ungated and waits for a node. After
    a restart, b1 (higher priority, same queue) is tried first, finds the queue "empty",
    loses its gate and takes a1's room: a1 — ungated, carrying an Unschedulable condition
    an autoscaler acts on — now waits for its *queue*, the state the design exists to prevent."""
    scheduling(sim).create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    make_node(sim, "n1", cpu="1")
    make_queue(sim, "q", capability={"cpu": "1"})
    make_pod(sim, "hog", cpu="1")  # fills n1 (default queue): a1 finds no node
    make_podgroup(sim, "ga", queue="q")
    make_pod(sim, "a1", cpu="1", group="ga", gates=[GATE], opt_in=True)
    service = start_service(sim)
    try:
        cycle(sim, service)
        cycle(sim, service)
        assert gates_of(sim, "a1") == [] and node_of(sim, "a1") is None
    finally:
        service.stop()
    restarted = start_service(sim)
    try:
        make_podgroup(sim, "gb", queue="q", priority_class="high")
        make_pod(sim, "b1", cpu="1", group="gb", gates=[GATE], opt_in=True)
        report = cycle(sim, restarted)
        waiting = {w.name: w.status.message for w in report.waiting}
        assert gates_of(sim, "b1") == [GATE], waiting
    finally:
        restarted.stop()


def test_without_a_restart_the_reservation_holds_against_a_higher_priority_pod(sim):
    """The control for the test above, same objects, one scheduler throughout: b1 stays
    gated behind a1's reservation. (Regression test: passes today.)"""
    scheduling(sim).create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    make_node(sim, "n1", cpu="1")
    make_queue(sim, "q", capability={"cpu": "1"})
    make_pod(sim, "hog", cpu="1")
    make_podgroup(sim, "ga", queue="q")
    make_pod(sim, "a1", cpu="1", group="ga", gates=[GATE], opt_in=True)
    service = start_service(sim)
    try:
        cycle(sim, service)
        cycle(sim, service)
        make_podgroup(sim, "gb", queue="q", priority_class="high")
        make_pod(sim, "b1", cpu="1", group="gb", gates=[GATE], opt_in=True)
        cycle(sim, service)
        assert gates_of(sim, "b1") == [GATE]
    finally:
        service.stop()
