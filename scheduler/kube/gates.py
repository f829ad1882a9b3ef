"""Removing the queue-allocation gate from a pod, safely and idempotently
(Volcano's gate-controlled scheduling design).

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

from scheduler.kube.client import Conflict, KubeClusterClient, NotFound, gate_removal_patch

log = logging.getLogger(__name__)


class GateRemoval(enum.Enum):
    REMOVED = "removed"
    ALREADY_UNGATED = "already ungated"
    POD_GONE = "pod gone"
    POD_REPLACED = "pod replaced (new uid)"
    CONFLICT = "gave up after conflicts"


def remove_gate(
    cluster: KubeClusterClient,
    namespace: str,
    name: str,
    uid: str | None,
    *,
    reserved_at: str | None = None,
    attempts: int = 5,
    backoff: Callable[[int], float] = lambda attempt: 0.05 * 2**attempt,
    sleep: Callable[[float], None] = time.sleep,
    on_conflict: Callable[[], None] = lambda: None,
) -> GateRemoval:
    obj = f"pod {namespace}/{name}"
    for attempt in range(attempts):
        try:
            pod = cluster.get_pod(namespace, name)
        except NotFound:
            return GateRemoval.POD_GONE
        if uid and pod["metadata"].get("uid") != uid:
            return GateRemoval.POD_REPLACED
        patch = gate_removal_patch(pod, reserved_at=reserved_at)
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
            on_conflict()
            sleep(backoff(attempt))
    return GateRemoval.CONFLICT
