"""Writer: every change a cycle makes to the cluster passes here, and is recorded.

In *observe* mode (``act=False``) nothing reaches the ClusterClient, but the transitions are
still recorded, so the report shows what the scheduler would have done. Every transition
carries its kind; nobody has to guess what happened from the states or the words.

Binds and status writes (conditions, PodGroup status, events) go out concurrently through the
cache's bounded pool ``cycle_writes`` — Volcano binds and kube-scheduler's asynchronous binding
do not wait for one round trip before sending the next — or, for a bind, through the client's
bind process when it has one (scheduler.kube.bind_process), each as soon as it is decided, and
awaited by ``flush`` once the actions are done, so the cycle's report says which failed: a
failed bind becomes ``BIND_FAILED`` in place of its ``ALLOCATED``, and only that pod is left to
the next cycle. Without a pool (tests, simulations) each write runs in line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from scheduler.api.helpers import describe, pod_condition, reservation_stamp
from scheduler.api.job_info import JobInfo
from scheduler.api.report import PodState, Transition, TransitionKind
from scheduler.api.task_info import TaskInfo, pod_state_of
from scheduler.cache.cache import SchedulerCache
from scheduler.cache.client import ClusterClient

# Volcano's PodReasonSchedulerError (pkg/scheduler/api/unschedule_info.go): the PodScheduled
# reason of a pod whose bind failed. Autoscalers act on "Unschedulable" only.
SCHEDULER_ERROR = "SchedulerError"
MESSAGE_LIMIT = 1024  # characters of an error kept in a condition's message

GateRemover = Callable[[str, str, str, str | None], None]
"""Queues the removal of our gate from pod (namespace, name, uid), asynchronously, marking when
its queue reservation began (an annotation value, or None)."""


class Writer:
    def __init__(
        self,
        cache: SchedulerCache,
        client: ClusterClient | None,
        act: bool = True,
        gate_remover: GateRemover | None = None,
        persist_pipelines: bool = True,
    ):
        self.cache = cache
        self.client: ClusterClient | None = client if act else None  # None: observe mode
        self.act = self.client is not None
        self.persist_pipelines = persist_pipelines
        self.gate_remover = gate_remover
        self.gates_queued = 0
        self._removed_inline: set[str] = set()
        self.transitions: list[Transition] = []
        self.errors: list[str] = []
        self.jobs: Mapping[str, JobInfo] = {}  # the session's jobs (set when it opens): queues
        # Writes sent in the cycle, in the order decided, each with what to do once it is done.
        self._inflight: list[tuple[Future[None], Callable[[BaseException | None], None]]] = []

    def _send(self, call: Callable[[], None], done: Callable[[BaseException | None], None]) -> None:
        if self.cache.cycle_writes is None:
            try:
                call()
            except Exception as exc:
                done(exc)
            else:
                done(None)
            return
        try:
            future = self.cache.cycle_writes.submit(call)
        except RuntimeError as exc:  # the pool was shut down (the scheduler is stopping)
            done(RuntimeError(f"not sent: {exc}"))
            return
        self._inflight.append((future, done))

    def flush(self) -> None:
        """Wait for the writes the cycle sent; what failed is recorded, in the order the
        writes were decided. Each left as soon as it was decided (a bind when its statement
        committed), as Volcano's bind workers take a task once allocate commits it: the
        cluster works on the first binds while the actions go on."""
        first: Exception | None = None
        while self._inflight:  # a failed bind sends its PodScheduled condition: a second round
            inflight, self._inflight = self._inflight, []
            for future, done in inflight:
                try:
                    done(future.exception())
                except Exception as exc:  # every outcome is recorded before one raises
                    first = first or exc
        if first is not None:
            raise first

    def _record(
        self,
        task: TaskInfo,
        kind: TransitionKind,
        old: PodState,
        new: PodState,
        node: str,
        message: str,
    ) -> None:
        if not self.act:
            # Observe mode: nothing happens, so the same decision comes back every cycle.
            seen = self.cache.observed.setdefault(task.uid, {})
            if seen.get(kind.value) == (node, message):
                return
            seen[kind.value] = (node, message)
        job = self.jobs.get(task.job_id)
        self.transitions.append(Transition(
            task.namespace, task.name, task.uid, kind, old, new, node, message,
            job.queue if job else "",
        ))  # fmt: skip

    def bind(self, task: TaskInfo, node_name: str, previous: PodState) -> None:
        at = len(self.transitions)
        message = "allocated"
        self._record(task, TransitionKind.ALLOCATED, previous, PodState.BINDING, node_name, message)
        client = self.client
        if client is None:
            return
        gate_removed = task.uid in self._removed_inline

        def bound(exc: BaseException | None) -> None:
            if exc is None:
                return
            # One failed bind must not stop the others: it replaces its ALLOCATED.
            self.errors.append(f"bind {task.namespace}/{task.name} to {node_name}: {exc}")
            kind = TransitionKind.BIND_FAILED
            del self.transitions[at]
            self._record(task, kind, previous, previous, node_name, f"bind failed: {exc}")
            self.transitions.insert(at, self.transitions.pop())
            self._bind_failed(task, node_name, exc)

        if self.cache.cycle_writes is not None:  # the bind process, where there is one
            future = self.cache.bind_async(task, node_name, client, gate_removed=gate_removed)
            if future is not None:
                self._inflight.append((future, bound))
                return
        self._send(
            lambda: self.cache.bind(task, node_name, client, gate_removed=gate_removed), bound
        )

    def _bind_failed(self, task: TaskInfo, node_name: str, exc: BaseException) -> None:
        """Volcano's SchedulerCache.Bind: a task whose bind failed gets PodScheduled=False
        reason SchedulerError ("failed to bind to node …", taskUnschedulable with
        PodReasonSchedulerError), so a pod the API refused to bind says why it still waits
        while the next cycle tries again. Not when the watch already shows it bound (a 409
        for a bind that landed) or gone."""
        pod = self.cache.cached_pod(task.uid)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return
        message = f"failed to bind to node {node_name}: {exc}"[:MESSAGE_LIMIT]
        condition = {"type": "PodScheduled", "status": "False", "reason": SCHEDULER_ERROR}
        self.pod_condition(task, {**condition, "message": message})

    def pipeline(
        self, task: TaskInfo, node_name: str, previous: PodState, deadline: float | None = None
    ) -> None:
        """Persist a pipeline decision through the cache (Volcano's pipeline cache persistence
        design): the only path that sets ``status.nominatedNodeName``. Raises when the cache
        cannot take it (the statement then unpipelines the task). With persistence off the
        decision ends with the cycle, as in Volcano before that design, and nothing is
        written."""
        if not self.persist_pipelines:
            return
        if self.client is not None:
            if not self.cache.pipeline(task, node_name, self.client, deadline):
                return  # the cache already holds this decision: no new transition or event
            message = (
                f"pod {task.namespace}/{task.name} pipelined to node {node_name}, waiting for "
                "resources to be released"
            )
            self.event(task.pod, "Normal", "Pipelined", message)
        kind, reason = TransitionKind.PIPELINED, "waiting for resources to be released"
        self._record(task, kind, previous, PodState.PIPELINED, node_name, reason)

    def unpipeline(self, task: TaskInfo, node_name: str, message: str) -> None:
        """Release a persisted decision that no longer holds (its pod loses nominatedNodeName)."""
        if self.client is not None and not self.cache.unpipeline(task, self.client):
            return
        kind = TransitionKind.UNPIPELINED
        self._record(task, kind, PodState.PIPELINED, pod_state_of(task), node_name, message)

    def evict(self, task: TaskInfo, reason: str, previous: PodState, retry_at: float = 0.0) -> bool:
        """Evict; False when the API refused (a PodDisruptionBudget's 429, an error): recorded
        against the pod, which is not picked as a victim again before ``retry_at`` unless it
        changes. The cycle goes on either way."""
        if self.client is not None:
            try:
                self.cache.evict(task, reason, self.client)
            except Exception as exc:
                self.errors.append(f"evict {task.namespace}/{task.name}: {exc}")
                self.cache.refuse_victim(task, retry_at)
                return False
        kind = TransitionKind.EVICTED
        self._record(task, kind, previous, PodState.TERMINATING, task.node_name, reason)
        return True

    def remove_gate(
        self, task: TaskInfo, reserved_since: float | None = None, *, bound_next: bool = False
    ) -> None:
        """Lift our gate; ``reserved_since`` (the cycle's time) is written on the pod with it
        when the pod now holds a gate reservation, so a restarted scheduler takes it up.
        ``bound_next``: the same statement binds the pod, and its bind (which leaves at once)
        lifts the gate just before (``SchedulerCache.bind``): the asynchronous removal would
        be a second PATCH of the same pod, and a reservation on a pod being bound holds
        nothing."""
        message = "queue has capacity: queue-allocation gate removed"
        kind = TransitionKind.GATE_REMOVED
        self._record(task, kind, PodState.GATED, PodState.WAITING, "", message)
        if self.client is None:
            return
        if bound_next:
            return  # noted once the bind path has lifted it (SchedulerCache.bind)
        stamp = None if reserved_since is None else reservation_stamp(reserved_since)
        if self.gate_remover is None:
            try:  # no worker pool: do it in line
                self.client.remove_scheduling_gate(task.pod, stamp)
            except Exception as exc:  # the bind path's removal tries again
                self.errors.append(f"pod {task.namespace}/{task.name}: remove gate: {exc}")
                return
            self._removed_inline.add(task.uid)
        else:
            # Queued, never awaited: a cycle does not wait for the round trip (the
            # gate-controlled scheduling design's asynchronous removal). The reservation is
            # stamped on the pod meanwhile (an asynchronous write of this process), so a second
            # scheduler taking the next cycle sees the room held before the removal lands.
            self.gate_remover(task.namespace, task.name, task.uid, stamp)
            self.gates_queued += 1
            if stamp is not None:
                self.cache.stamp_reservation(task, stamp, self.client)
        self.cache.note_gate_removed(task)

    def pod_condition(self, task: TaskInfo, condition: dict[str, str]) -> None:
        """Patch ``PodScheduled`` only when it changes, as Volcano's podConditionHaveUpdate."""
        current = pod_condition(task.pod, condition["type"]) or {}
        same = all(current.get(k) == condition[k] for k in ("status", "reason", "message"))
        if self.client is not None and not same:
            client = self.client
            what = f"pod {task.namespace}/{task.name}: set {condition['type']}"
            self._status_write(what, lambda: client.patch_pod_condition(task.pod, condition))

    def podgroup_status(self, podgroup: Mapping[str, Any], status: dict[str, Any]) -> None:
        if self.client is not None:
            client = self.client
            what = f"{describe(podgroup, 'podgroup')}: update status"
            self._status_write(what, lambda: client.patch_podgroup_status(podgroup, status))

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        if self.client is not None:
            client = self.client
            what = f"{describe(obj, str(obj.get('kind', 'pod')).lower())}: record event {reason}"
            self._status_write(what, lambda: client.record_event(obj, event_type, reason, message))

    def _status_write(self, what: str, call: Callable[[], None]) -> None:
        """A status, condition or event write that the API refused (the object was deleted
        meanwhile, a conflict, a server error) is recorded; the cycle goes on with the rest."""

        def done(exc: BaseException | None) -> None:
            if exc is not None:
                self.errors.append(f"{what}: {exc}")

        self._send(call, done)
