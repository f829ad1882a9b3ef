"""A long-lived scheduler: a SchedulerCache kept current by informers, cycles on demand.

Both the Celery scheduler worker and the ``schedule`` management command run one of these,
so there is one way to schedule against a cluster, real or simulated.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client

from scheduler import registry
from scheduler.admission.context import Admission
from scheduler.api.report import ConfigInForce, CycleReport
from scheduler.cache.cache import SchedulerCache
from scheduler.config import ConfigText, SchedulerConfig, default_config
from scheduler.framework.writer import GateRemover
from scheduler.kube.bind_process import BindProcess
from scheduler.kube.client import KubeClusterClient
from scheduler.kube.fencing import fence_cluster_client
from scheduler.kube.gate_pool import GateRemovalPool
from scheduler.kube.informer import InformerSet
from scheduler.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket
from scheduler.kube.transport import DEFAULT_TIMEOUT
from scheduler.loop import CycleFailed, run_cycle
from scheduler.registry import LiveConfig

log = logging.getLogger(__name__)
DEFAULT_BIND_WORKERS = 16

# Classes, nodes, queues and podgroups first, so pods find what they refer to on the first sync.
# Namespaces for kube-system's UID: which cluster the reports are about.
# PodDisruptionBudgets for the pdb plugin.
WATCHED_KINDS = [
    "namespaces", "priorityclasses", "poddisruptionbudgets", "nodes", "queues", "podgroups",
    "pods",
]  # fmt: skip


class CacheFeeder:
    """Turns informer events into SchedulerCache handler calls."""

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache
        self.version = 0  # the newest resourceVersion applied (the simulated cluster's are ints)
        self.versions: dict[str, int] = {}  # the same, per kind (each kind has its own watch)

    def on_add(self, kind: str, obj: dict) -> None:
        self._handler("add", kind)(obj)
        self._seen(kind, obj)

    def on_update(self, kind: str, old: dict, new: dict) -> None:
        self._handler("add", kind)(new)  # the cache's add replaces what it had
        self._seen(kind, new)

    def on_delete(self, kind: str, obj: dict) -> None:
        self._handler("delete", kind)(obj)
        self._seen(kind, obj)

    def _seen(self, kind: str, obj: dict) -> None:
        version = (obj.get("metadata") or {}).get("resourceVersion") or ""
        if version.isdigit():
            self.version = max(self.version, int(version))
            self.versions[kind] = max(self.versions.get(kind, 0), int(version))

    def caught_up(self, latest: Callable[[str], int]) -> bool:
        """Every kind's watch has delivered up to ``latest(kind)`` (a kind's newest change):
        one kind's newer event says nothing of another kind's watch."""
        return all(self.versions.get(kind, 0) >= latest(kind) for kind in WATCHED_KINDS)

    def _handler(self, verb: str, kind: str) -> Callable[[dict], None]:
        singular = {"pods": "pod", "nodes": "node", "queues": "queue", "podgroups": "podgroup",
                    "priorityclasses": "priority_class", "namespaces": "namespace",
                    "poddisruptionbudgets": "disruption_budget"}  # fmt: skip
        handler = getattr(self.cache, f"{verb}_{singular[kind]}")
        delete = getattr(self.cache, f"delete_{singular[kind]}")
        invalid = self.cache.invalid

        def guarded(obj: dict) -> None:
            try:
                handler(obj)
            except Exception as exc:
                # An object Sluice cannot use must stop neither the informer nor a cycle: it is
                # left out (its earlier version too: the object no longer says that) and kept
                # with why, for every cycle to report (scheduler.cache.invalid).
                with contextlib.suppress(Exception):
                    delete(obj)
                if verb == "delete":
                    invalid.forget(kind, obj)
                    return
                entry = invalid.note(kind, obj, exc)
                if entry is not None:  # a new problem: logged once, not at every resync
                    log.warning(
                        "cannot use %s: %s", entry.description, entry.message,
                        exc_info=not isinstance(exc, ValueError),
                        extra={"object": _describe(kind, obj)},
                    )  # fmt: skip
            else:
                invalid.forget(kind, obj)  # added (so readable) or deleted
                if kind == "queues":
                    self._retry_queues()

        return guarded

    def _retry_queues(self) -> None:
        """A queue refused for its place in the tree (``spec.parent`` closing a cycle) may be
        fine once another queue changed: try the refused ones again."""
        invalid = self.cache.invalid
        for entry in [e for e in invalid.entries() if e.kind == "queues"]:
            try:
                self.cache.add_queue(dict(entry.obj))
            except Exception as exc:
                invalid.note("queues", entry.obj, exc)
            else:
                invalid.forget("queues", entry.obj)
                log.info(
                    "queue %s is usable again", entry.name, extra={"object": entry.description}
                )


def config_in_force(
    live: LiveConfig, period_s: float = 0.0, scheduler_names: Sequence[str] = ()
) -> ConfigInForce:
    config = live.config
    return ConfigInForce(
        source=config.source or "default",
        actions=list(config.actions),
        tiers=[[p.name for p in tier] for tier in config.tiers],
        text=config.to_yaml(),
        error=live.error,
        warnings=live.warnings,
        period_s=period_s,
        scheduler_names=list(scheduler_names),
    )


def _fenced_remover(
    remover: GateRemover, leading: Callable[[], bool], refused: list[int]
) -> GateRemover:
    def remove(namespace: str, name: str, uid: str, reserved_at: str | None) -> None:
        if not leading():
            refused[0] += 1
            log.info("not the leader: gate removal not queued", extra={"object": name})
            return
        remover(namespace, name, uid, reserved_at)

    return remove


def _describe(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    name = (
        f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
    )
    return f"{kind[:-1]} {name}"


class SchedulerService:
    """``config_source`` (a file or ConfigMap in Volcano's format) is read again whenever it
    changes; without one, ``config`` (else Sluice's default) is in force."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        config: SchedulerConfig | None = None,
        config_source: ConfigText | None = None,
        scheduler_name: str | Sequence[str] = "volcano",
        act: bool = False,
        clock: Callable[[], float] = time.time,
        gate_remover: GateRemover | None = None,
        admission: Admission | None = None,
        period: float = 0.0,
        leading: Callable[[], bool] | None = None,
        kube_api_qps: float = DEFAULT_QPS,
        kube_api_burst: int = DEFAULT_BURST,
        bind_workers: int = DEFAULT_BIND_WORKERS,
        bind_process: bool = True,
    ) -> None:
        self.period = period  # seconds between cycles, as whoever runs them says (reported)
        self.live_config = LiveConfig(config_source, registry.check(config or default_config()))
        self.admission = admission  # the node-capacity check's state outlives every cycle
        self.act = act
        self.clock = clock
        names = [scheduler_name] if isinstance(scheduler_name, str) else list(scheduler_name)
        self.scheduler_names = names
        self.cache = SchedulerCache(names)
        limiter = TokenBucket(kube_api_qps, kube_api_burst)
        self.cluster = KubeClusterClient(api, component=names[0], limiter=limiter)
        # Gate removals leave the cycle: to the caller's remover (Celery queue "gates"), else
        # to a small in-process pool, so this service alone is a complete scheduler.
        self.gate_pool = None
        if gate_remover is None and act:
            self.gate_pool = GateRemovalPool(
                self.cluster, on_failure=self.cache.gate_removal_failed
            )
            gate_remover = self.gate_pool.submit
        self.gate_remover = gate_remover
        # Leader election (scheduler.kube.leader): with ``leading``, nothing leaves this process
        # for the cluster unless it holds the Lease, asked before each write request; a gate
        # removal is not even queued. A deposed leader's cycle sees its writes refused.
        self.leading = leading
        self.refused_writes = [0]
        if leading is not None:
            self.refused_writes = fence_cluster_client(self.cluster, leading)
            if gate_remover is not None and self.gate_pool is None:
                self.gate_remover = _fenced_remover(gate_remover, leading, self.refused_writes)
        # nominatedNodeName patches leave the cycle too (the pipeline cache persistence design: Cache.Pipeline's goroutine).
        self.cache.async_writes = (
            ThreadPoolExecutor(max_workers=2, thread_name_prefix="status") if act else None
        )
        # A cycle's binds and status writes go out concurrently, at most ``bind_workers`` in
        # flight (Volcano's bind workers; kube-scheduler's asynchronous binding).
        if bind_workers < 1:
            raise ValueError(f"bind workers: expected an integer >= 1, got {bind_workers!r}")
        self.cache.cycle_writes = (
            ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind") if act else None
        )
        # Room for every write in flight, the status writes, the gate removals and the reads.
        self.cluster.keep_connections(bind_workers + 8)
        # The binds leave from a process of their own (scheduler.kube.bind_process), with as
        # many threads: in this one they would take turns with the cycle for the interpreter.
        # Not where the binds go through the REST layer (a proxy...: ``direct`` is None).
        if act and bind_process and self.cluster.direct is not None:
            self.cluster.binder = BindProcess(
                api.configuration, workers=bind_workers, qps=kube_api_qps, burst=kube_api_burst,
                headers=self.cluster.post_headers, timeout=DEFAULT_TIMEOUT, leading=leading,
                refused=self.refused_writes,
            )  # fmt: skip
        self.feeder = CacheFeeder(self.cache)
        self.informers = InformerSet(api, WATCHED_KINDS, self.feeder)

    def start(self, *, sync_timeout: float = 30.0) -> SchedulerService:
        if self.cluster.binder is not None:
            self.cluster.binder.start()  # the child starts while the informers list
        self.informers.start()
        if not self.informers.wait_for_sync(sync_timeout):
            self.stop()
            raise TimeoutError(f"the cluster's objects were not listed within {sync_timeout:g} s")
        return self

    @property
    def config(self) -> SchedulerConfig:
        return self.live_config.config

    def run_once(self) -> CycleReport:
        """One cycle. A cycle that raises is not the end of the scheduler: its report says it
        failed, and why (``CycleReport.failure``), for the pages and ``/healthz`` to show; the
        next cycle starts afresh from the cache."""
        config = self.live_config.current()
        now, started = self.clock(), time.perf_counter()
        try:
            if self.admission is not None:
                self.admission.configure(config.enqueue_arguments())
            report = run_cycle(
                self.cache,
                config,
                self.cluster,
                now=now,
                act=self.act,
                gate_remover=self.gate_remover,
                admission=self.admission.context() if self.admission is not None else None,
            )
        except CycleFailed as failed:
            exc = failed.error
            log.error("cycle failed: %s", exc, exc_info=exc, extra={"object": "scheduler"})
            mode = "act" if self.act else "observe"
            report = CycleReport.failed(now, time.perf_counter() - started, mode, exc,
                                        failed.transitions, failed.errors)  # fmt: skip
        except Exception as exc:  # before the cycle had a writer: nothing was sent
            log.exception("cycle failed: %s", exc, extra={"object": "scheduler"})
            mode = "act" if self.act else "observe"
            report = CycleReport.failed(now, time.perf_counter() - started, mode, exc)
        report.cluster = self.cache.cluster_id
        report.config = config_in_force(self.live_config, self.period, self.scheduler_names)
        return report

    def stop(self) -> None:
        """Stop watching; queued gate removals finish first (they are short and idempotent)."""
        self.informers.stop()
        if self.gate_pool is not None:
            self.gate_pool.shutdown()
        if self.cache.async_writes is not None:
            self.cache.async_writes.shutdown(wait=True)
        if self.cache.cycle_writes is not None:
            self.cache.cycle_writes.shutdown(wait=True)
        self.cluster.close()  # the binds' own connections (scheduler.kube.transport)
