"""Removing the queue-allocation gate from a pod, safely and idempotently (seed 000).

Always from a fresh GET: a pod that is gone, already ungated, or replaced by a new pod of the
same name (another UID) is left alone. The patch carries the pod's resourceVersion, so the
API server refuses it (409) if the pod changed since the read; then it reads again and retries
with backoff.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable

from scheduler.kube.client import Conflict, KubeClusterClient, NotFound

log = logging.getLogger(__name__)

QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"


class GateRemoval(enum.Enum):
    REMOVED = "removed"
    ALREADY_UNGATED = "already ungated"
    POD_GONE = "pod gone"
    POD_REPLACED = "pod replaced (new uid)"
    CONFLICT = "gave up after conflicts"


def gate_removal_patch(pod: dict, gate: str = QUEUE_ALLOCATION_GATE) -> list[dict] | None:
    """The JSON patch removing ``gate`` (keeping any other gate), or None when absent."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    if not any(g.get("name") == gate for g in gates):
        return None
    remaining = [g for g in gates if g.get("name") != gate]
    version = pod["metadata"]["resourceVersion"]
    return [
        # Setting the version we read makes the patch conditional: 409 if the pod moved on.
        {"op": "replace", "path": "/metadata/resourceVersion", "value": version},
        {"op": "replace", "path": "/spec/schedulingGates", "value": remaining},
    ]


def remove_gate(
    cluster: KubeClusterClient,
    namespace: str,
    name: str,
    uid: str | None,
    *,
    attempts: int = 5,
    backoff: Callable[[int], float] = lambda attempt: 0.05 * 2**attempt,
    sleep: Callable[[float], None] = time.sleep,
) -> GateRemoval:
    obj = f"pod {namespace}/{name}"
    for attempt in range(attempts):
        try:
            pod = cluster.get_pod(namespace, name)
        except NotFound:
            return GateRemoval.POD_GONE
        if uid and pod["metadata"].get("uid") != uid:
            return GateRemoval.POD_REPLACED
        patch = gate_removal_patch(pod)
        if patch is None:
            return GateRemoval.ALREADY_UNGATED
        try:
            cluster.patch_pod(pod, patch)
            log.info("queue-allocation gate removed", extra={"object": obj, "attempt": attempt})
            return GateRemoval.REMOVED
        except NotFound:
            return GateRemoval.POD_GONE
        except Conflict:
            log.info("conflict removing gate; re-reading", extra={"object": obj})
            sleep(backoff(attempt))
    return GateRemoval.CONFLICT
