"""``remove_gate`` on queue ``gates``: lift the queue-allocation gate from one pod
(Volcano's gate-controlled scheduling design).

The scheduling cycle queues this and never waits for it. The task reads the pod fresh, leaves it
alone when it is gone, already ungated or replaced (another UID), and patches with the pod's
resourceVersion, retrying conflicts with backoff — so running it twice, or after the bind path's
own synchronous removal, is harmless. An unreachable API server is retried by Celery, and a
worker killed while running it leaves the message to another (``acks_late``).

Under leader election the message carries the queuing leader's term (its Lease, holder identity
and ``leaseTransitions``, :meth:`scheduler.kube.leader.LeaderElector.term`). A retry or an
``acks_late`` redelivery can run it long after that leader lost the Lease, and the new leader
shared the queue's room out without it: so before writing, the task reads the Lease once and
drops the removal (counted ``deposed``) unless it still names that holder in that transition —
the leader's fence, checked where the write leaves. Without leader election (no term) it writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import urllib3
from celery import shared_task
from kubernetes.client.rest import ApiException

from dashboard import kube
from dashboard.services import gate_stats
from dashboard.tasks import sending
from scheduler.kube.client import ApiError, KubeClusterClient
from scheduler.kube.fencing import fence_cluster_client
from scheduler.kube.gate_pool import RETRIED, GateRemovalPool
from scheduler.kube.gates import GateRemoval
from scheduler.kube.gates import remove_gate as remove_gate_now
from scheduler.kube.leader import lease_still_held

log = logging.getLogger(__name__)

_OUTCOME_COUNTER = {
    GateRemoval.REMOVED: "removed",
    GateRemoval.ALREADY_UNGATED: "already_ungated",
    GateRemoval.POD_GONE: "pod_gone",
    GateRemoval.POD_REPLACED: "pod_replaced",
    GateRemoval.CONFLICT: "gave_up",
}


@shared_task(
    name="dashboard.tasks.remove_gate",
    bind=True,
    ignore_result=True,
    autoretry_for=(OSError, urllib3.exceptions.HTTPError),
    retry_backoff=0.5,
    retry_backoff_max=10,
    max_retries=5,
    soft_time_limit=30,
    time_limit=60,
    # Acknowledged once it ran, and given back to the queue when the process running it dies
    # (SIGKILL, out of memory): a removal is never lost with its worker, and running it again
    # is harmless (above). Within the broker's visibility timeout (settings.py) when the whole
    # worker died; at once when only its pool process did.
    acks_late=True,
    reject_on_worker_lost=True,
)
def remove_gate(
    self,
    namespace: str,
    name: str,
    uid: str | None,
    reserved_at: str | None = None,
    term: dict[str, Any] | None = None,
) -> str:
    conflicts = 0

    def on_conflict() -> None:
        nonlocal conflicts
        conflicts += 1

    api = kube.api_client()
    if term is not None:
        try:
            held = lease_still_held(api, term)
        except ApiException as exc:
            if exc.status in RETRIED and self.request.retries < self.max_retries:
                raise self.retry(
                    exc=exc, countdown=min(10.0, 0.5 * 2**self.request.retries)
                ) from exc
            log.warning("gate removal: lease not read: HTTP %s", exc.status,
                        extra={"object": f"pod {namespace}/{name}"})  # fmt: skip
            gate_stats.add({"failed": 1})
            raise
        if not held:
            log.info(
                "gate removal dropped: queued by %s, who no longer holds lease %s/%s",
                term.get("holder"), term.get("namespace"), term.get("name"),
                extra={"object": f"pod {namespace}/{name}"},
            )  # fmt: skip
            gate_stats.add({"deposed": 1})
            return "deposed"
    cluster = KubeClusterClient(api)
    try:
        outcome = remove_gate_now(
            cluster, namespace, name, uid, reserved_at=reserved_at, on_conflict=on_conflict
        )
    except ApiError as exc:
        if exc.status in RETRIED and self.request.retries < self.max_retries:
            # The API is busy or failing (429, 5xx): try again later, as for a lost connection.
            raise self.retry(exc=exc, countdown=min(10.0, 0.5 * 2**self.request.retries)) from exc
        log.warning("gate removal failed: %s", exc, extra={"object": f"pod {namespace}/{name}"})
        gate_stats.add({"failed": 1, "conflicts": conflicts})
        raise
    gate_stats.add({_OUTCOME_COUNTER[outcome]: 1, "conflicts": conflicts})
    return outcome.value


def queue_gate_removal(
    namespace: str,
    name: str,
    uid: str,
    reserved_at: str | None = None,
    *,
    term: Callable[[], dict[str, Any] | None] | None = None,
) -> None:
    """The scheduling cycle's GateRemover under Celery: send, never wait. ``term`` (the
    leader's :meth:`~scheduler.kube.leader.LeaderElector.term`) goes with the message, for the
    task to check the Lease with. While the broker does not take it (Redis restarting), this
    process's own pool removes the gate, as the ``schedule`` command's does
    (``dashboard.tasks.sending``), fenced by the same leadership."""
    held = term() if term is not None else None
    if term is not None and held is None:
        return  # no longer leading: nothing leaves (the service's fence counted it already)
    args = (namespace, name, uid, reserved_at, held)
    if not sending.send(remove_gate, args, queue="gates"):
        leading = (lambda: term() == held) if term is not None else None
        _fallback_pool(leading).submit(namespace, name, uid, reserved_at)


_pool_lock = threading.Lock()
_pool: tuple[object, GateRemovalPool] | None = None
_fence: list[Callable[[], bool] | None] = [None]  # what fences the fallback pool's writes now


def _fallback_pool(leading: Callable[[], bool] | None = None) -> GateRemovalPool:
    """The in-process pool for the current cluster client (made again when it changes). Its
    writes ask ``leading`` (the one given last; None: no leader election) before they leave,
    as the leader's own writes do (``fence_cluster_client``)."""
    global _pool
    api = kube.api_client()
    with _pool_lock:
        _fence[0] = leading
        if _pool is None or _pool[0] is not api:
            if _pool is not None:
                _pool[1].shutdown()
            cluster = KubeClusterClient(api)
            fence_cluster_client(cluster, _fenced_now)
            _pool = (api, GateRemovalPool(cluster))
        return _pool[1]


def _fenced_now() -> bool:
    leading = _fence[0]
    return leading is None or leading()
