"""Promises checked after every cycle of every scenario test.

The one autoscalers depend on (Volcano's gate-controlled scheduling design, and the reason
Sluice exists): **no pod that waits only for queue capacity ever carries ``PodScheduled=False``
with reason ``Unschedulable``** — Cluster Autoscaler and Karpenter buy nodes for exactly those
pods. The reason ``Unschedulable`` belongs to node shortfalls (and, as in Volcano, to pipelined
pods, which carry a nomination autoscalers respect). It is decided from typed status codes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api.report import CycleReport, PodState
from scheduler.api.status import Code

UNSCHEDULABLE = "Unschedulable"
# Statuses that are not a node shortfall: a pod waiting with one of these must not look
# Unschedulable to an autoscaler.
NOT_FOR_NODES = frozenset(
    {Code.QUEUE_FULL, Code.QUEUE_CLOSED, Code.QUEUE_INVALID, Code.ADMISSION_HELD, Code.GATED,
     Code.INVALID_OBJECT}
)  # fmt: skip


def check_cycle(report: CycleReport, conditions: Callable[[str, str], Mapping[str, Any] | None]):
    """``conditions(namespace, name)`` is the pod's PodScheduled condition as the cluster holds
    it after the cycle (None when it has none, or the pod is gone)."""
    for pod in report.waiting:
        if pod.state is PodState.UNSCHEDULABLE or pod.state is PodState.PIPELINED:
            continue
        if pod.state is not PodState.GATED and pod.status.code not in NOT_FOR_NODES:
            continue
        condition = conditions(pod.namespace, pod.name) or {}
        assert condition.get("reason") != UNSCHEDULABLE, (
            f"pod {pod.namespace}/{pod.name} waits for {pod.status.code.value} "
            f"({pod.status.message}) but carries PodScheduled=False reason Unschedulable: "
            f"an autoscaler would buy a node for it"
        )


def recorded_conditions(client) -> Callable[[str, str], Mapping[str, Any] | None]:
    """The latest PodScheduled condition a RecordingClusterClient was asked to set, per pod."""
    latest: dict[str, Mapping[str, Any]] = {}
    for call in client.of("patch_pod_condition"):
        if call[2].get("type") == "PodScheduled":
            latest[call[1]] = call[2]
    return lambda namespace, name: latest.get(f"{namespace}/{name}")


def store_conditions(store) -> Callable[[str, str], Mapping[str, Any] | None]:
    """The PodScheduled condition of the pod in a simulated cluster's store."""

    def condition(namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            pod = store.get("pods", namespace, name)
        except Exception:  # gone
            return None
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled":
                return c
        return None

    return condition
