"""A long-lived scheduler: a SchedulerCache kept current by informers, cycles on demand.

Both the Celery scheduler worker and the ``schedule`` management command run one of these,
so there is one way to schedule against a cluster, real or simulated.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kubernetes import client

from scheduler.cache.cache import SchedulerCache
from scheduler.config import SchedulerConfig, default_config
from scheduler.kube.client import KubeClusterClient
from scheduler.kube.informer import InformerSet
from scheduler.loop import CycleReport, run_cycle

log = logging.getLogger(__name__)

# Nodes, queues and podgroups first, so pods find what they refer to on the first sync.
WATCHED_KINDS = ["nodes", "queues", "podgroups", "pods"]


class CacheFeeder:
    """Turns informer events into SchedulerCache handler calls."""

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache

    def on_add(self, kind: str, obj: dict) -> None:
        self._handler("add", kind)(obj)

    def on_update(self, kind: str, old: dict, new: dict) -> None:
        self._handler("add", kind)(new)  # the cache's add replaces what it had

    def on_delete(self, kind: str, obj: dict) -> None:
        self._handler("delete", kind)(obj)

    def _handler(self, verb: str, kind: str) -> Callable[[dict], None]:
        singular = {"pods": "pod", "nodes": "node", "queues": "queue", "podgroups": "podgroup"}
        handler = getattr(self.cache, f"{verb}_{singular[kind]}")

        def guarded(obj: dict) -> None:
            try:
                handler(obj)
            except ValueError as exc:  # a malformed object must not stop the informer
                log.warning("ignoring %s: %s", kind, exc, extra={"object": _describe(kind, obj)})

        return guarded


def _describe(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    name = (
        f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
    )
    return f"{kind[:-1]} {name}"


class SchedulerService:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        config: SchedulerConfig | None = None,
        scheduler_name: str = "volcano",
        act: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config or default_config()
        self.act = act
        self.clock = clock
        self.cache = SchedulerCache(scheduler_name)
        self.cluster = KubeClusterClient(api, component=scheduler_name)
        self.informers = InformerSet(api, WATCHED_KINDS, CacheFeeder(self.cache))

    def start(self, *, sync_timeout: float = 30.0) -> SchedulerService:
        self.informers.start()
        if not self.informers.wait_for_sync(sync_timeout):
            self.stop()
            raise TimeoutError(f"the cluster's objects were not listed within {sync_timeout:g} s")
        return self

    def run_once(self) -> CycleReport:
        return run_cycle(self.cache, self.config, self.cluster, now=self.clock(), act=self.act)

    def stop(self) -> None:
        self.informers.stop()
