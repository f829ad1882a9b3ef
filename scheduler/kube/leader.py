"""Leader election on a ``coordination.k8s.io/v1`` Lease, as kube-scheduler and Volcano run
with ``--leader-elect`` (client-go ``tools/leaderelection``, ``resourcelock.LeaseLock``).

Several scheduler processes may run; exactly one — the holder of the Lease — keeps a warm
cache and schedules. The others stand by: they only read the Lease, every ``retry_period``.

The semantics are client-go's (``leaderelection.go``, ``tryAcquireOrRenew``):

- The Lease records ``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
  ``renewTime`` and ``leaseTransitions``. Every write is an update carrying the
  ``resourceVersion`` read, so of two candidates that both saw an expired Lease one gets
  409 Conflict and stays a standby (optimistic concurrency, no lock service needed).
- Whether a Lease expired is judged on this process's own monotonic clock: from the moment it
  *observed* the record change, plus ``leaseDurationSeconds`` — never by comparing the
  ``renewTime`` written by another machine with ours (clock skew).
- The leader renews every ``retry_period``; when no renewal succeeded for ``renew_deadline``
  it stops leading. Volcano's defaults (``pkg/util/util.go``, ``LeaderElectionDefault``):
  lease duration 15 s, renew deadline 10 s, retry period 2 s.
- On a clean stop the leader releases the Lease (client-go's ``ReleaseOnCancel``): holder
  emptied, duration 1 s, so a standby takes over at its next retry instead of a lease later.

Fencing: :meth:`LeaderElector.is_leader` is true only while the last successful renewal
*started* less than ``renew_deadline`` ago (monotonic). A leader that is paused (SIGSTOP, a long
GC, a VM frozen) or cut off stops being one by that clock alone, the moment it runs again —
before any standby may take the Lease (``lease_duration`` after it last saw a change). Every
write of the scheduler goes through :func:`scheduler.kube.fencing.fenced_api_client`, which
asks before each request; the binds sent from the bind process ask before they are handed over,
and may leave until a short window after (``scheduler.kube.bind_process``).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.kube.fencing import NotLeader

__all__ = ["NotLeader"]  # raised by LeaderElector.fence; defined with the fence it belongs to

log = logging.getLogger(__name__)

# Volcano's defaults (pkg/util/util.go at the pinned commit), the same as kube-scheduler's.
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2  # client-go's leaderelection.JitterFactor for the standby's retries
DEFAULT_NAMESPACE = "kube-system"
Obj = Mapping[str, Any]


@dataclass(frozen=True)
class ElectionConfig:
    namespace: str = DEFAULT_NAMESPACE
    name: str = "volcano"  # Volcano's GenerateComponentName: the scheduler name
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD

    def __post_init__(self) -> None:
        # component-base's ValidateLeaderElectionConfiguration
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("leader election: lease duration must be greater than renew deadline")
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError(
                "leader election: renew deadline must be greater than retry period × "
                f"{JITTER_FACTOR} (client-go's JitterFactor)"
            )
        if self.retry_period <= 0:
            raise ValueError("leader election: retry period must be greater than zero")


def default_identity(hint: str = "") -> str:
    """Volcano's ``hostname + "_" + uuid``: two processes on one host never share one."""
    return f"{hint or socket.gethostname()}_pid{os.getpid()}_{uuid.uuid4()}"


def micro_time(at: float) -> str:
    """metav1.MicroTime's RFC 3339 form with microseconds."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    duration_s: int
    acquire_time: str
    renew_time: str
    transitions: int
    resource_version: str

    @classmethod
    def from_lease(cls, lease: Obj) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration_s=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
            resource_version=str((lease.get("metadata") or {}).get("resourceVersion") or ""),
        )

    def same_record(self, other: LeaseRecord | None) -> bool:
        """client-go compares the record, not the resourceVersion."""
        if other is None:
            return False
        fields = ("holder", "duration_s", "acquire_time", "renew_time", "transitions")
        return all(getattr(self, f) == getattr(other, f) for f in fields)


class LeaderElector:
    """Campaign for the Lease in a thread (:meth:`start`), or step by step
    (:meth:`try_acquire_or_renew`, for tests). ``on_started_leading`` / ``on_stopped_leading``
    are called from the election thread; :meth:`is_leader` may be called from any thread.
    """

    def __init__(
        self,
        api: client.ApiClient,
        config: ElectionConfig,
        identity: str = "",
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = client.CoordinationV1Api(_without_retries(api))
        self.config = config
        self.identity = identity or default_identity()
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.clock = clock
        self.wall_clock = wall_clock
        self._lock = threading.Lock()
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0  # self.clock() when the record last changed
        self._renewed_at: float | None = None  # self.clock() when our last renewal started
        self._leading = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.leader_changed = threading.Event()  # set at every change of leadership here

    # --- state --------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """This process holds the Lease and renewed it within ``renew_deadline``."""
        with self._lock:
            renewed = self._renewed_at
            return (
                self._leading
                and renewed is not None
                and self.clock() - renewed < self.config.renew_deadline
            )

    def term(self) -> dict[str, Any] | None:
        """While this process leads: which Lease it holds and since which transition
        (``namespace``, ``name``, ``holder``, ``transitions``), for a write that leaves the
        process (a queued gate removal) to check with :func:`lease_still_held` before it lands.
        None when not leading."""
        if not self.is_leader():
            return None
        with self._lock:
            observed = self._observed
        if observed is None or observed.holder != self.identity:
            return None
        return {
            "namespace": self.config.namespace,
            "name": self.config.name,
            "holder": observed.holder,
            "transitions": observed.transitions,
        }

    @property
    def holder(self) -> str:
        """The holder this process last observed ("" when none or not yet read)."""
        with self._lock:
            return self._observed.holder if self._observed is not None else ""

    def fence(self) -> None:
        """Raise :class:`NotLeader` unless this process leads (before a write)."""
        if not self.is_leader():
            raise NotLeader(f"{self.identity} does not hold lease {self._lease_path}")

    @property
    def _timeout(self) -> float:
        """Each request to the Lease gives up after the renew deadline, as client-go bounds a
        renewal (``renew``: ``context.WithTimeout(ctx, RenewDeadline)``): an API server that
        accepts and never answers must not hold the election thread forever."""
        return self.config.renew_deadline

    @property
    def _lease_path(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    # --- one step (client-go's tryAcquireOrRenew) ------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """Acquire or renew; True when this process holds the Lease afterwards."""
        started = self.clock()
        now = micro_time(self.wall_clock())
        cfg = self.config
        duration = max(1, round(cfg.lease_duration))
        try:
            lease = self.api.read_namespaced_lease(
                cfg.name, cfg.namespace, _preload_content=False, _request_timeout=self._timeout
            )
            current = LeaseRecord.from_lease(_json(lease))
        except ApiException as exc:
            if exc.status != 404:
                log.warning("error retrieving lease %s: %s", self._lease_path, _reason(exc))
                return False
            # No Lease (deleted while held). The record last observed still holds, on this
            # process's clock, until leaseDurationSeconds after it was observed to change: its
            # holder may lead until then (its fence lasts renew_deadline from its last renewal,
            # which began before we saw that renewal). Creating one now would make two leaders.
            with self._lock:
                last, last_at = self._observed, self._observed_at
            if (
                last is not None
                and last.holder
                and last.holder != self.identity
                and last_at + last.duration_s > started
            ):
                self._became(False, None)
                return False
            body: Any = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": duration,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            }
            try:
                created = self.api.create_namespaced_lease(
                    cfg.namespace, body, _preload_content=False, _request_timeout=self._timeout
                )
            except ApiException as exc:  # 409 AlreadyExists: another candidate was first
                log.info("lease %s not created: %s", self._lease_path, _reason(exc))
                return False
            self._observe(LeaseRecord.from_lease(_json(created)), started)
            self._became(True, started)
            return True

        self._observe(current, started)
        with self._lock:
            observed_at = self._observed_at
            leading = self._leading
        ours = current.holder == self.identity
        if current.holder and not ours and observed_at + current.duration_s > started:
            self._became(False, None)
            return False  # held by another, not expired on our clock
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": duration,
            "renewTime": now,
            "acquireTime": current.acquire_time if ours and leading else now,
            # client-go counts a transition whenever the holder changes (a release included)
            "leaseTransitions": current.transitions if ours else current.transitions + 1,
        }
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": cfg.name,
                "namespace": cfg.namespace,
                "resourceVersion": current.resource_version,
            },
            "spec": spec,
        }
        try:
            updated = self.api.replace_namespaced_lease(
                cfg.name,
                cfg.namespace,
                body,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
        except ApiException as exc:
            # 409: someone wrote the Lease since we read it (a renewal, a rival's takeover).
            log.info("lease %s not updated: %s", self._lease_path, _reason(exc))
            return False
        self._observe(LeaseRecord.from_lease(_json(updated)), started)
        self._became(True, started)
        return True

    def release(self) -> bool:
        """Give the Lease up (client-go's ``release``, ReleaseOnCancel): holder emptied, a
        duration of 1 s. Leadership ends here first, so no write can follow."""
        with self._lock:
            was_leading = self._leading
        self._became(False, None, why="stopped leading (releasing)")
        if not was_leading:
            return False
        cfg = self.config
        try:
            lease = _json(self.api.read_namespaced_lease(
                cfg.name, cfg.namespace, _preload_content=False, _request_timeout=self._timeout
            ))  # fmt: skip
            current = LeaseRecord.from_lease(lease)
            if current.holder != self.identity:
                return False
            now = micro_time(self.wall_clock())
            body: Any = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": cfg.name,
                    "namespace": cfg.namespace,
                    "resourceVersion": current.resource_version,
                },
                "spec": {
                    "holderIdentity": "",
                    "leaseDurationSeconds": 1,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": current.transitions,
                },
            }
            self.api.replace_namespaced_lease(
                cfg.name,
                cfg.namespace,
                body,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
        except ApiException as exc:
            log.warning("lease %s not released: %s", self._lease_path, _reason(exc))
            return False
        except (urllib3.exceptions.HTTPError, OSError) as exc:  # unreachable, or no answer
            log.warning("lease %s not released: %s", self._lease_path, exc)
            return False
        log.info("released lease %s", self._lease_path, extra={"object": self.identity})
        return True

    def _observe(self, record: LeaseRecord, at: float) -> None:
        with self._lock:
            if not record.same_record(self._observed):
                self._observed = record
                self._observed_at = at

    def _became(self, leading: bool, renewed_at: float | None, why: str = "lost lease") -> None:
        with self._lock:
            was = self._leading
            self._leading = leading
            if leading:
                self._renewed_at = renewed_at
            else:
                self._renewed_at = None
        if leading and not was:
            log.info("acquired lease %s", self._lease_path, extra={"object": self.identity})
            self.leader_changed.set()
            if self.on_started_leading is not None:
                self.on_started_leading()
        elif was and not leading:
            level = logging.WARNING if why == "lost lease" else logging.INFO
            log.log(level, "%s %s", why, self._lease_path, extra={"object": self.identity})
            self.leader_changed.set()
            if self.on_stopped_leading is not None:
                self.on_stopped_leading()

    # --- the campaign (client-go's acquire and renew loops) --------------------------------

    def start(self) -> LeaderElector:
        """Campaign in a daemon thread: acquire (retrying every ``retry_period``, jittered),
        then renew every ``retry_period``; a leader that cannot renew for ``renew_deadline``
        stops leading and campaigns again."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="sluice-leader-election", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, release: bool = True) -> None:
        """Stop campaigning; the leader releases the Lease (``release=False`` keeps it, as a
        crashed process would)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.config.renew_deadline + 5)
            self._thread = None
        if release:
            self.release()
        else:
            self._became(False, None, why="stopped leading (lease kept)")

    def _run(self) -> None:
        cfg = self.config
        while not self._stop.is_set():
            if not self._leading:
                if self._attempt():
                    continue
                wait = cfg.retry_period * (1 + random.random() * (JITTER_FACTOR - 1))
                self._stop.wait(wait)
                continue
            # Renew: every retry_period; give up when renew_deadline passes without success.
            if self._stop.wait(cfg.retry_period):
                return
            deadline = self.clock() + cfg.renew_deadline
            while not self._stop.is_set():
                if self._attempt():
                    break
                if self.clock() >= deadline or not self.is_leader():
                    self._became(False, None)
                    break
                self._stop.wait(cfg.retry_period)

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception as exc:  # never let the election thread die
            log.warning("leader election step failed: %s", exc, extra={"object": self.identity})
            return False


def _without_retries(api: client.ApiClient) -> client.ApiClient:
    """An ApiClient to the same cluster whose requests are not retried by urllib3 (three times
    by default, each waiting its whole timeout): the elector tries again itself, every retry
    period, as client-go does, and a renewal must end within the renew deadline."""
    configuration = copy.deepcopy(api.configuration)
    configuration.retries = False
    plain = client.ApiClient(configuration)
    plain.default_headers.update(api.default_headers)
    return plain


def _json(response: Any) -> dict:
    data = response.data if hasattr(response, "data") else response
    return json.loads(data)


def _reason(exc: ApiException) -> str:
    return f"HTTP {exc.status}: {exc.reason}"


def lease_still_held(api: client.ApiClient, term: Mapping[str, Any]) -> bool:
    """Whether the Lease named in ``term`` (:meth:`LeaderElector.term`) still names the same
    holder in the same transition: one GET. False when the Lease is gone (404); other refusals
    raise ``ApiException``, unreachable ones urllib3's errors."""
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(
            str(term["name"]), str(term["namespace"]), _preload_content=False
        )
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    current = LeaseRecord.from_lease(_json(lease))
    return current.holder == term["holder"] and current.transitions == int(term["transitions"])
