"""An in-process pool that removes gates asynchronously, for the ``schedule`` command.

Under Celery the ``remove_gate`` task on queue ``gates`` does this job; outside Celery this
pool does the same work on a few threads, so the command alone is a complete scheduler. A
pod already queued is not queued twice. A removal the API refuses for a while (429, 5xx) is
tried again a few times; one that still fails is handed back (``on_failure``), so the cache
stops counting the pod as ungated and the next cycle decides again — never a pod reported
ungated that still carries its gate.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from scheduler.kube.client import ApiError, KubeClusterClient
from scheduler.kube.fencing import NotLeader
from scheduler.kube.gates import GateRemoval, remove_gate

log = logging.getLogger(__name__)
RETRIED = frozenset({429, 500, 502, 503, 504})  # refusals that pass: the API is busy or failing
ATTEMPTS = 3


class GateRemovalPool:
    def __init__(
        self,
        cluster: KubeClusterClient,
        *,
        workers: int = 4,
        on_failure: Callable[[str], None] | None = None,
        backoff: float = 0.2,
    ) -> None:
        self._cluster = cluster
        self._on_failure = on_failure  # given the pod's uid when its removal is given up
        self._backoff = backoff
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gates")
        self._lock = threading.Lock()
        self._in_flight: dict[str, Future] = {}
        self.outcomes: collections.Counter[str] = collections.Counter()

    def submit(
        self, namespace: str, name: str, uid: str | None, reserved_at: str | None = None
    ) -> None:
        key = f"{namespace}/{name}/{uid}"
        with self._lock:
            if key in self._in_flight:
                return
            future = self._executor.submit(self._remove, namespace, name, uid, reserved_at)
            self._in_flight[key] = future
        future.add_done_callback(lambda _: self._done(key))

    def _remove(
        self, namespace: str, name: str, uid: str | None, reserved_at: str | None
    ) -> GateRemoval | None:
        for attempt in range(ATTEMPTS):
            try:
                outcome = remove_gate(self._cluster, namespace, name, uid, reserved_at=reserved_at)
                break
            except ApiError as exc:
                if exc.status in RETRIED and attempt + 1 < ATTEMPTS:
                    time.sleep(self._backoff * 2**attempt)
                    continue
                where = {"object": f"pod {namespace}/{name}"}
                log.warning("gate removal failed: %s", exc, extra=where)
                self._count("failed")
                if self._on_failure is not None and uid:
                    self._on_failure(uid)
                return None
            except NotLeader:  # its cluster client is fenced and the Lease is lost: not written
                log.info("gate removal not written: not the leader",
                         extra={"object": f"pod {namespace}/{name}"})  # fmt: skip
                self._count("not_leader")
                if self._on_failure is not None and uid:
                    self._on_failure(uid)
                return None
        self._count(outcome.name.lower())
        return outcome

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.outcomes[outcome] += 1

    def _done(self, key: str) -> None:
        with self._lock:
            self._in_flight.pop(key, None)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until every queued removal finished (tests and ``--once`` runs use it)."""
        with self._lock:
            pending = list(self._in_flight.values())
        for future in pending:
            try:
                future.result(timeout=timeout)
            except TimeoutError:
                return False
        return True

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=False)
