"""The scheduling loop under Celery: the scheduler workers (queue ``scheduler``, solo pool).

Two ways to decide which worker schedules, chosen by ``SLUICE_LEADER_ELECT``:

**Leader election (the default).** Every scheduler worker process campaigns for one
``coordination.k8s.io/v1`` Lease (:class:`scheduler.kube.leader.LeaderElector`, Volcano's and
kube-scheduler's ``--leader-elect``) from the moment it starts: a worker bootstep
(``dashboard.celery.SchedulerLeadership``) starts a :class:`LeaderLoop` thread. Only the Lease holder
builds a SchedulerService — a warm cache fed by informers, rebuilt from the cluster when it
acquires the Lease (reservations from the pods, pipelined decisions from
``status.nominatedNodeName``) — and it runs its own cycles, one every ``SLUICE_CYCLE_PERIOD``
from the start of the last, in that thread. Why a loop of its own rather than beat's messages:
``run_cycle`` goes to one queue that every scheduler worker consumes, so each message reaches
*one* worker; a leader fed by them would lose the ticks its standbys received (half of them with
two workers). Beat's ``run_cycle`` is now only a liveness tick: the worker that receives it
makes sure its loop thread runs (starting it again if it died) and returns at once, leader or
standby. Cycles go on while beat is down.

- A standby only reads the Lease (every retry period): no informers, no cache, no cycle, no
  heartbeat, no write.
- Every write request of the leader goes through the SchedulerService's fence (``leading=``):
  none leaves the process unless its last successful renewal started less than the renew
  deadline ago, by its own monotonic clock. A leader paused (SIGSTOP, a frozen VM) or cut off
  writes nothing more, before a standby may take the Lease; a gate removal is not even queued.
- A worker that stops leading drops its SchedulerService (its cache is stale against what the
  next leader decides) and stands by again; Volcano exits instead (``klog.Fatalf``), a Celery
  worker keeps serving its queue and campaigns. A worker that stops cleanly (SIGTERM, Ctrl-C)
  releases the Lease, so a standby takes over at its next retry; one killed (SIGKILL) keeps
  it until it expires: a standby leads within a lease duration and a retry period.
- The heartbeat that ``/healthz/scheduler`` reads (``dashboard.services.heartbeat``) is written
  by the leader's cycles only. A worker that cannot reach any cluster (no kubeconfig yet) says
  so there as a failed cycle, since no one can lead.

**The Redis cycle lock (``SLUICE_LEADER_ELECT=false``).** Beat's ``run_cycle`` runs one cycle on
whichever worker receives it, if no other worker holds the lock
(``dashboard.services.locking``); each worker keeps a cache of its own. Their decisions can
diverge (a pod pipelined by one worker on a node, by another elsewhere): a fallback for
clusters where the Lease cannot be granted.

Either way beat's messages expire after one period, so a slow worker never has a backlog.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import redis
from celery import current_task, shared_task
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from kubernetes.config import ConfigException

from dashboard import kube, metrics
from dashboard.health import broker_client
from dashboard.leader import election_config
from dashboard.services import gate_stats
from dashboard.services.heartbeat import LeaderHeartbeat, worker_identity
from dashboard.services.locking import run_exclusively
from dashboard.tasks import sending
from dashboard.tasks.admission import (
    scheduler_admission,
    scheduler_config,
    scheduler_config_source,
)
from dashboard.tasks.gates import queue_gate_removal
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import ConfigInForce, CycleReport
from scheduler.config import ConfigError
from scheduler.kube.leader import LeaderElector, default_identity
from scheduler.service import SchedulerService

log = logging.getLogger(__name__)

SCHEDULER_QUEUE = "scheduler"
# What stops a worker from building its SchedulerService: no cluster yet (the simulation is
# still starting) or an unreachable one. A configuration that does not load is ConfigError.
NO_CLUSTER = (RuntimeError, TimeoutError, OSError, ConfigException)

_service: SchedulerService | None = None
_service_lock = threading.Lock()
_loop: LeaderLoop | None = None
_loop_lock = threading.Lock()


def scheduler_service(
    leading: Callable[[], bool] | None = None,
    term: Callable[[], dict[str, Any] | None] | None = None,
) -> SchedulerService:
    """This worker's SchedulerService, started (informers synced) on first use. ``leading``
    fences its writes (leader election), ``term`` (the elector's) goes with each queued gate
    removal for the gates worker to check the Lease; both are the ones given when the service
    is built."""
    global _service
    with _service_lock:
        if _service is None:
            api = kube.api_client()
            config = scheduler_config()
            service = SchedulerService(
                api,
                config=config,
                config_source=scheduler_config_source(api),
                scheduler_name=settings.SLUICE_SCHEDULER_NAMES,
                act=settings.SLUICE_MODE == "act",
                clock=kube.cluster_clock(),
                gate_remover=(
                    queue_gate_removal if term is None else partial(queue_gate_removal, term=term)
                ),
                admission=scheduler_admission(config),
                period=settings.SLUICE_CYCLE_PERIOD,
                leading=leading,
                kube_api_qps=settings.SLUICE_KUBE_API_QPS,
                kube_api_burst=settings.SLUICE_KUBE_API_BURST,
                bind_workers=settings.SLUICE_BIND_WORKERS,
                bind_process=settings.SLUICE_BIND_PROCESS,
            )
            _service = service.start(sync_timeout=settings.SLUICE_KUBE_TIMEOUT * 6)
        return _service


# Cycles between two freezes of what has lived through them (``_freeze_long_lived``).
FREEZE_EVERY = 60


def _freeze_long_lived(*, anew: bool = False) -> None:
    """Leave what the cache holds out of the garbage collector's later collections
    (``gc.freeze``): a full collection walks every object of every cached pod, 0.5-0.9 s at
    the openb trace's 8,152 pods, and CPython ran one every few cycles inside a one-second
    period. Done after the first cycle of a newly built cache (``anew``: what an earlier
    service left frozen is taken back first) and every ``FREEZE_EVERY`` cycles after it, for
    the pods that arrived since. Frozen objects are still freed by reference counting when the cache drops them (a
    pod replaced or deleted); reference cycles among them wait for the service to be dropped,
    which unfreezes everything."""
    if anew:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def _drop_service() -> None:
    global _service
    with _service_lock:
        service, _service = _service, None
    if service is not None:
        service.stop()
        gc.unfreeze()  # its cache is garbage now, frozen or not (``_freeze_long_lived``)


def reset_scheduler_service() -> None:
    """Stop the leader loop (releasing the Lease) and the service, and forget them (tests, and
    after the cluster configuration changes)."""
    stop_leader_loop()
    _drop_service()


# -- one cycle, and what is recorded of it ---------------------------------------------------


def _cycle_could_not_start(leader: LeaderHeartbeat, exc: Exception) -> None:
    """No SchedulerService: a first configuration that does not load (there is none to keep in
    force: a failed cycle, so the pages and /healthz say why), or no cluster."""
    if isinstance(exc, ConfigError):
        log.error("no cycle: %s", exc, extra={"object": "configuration"})
        mode = "act" if settings.SLUICE_MODE == "act" else "observe"
        report = CycleReport.failed(time.time(), 0.0, mode, exc)
        report.config = ConfigInForce(source="", actions=[], tiers=[], text="", error=str(exc))
        store_cycle_report(report.to_json())  # here: the broker may be what is missing too
        leader.failed(report.failure)
    else:
        log.warning("no cycle: %s", exc, extra={"object": "cluster"})
        leader.failed(f"no cycle: {exc}")


def _cycle(service: SchedulerService, leader: LeaderHeartbeat) -> CycleReport:
    with leader.cycle() as outcome:
        report = service.run_once()
        outcome.error = report.failure
    return report


def _record(client: redis.Redis, report: CycleReport) -> dict:
    """The report to its readers; a summary of it (small: Celery logs a task's return value)."""
    gate_stats.add(report.gates)
    metrics.record_cycle(client, report)  # /metrics (dashboard.metrics)
    # History and the pages' live state; a failed cycle too, so the pages and /healthz say so.
    data = report.to_json()
    if not sending.send(store_cycle_report, (data,)):
        # The broker is down (Redis restarting): stored here, the database does not need it.
        try:
            store_cycle_report(data)
        except DatabaseError as exc:
            log.warning("cycle not stored: %s", exc, extra={"object": "history"})
    summary = {
        "duration_ms": round(report.duration_s * 1000, 2),
        "decisions": len(report.transitions),
        "waiting": len(report.waiting),
    }
    if report.failure:
        # The service logged the traceback; this line is the worker's summary.
        log.error("cycle failed: %s", report.failure, extra={"object": "scheduler", **summary})
        return {**summary, "failed": True}
    level = logging.INFO if report.transitions or report.errors else logging.DEBUG
    log.log(level, "cycle done", extra={"object": "scheduler", **summary})
    return summary


# -- leader election ---------------------------------------------------------------------------


class LeaderLoop:
    """A scheduler worker's campaign for the Lease and, while it holds it, its cycles (one
    daemon thread; the elector renews in another). See the module's docstring."""

    def __init__(self, hostname: str | None = None) -> None:
        self.hostname = hostname
        self.worker = worker_identity(hostname)  # the heartbeat's name for it
        self.identity = default_identity(hostname or "")  # the Lease's holderIdentity
        self.period = settings.SLUICE_CYCLE_PERIOD
        self.config = election_config()  # ValueError when the timings do not hold together
        self.elector: LeaderElector | None = None
        self.cycles = 0  # cycles this process started (while leading)
        self._frozen_for: SchedulerService | None = None  # the service _freeze_long_lived saw
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LeaderLoop:
        self._thread = threading.Thread(target=self._run, name="sluice-leader-loop", daemon=True)
        self._thread.start()
        return self

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def is_leader(self) -> bool:
        return self.elector is not None and self.elector.is_leader()

    def stop(self, release: bool = True) -> None:
        """Stop cycling and campaigning; the leader releases the Lease (``release=False``
        keeps it, as a killed worker would)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=settings.SLUICE_KUBE_TIMEOUT * 6 + 30)
        if release:
            _drop_service()  # the writes still queued go out (fenced) while it leads
        if self.elector is not None:
            self.elector.stop(release=release)  # leadership ends before the release is sent

    def _run(self) -> None:
        client = broker_client()
        leader = LeaderHeartbeat(client, self.worker, self.period, leading=self.is_leader)
        said = ""
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                said = self._step(client, leader, said)
            except Exception as exc:  # never let the loop die: the next period tries again
                log.exception("leader loop: %s", exc, extra={"object": self.identity})
            finally:
                close_old_connections()
            if self.is_leader():
                # One cycle a period from the start of the last; a lost Lease wakes it early.
                self._wait(started + self.period)
            elif self.elector is None:
                self._stop.wait(self.period)  # no cluster yet
            else:
                self.elector.leader_changed.wait(self.config.retry_period)

    def _wait(self, until: float) -> None:
        assert self.elector is not None
        while not self._stop.is_set() and self.elector.is_leader():
            left = until - time.monotonic()
            if left <= 0:
                return
            self._stop.wait(min(left, 0.05))

    def _step(self, client: redis.Redis, leader: LeaderHeartbeat, said: str) -> str:
        if self.elector is None:
            try:
                api = kube.api_client()
            except NO_CLUSTER as exc:
                # No Lease to hold, so no one can lead: this worker says why, in the leader's
                # place.
                _cycle_could_not_start(LeaderHeartbeat(client, self.worker, self.period), exc)
                return said
            self.elector = LeaderElector(api, self.config, self.identity).start()
        self.elector.leader_changed.clear()
        lease = f"{self.config.namespace}/{self.config.name}"
        if not self.elector.is_leader():
            if _service is not None:
                log.warning(
                    "lost lease %s: cache dropped, standing by", lease,
                    extra={"object": self.worker},
                )  # fmt: skip
                _drop_service()
            holder = self.elector.holder
            if holder and holder != said:
                log.info("standing by: lease %s is held by %s", lease, holder,
                         extra={"object": self.worker})  # fmt: skip
            return holder or said
        if _service is None:
            log.info("leading as %s (lease %s): building the cache", self.identity, lease,
                     extra={"object": self.worker})  # fmt: skip
        try:
            service = scheduler_service(leading=self.elector.is_leader, term=self.elector.term)
        except (ConfigError, *NO_CLUSTER) as exc:
            _cycle_could_not_start(leader, exc)
            return said
        if not self.elector.is_leader():
            return said  # lost while the cache was built: dropped at the next step
        self.cycles += 1
        report = _cycle(service, leader)
        _record(client, report)
        fresh = service is not self._frozen_for
        if fresh or self.cycles % FREEZE_EVERY == 0:
            _freeze_long_lived(anew=fresh)
            self._frozen_for = service
        return ""


def start_leader_loop(hostname: str | None = None) -> LeaderLoop:
    """This process's LeaderLoop, started when none runs (or the last one died)."""
    global _loop
    with _loop_lock:
        if _loop is None or not _loop.alive():
            if _loop is not None:
                log.error("leader loop was not running: started again")
                _loop.stop()
            _loop = LeaderLoop(hostname).start()
        return _loop


def stop_leader_loop(release: bool = True) -> None:
    global _loop
    with _loop_lock:
        loop, _loop = _loop, None
    if loop is not None:
        loop.stop(release=release)


# -- the task beat sends ---------------------------------------------------------------------


@shared_task(
    name="dashboard.tasks.run_cycle",
    ignore_result=True,
    soft_time_limit=60,
    time_limit=90,
)
def run_cycle() -> dict | None:
    """Beat's tick. With leader election: make sure this worker's loop runs (it, not the tick,
    runs the leader's cycles) and return at once. Without: one cycle if no other worker is
    running one; the report is stored asynchronously and its summary returned (None when no
    cycle ran). The worker that runs it beats as the scheduler leader
    (``dashboard.services.heartbeat``: what /healthz/scheduler reads)."""
    hostname = current_task.request.hostname if current_task else None  # the worker's node
    if settings.SLUICE_LEADER_ELECT:
        start_leader_loop(hostname)
        return None
    client = broker_client()
    leader = LeaderHeartbeat(client, worker_identity(hostname), settings.SLUICE_CYCLE_PERIOD)
    try:
        service = scheduler_service()
    except (ConfigError, *NO_CLUSTER) as exc:
        _cycle_could_not_start(leader, exc)
        return None
    ran, report = run_exclusively(
        client, lambda: _cycle(service, leader), ttl=settings.SLUICE_CYCLE_LOCK_TTL
    )
    if not ran or report is None:
        return None
    return _record(client, report)
