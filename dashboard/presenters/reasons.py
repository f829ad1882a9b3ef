"""Why a pod waits, in the words of someone who runs the queue rather than the scheduler.

The sentence is chosen from the pod's state, the Status code that keeps it waiting and its
workload's admission-check verdict — never from the words of the engine's message, which is
only quoted.
"""

from __future__ import annotations

from collections.abc import Iterable

from dashboard.selectors.pods import PodRow
from scheduler.api.report import PodState, RiskClass, WaitingPod, WorkloadRisk
from scheduler.api.status import Code

# What each risk class means to the person who submitted the workload, worst first.
RISK_LABELS = {
    RiskClass.FITS_NO_NODE_SHAPE: (
        "Fits no node shape",
        "no node, and no node the autoscaler can add, is large enough: the workload will "
        "never run as it is",
    ),
    RiskClass.FITS_AFTER_SCALE_UP: (
        "Fits after a scale-up",
        "runs once the autoscaler adds a node",
    ),
    RiskClass.WAITING_FOR_QUEUE: ("Waiting for its queue", "fits the cluster; its queue is full"),
    RiskClass.FITS_NOW: ("Fits now", "a node has room for it now"),
}


def risks_by_pod(risks: Iterable[WorkloadRisk]) -> dict[str, WorkloadRisk]:
    """Admission-check verdicts by pod uid (a workload's risk applies to each of its pods)."""
    by_pod = {}
    for risk in risks:
        for uid in [risk.uid, *risk.pod_uids]:
            by_pod[uid] = risk
    return by_pod


def wait_reason(
    pod: WaitingPod, risk: WorkloadRisk | None = None, *, gate_removed: bool = False
) -> str:
    """The sentence shown next to a waiting pod; ``risk`` is its workload's admission-check
    verdict and ``gate_removed`` says whether Sluice lifted its gate (else it never had one)."""
    status = pod.status
    detail = status.message
    if pod.state is PodState.PIPELINED:
        return detail  # the engine already says "pipelined on <node> until ..."
    if status.code is Code.QUEUE_INVALID:
        # Not queue capacity: its queue does not exist (or cannot be used), and nothing but a
        # fix of the queue, or of the pod's reference to it, will move the pod.
        until = "stays gated" if pod.state is PodState.GATED else "is not scheduled"
        return f"its queue cannot be used: {detail}; the pod {until} until that is fixed"
    if risk is not None and risk.held:
        # The queue took it, the check did not: its PodGroup stays Pending (and a pod of ours
        # keeps its gate, never reaching the queue check that would lift it).
        return f"held by the admission check: {risk.explanation or detail}"
    if risk is not None and risk.risk is RiskClass.FITS_NO_NODE_SHAPE:
        if pod.state is PodState.GATED:  # still waiting for its queue: not (yet) admitted
            return f"waiting for queue capacity (gated), and fits no node shape: {risk.explanation}"
        # Admitted by quota although no node shape can hold it: a false admission.
        return f"fits no node shape (admitted by its queue's quota): {risk.explanation}"
    if status.code is Code.GATED:
        return detail  # another controller's gate: "waiting for scheduling gates to be removed"
    if pod.state is PodState.GATED:
        return (
            f"waiting for queue capacity (gated): {detail}"
            if detail
            else ("waiting for queue capacity (gated)")
        )
    prefix = "gate removed; " if gate_removed else ""
    if status.queue_limited:
        return f"{prefix}waiting for queue capacity: {detail}"
    if status.code is Code.UNSCHEDULABLE:
        return f"{prefix}no node fits: {detail} (autoscaler notified)"
    if status.code is Code.GANG:
        return f"{prefix}waiting for its gang: {detail}"
    if status.code is Code.ADMISSION_HELD:
        return f"held by the admission check: {detail}"
    return f"{prefix}{detail}"


def explain_rows(rows: Iterable[PodRow], risks: Iterable[WorkloadRisk]) -> None:
    """Put why each waiting pod waits into words, for the rows shown only."""
    by_pod = risks_by_pod(risks)
    for row in rows:
        if row.waiting is not None:
            row.message = wait_reason(
                row.waiting, by_pod.get(row.uid), gate_removed=row.gate_removed
            )
