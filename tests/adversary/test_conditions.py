"""What a waiting pod says to autoscalers: README's first promise — "a pod that only waits for
*queue* capacity never looks ``Unschedulable``, and a pod that truly lacks *cluster* capacity
does" (Cluster Autoscaler and Karpenter buy nodes for pods with PodScheduled=False, reason
Unschedulable)."""

from __future__ import annotations

from tests.adversary.helpers import (
    cycle,
    get_pod,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    node_of,
    start_service,
)


def scheduled_condition(sim, name: str) -> dict:
    conditions = get_pod(sim, name)["status"].get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), {})


def test_pods_waiting_only_for_their_queue_are_not_marked_unschedulable(sim):
    """Queue ``q`` holds 1 CPU and the node has 4 free. One of the single pods ``a`` and ``b``
    takes the queue; the other (refused at enqueue) and the gang ``g`` (admitted, refused by
    the queue's capability in allocate) wait for *queue* capacity only — a new node would not help them.
    Sluice writes PodScheduled=False reason Unschedulable on the three (job_status
    _record_tasks writes that reason for every waiting, ungated pod whatever its Status code),
    so an autoscaler buys nodes for pods that cannot use them — the false scale-ups README's
    table counts as "queue-limited triggers". Their condition must not say Unschedulable.
    A pod that lacks a node (``big``, 8 CPU) must say it."""
    make_node(sim, "n1", cpu="4")
    make_queue(sim, "default")
    make_queue(sim, "q", capability={"cpu": "1"})
    make_pod(sim, "a", queue="q")
    make_pod(sim, "b", queue="q")
    make_podgroup(sim, "g", 2, queue="q")
    make_pod(sim, "g-0", group="g")
    make_pod(sim, "g-1", group="g")
    make_pod(sim, "big", cpu="8")
    service = start_service(sim)
    try:
        cycle(sim, service)
        cycle(sim, service)
        waiting = [n for n in ("a", "b", "g-0", "g-1") if node_of(sim, n) is None]
        assert len(waiting) == 3
        reasons = {n: scheduled_condition(sim, n).get("reason") for n in waiting}
        assert "Unschedulable" not in reasons.values(), reasons
        assert scheduled_condition(sim, "big").get("reason") == "Unschedulable"
    finally:
        service.stop()
