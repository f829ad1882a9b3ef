"""Why a pod waits, in the words of someone who runs the queue rather than the scheduler."""

from __future__ import annotations

NO_NODE_SHAPE = "fits_no_node_shape"
STATES = {"gated": "Gated", "unschedulable": "Unschedulable", "pipelined": "Pipelined"}


def wait_state(pod: dict) -> str:
    """A waiting pod's state as the report gives it (older reports only say ``gated``)."""
    if pod.get("state") in STATES:
        return STATES[pod["state"]]
    return "Gated" if pod.get("gated") else "Unschedulable"


def risks_by_pod(risks: list[dict]) -> dict[str, dict]:
    """Admission-check verdicts by pod uid (a workload's risk applies to each of its pods)."""
    by_pod = {}
    for risk in risks:
        for uid in [risk.get("uid"), *risk.get("pod_uids", [])]:
            if uid:
                by_pod[uid] = risk
    return by_pod


def wait_reason(pod: dict, risk: dict | None = None, *, gate_removed: bool = False) -> str:
    """The sentence shown next to a waiting pod; ``risk`` is its admission-check verdict and
    ``gate_removed`` says whether Sluice lifted its gate (else it was never opted in)."""
    detail = pod.get("reason") or ""
    state = wait_state(pod)
    if state == "Pipelined":
        return detail  # the engine already says "pipelined on <node> until ..."
    if risk and risk.get("check_state") in ("Retry", "Pending"):
        # The queue took it, the check did not: its PodGroup stays Pending (and a pod of ours
        # keeps its gate, never reaching the queue check that would lift it).
        return f"held by the admission check: {risk.get('explanation') or detail}"
    if risk and risk.get("risk") == NO_NODE_SHAPE:
        if state == "Gated":  # still waiting for its queue: not (yet) a false admission
            explanation = risk.get("explanation") or ""
            return f"waiting for queue capacity (gated), and fits no node shape: {explanation}"
        # Admitted by quota although no node shape can hold it: a false admission.
        return f"fits no node shape (admitted by its queue's quota): {risk.get('explanation')}"
    if state == "Gated":
        return (
            f"waiting for queue capacity (gated): {detail}"
            if detail
            else ("waiting for queue capacity (gated)")
        )
    prefix = "gate removed; " if gate_removed else ""
    if "queue" in detail and any(w in detail for w in ("capability", "quota", "deserved")):
        return f"{prefix}waiting for queue capacity: {detail}"
    return f"{prefix}no node fits: {detail} (autoscaler notified)"
