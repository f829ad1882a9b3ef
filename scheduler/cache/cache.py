"""SchedulerCache: the cluster as the scheduler knows it, kept current by watch events."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Container, Iterable, Mapping
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.disruption_budget import DisruptionBudget
from scheduler.api.helpers import (
    annotations_of,
    as_int,
    describe,
    has_only_volcano_scheduling_gate,
    has_queue_allocation_gate_annotation,
    meta,
    scheduling_gates,
    uid_of,
)
from scheduler.api.job_info import JobInfo
from scheduler.api.labels import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION, ROOT_QUEUE
from scheduler.api.node_info import NodeInfo
from scheduler.api.queue_info import QueueCycleError, QueueInfo, queue_problem
from scheduler.api.report import PodRecord
from scheduler.api.status import Code, Status
from scheduler.api.task_info import (
    TaskInfo,
    TaskStatus,
    TransactionContext,
    allocated_status,
    epoch_seconds,
    pod_state_of,
)
from scheduler.cache.client import ClusterClient
from scheduler.cache.invalid import InvalidObjects

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
_GONE = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
# The namespace every cluster has: its UID names the cluster (as kubectl cluster-info dump,
# kubeadm and most fleet tools take it), so the dashboard tells one cluster's history from
# another's — a new (simulated) cluster at the same address is a new cluster.
SYSTEM_NAMESPACE = "kube-system"
UNGATE_CONFIRM_TIMEOUT = 30.0  # seconds to wait for the watch to show a removed gate


@dataclass
class ClusterSnapshot:
    jobs: dict[str, JobInfo]
    nodes: dict[str, NodeInfo]  # sorted by name, so node order is deterministic
    queues: dict[str, QueueInfo]
    skipped: dict[str, Status] = field(default_factory=dict)  # job uid -> why not scheduled
    skipped_jobs: dict[str, JobInfo] = field(default_factory=dict)
    # Gate reservations' start times (uid -> time, or None once expired), shared with the
    # cache so they outlive the cycle: the capacity plugin keeps it.
    reservations: dict[str, float | None] = field(default_factory=dict)
    # Pipeline decisions persisted in the cache: task uid -> the time they lapse.
    pipeline_deadlines: dict[str, float] = field(default_factory=dict)
    # Decisions that lapsed: task uid -> (node, the uids releasing there then). The task is not
    # pipelined on that node again while the same pods are still leaving it.
    lapsed_pipelines: dict[str, tuple[str, frozenset[str]]] = field(default_factory=dict)
    # Victims whose eviction was refused (a PodDisruptionBudget, an error): not picked again
    # until their pod changes or the retry time passes.
    refused_victims: frozenset[str] = frozenset()
    # The cluster's PodDisruptionBudgets (the pdb plugin keeps victims within them).
    disruption_budgets: tuple[DisruptionBudget, ...] = ()


class SchedulerCache:
    def __init__(
        self,
        scheduler_name: str | Iterable[str] = "volcano",
        priority_classes: Mapping[str, int] | None = None,
    ):
        # The spec.schedulerName values that are ours (Volcano's --scheduler-name, repeatable).
        names = [scheduler_name] if isinstance(scheduler_name, str) else list(scheduler_name)
        self.scheduler_names = frozenset(names)
        self.scheduler_name = names[0]
        self.priority_classes = dict(priority_classes or {})  # name -> value
        self.default_priority = 0  # the globalDefault PriorityClass's value
        self._default_class = ""  # its name
        self._lock = threading.RLock()
        self._tasks: dict[str, TaskInfo] = {}
        self._jobs: dict[str, JobInfo] = {}
        self._nodes: dict[str, NodeInfo] = {}
        self._queues: dict[str, QueueInfo] = {}
        # Pods whose gate removal we queued, until the watch shows them ungated: uid -> when.
        # An entry the watch never confirms (the removal failed) lapses, so the next cycle
        # queues the removal again instead of trusting it forever.
        self._ungated: dict[str, float] = {}
        self.ungate_confirm_timeout = UNGATE_CONFIRM_TIMEOUT
        self._reservations: dict[str, float | None] = {}
        self.gates_removed_at_bind = 0
        # Observe mode: the decisions reported per pod, so a decision the cluster never saw
        # carried out is reported once, not again every cycle (uid -> kind -> (node, message)).
        self.observed: dict[str, dict[str, tuple[str, str]]] = {}
        self._pipeline_deadlines: dict[str, float] = {}
        self._lapsed_pipelines: dict[str, tuple[str, frozenset[str]]] = {}
        # uid -> (retry after, the pod's resourceVersion when its eviction was refused)
        self._refused: dict[str, tuple[float, str]] = {}
        # nominatedNodeName writes: uid -> the latest (pod, node) to write; written one at a
        # time per pod, the latest always last (a newer decision never loses to an older one)
        self._nominations: dict[str, tuple[Obj, str | None]] = {}
        self._nomination_locks: dict[str, threading.Lock] = {}
        # Where API writes that must not hold up a cycle run (nominatedNodeName patches):
        # an Executor in a live scheduler; None runs them in line (tests, simulations).
        self.async_writes: Executor | None = None
        # A cycle's binds and status writes, sent concurrently (bounded by the pool's workers)
        # and awaited at the cycle's end (scheduler.framework.writer); None: in line.
        self.cycle_writes: Executor | None = None
        self._writes: set[Future] = set()
        self.write_errors: list[str] = []
        # Objects the watch delivered that Sluice cannot use (scheduler.cache.invalid): left
        # out of the cache, kept here with why, reported by every cycle.
        self.invalid = InvalidObjects()
        self._budgets: dict[tuple[str, str], DisruptionBudget] = {}  # (namespace, name) ->
        # The UID of the cluster's kube-system namespace, from the namespace watch ("" until
        # seen, or on a cluster without one).
        self.cluster_id = ""
        # What the cycles said on objects about queues (scheduler.framework.queue_problems):
        # problem key -> message, so each is said once.
        self.queue_problems_said: dict[str, str] = {}
        # Pods whose facts a report carried (``new_pod_facts``): each is sent once.
        self._facts_reported: set[str] = set()

    # --- pods ------------------------------------------------------------------------------

    def add_pod(self, pod: Obj) -> None:
        with self._lock:
            if self._keep_decision(pod):
                return
            task = TaskInfo(pod, self.priority_classes, self._tasks.get(uid_of(pod, "pod")))
            self._delete_task(task.uid)
            self._tasks[task.uid] = task
            if task.node_name and task.status not in _GONE and task.node_name in self._nodes:
                self._nodes[task.node_name].add_task(task)
            if self._is_ours(pod):
                self._job_for(task).add_task(task)
            if not task.sch_gated:
                self._ungated.pop(task.uid, None)

    update_pod = add_pod

    def _keep_decision(self, pod: Obj) -> bool:
        """Volcano's ``allocatedPodInCache`` guard, extended to Pipelined
        (Volcano's pipeline cache persistence design (issue #5044), change 6).

        A watch event for a pod not bound yet — often the echo of our own nominatedNodeName or
        condition patch — must not turn a task we allocated or pipelined back into Pending.
        The task keeps its decision and takes the fresher pod object.
        """
        if (pod.get("spec") or {}).get("nodeName") or meta(pod).get("deletionTimestamp"):
            return False
        cached = self._tasks.get(uid_of(pod, "pod"))
        if cached is None or cached.job_id not in self._jobs:
            return False
        if not (allocated_status(cached.status) or cached.status == TaskStatus.PIPELINED):
            return False
        cached.pod = pod
        cached.sch_gated = bool(scheduling_gates(pod))
        if not cached.sch_gated:
            self._ungated.pop(cached.uid, None)
        return True

    def delete_pod(self, pod: Obj) -> None:
        with self._lock:
            uid = uid_of(pod, "pod")
            self._delete_task(uid)
            self._facts_reported.discard(uid)
            for memo in (
                self.observed, self._pipeline_deadlines, self._lapsed_pipelines, self._refused,
                self._nomination_locks,
            ):  # fmt: skip
                memo.pop(uid, None)

    def _is_ours(self, pod: Obj) -> bool:
        return (pod.get("spec") or {}).get(
            "schedulerName", "default-scheduler"
        ) in self.scheduler_names

    def cached_pod(self, uid: str) -> Obj | None:
        """The freshest pod object the watch delivered for ``uid``; None once it is gone."""
        with self._lock:
            cached = self._tasks.get(uid)
            return cached.pod if cached is not None else None

    def _job_for(self, task: TaskInfo) -> JobInfo:
        job = self._jobs.get(task.job_id)
        if job is None:
            if GROUP_NAME_ANNOTATION in annotations_of(task.pod):
                job = JobInfo(task.job_id, task.namespace, task.job_id.split("/", 1)[1])
            else:
                job = JobInfo.synthetic(task)
            self._jobs[task.job_id] = job
        return job

    def _delete_task(self, uid: str) -> None:
        task = self._tasks.pop(uid, None)
        if task is None:
            return
        node = self._nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        job = self._jobs.get(task.job_id)
        if job is not None:
            job.delete_task(task)
            if not job.tasks and job.podgroup is None:
                del self._jobs[job.uid]

    def pod_records(self, skip: Container[str] = ()) -> list[PodRecord]:
        """Every pod of ours but those in ``skip`` (the cycle's waiting pods), in the state the
        cache holds now: what the cluster's watch delivered, with what this scheduler has
        done since (bound, evicted, pipelined) — never a decision only observed."""
        with self._lock:
            return [
                PodRecord(
                    task.namespace,
                    task.name,
                    task.uid,
                    job.queue,
                    pod_state_of(task),
                    task.node_name,
                    epoch_seconds(task.creation),
                )
                for job in self._jobs.values()
                for task in job.tasks.values()
                if task.uid not in skip
            ]

    def new_pod_facts(self) -> dict[str, dict[str, Any]]:
        """What a replay of the workload needs of each pod of ours not reported before
        (``CycleReport.pod_facts``): its requests, PodGroup, minMember and priorities. A pod
        whose PodGroup, or whose PodGroup's PriorityClass, the watch has not delivered yet waits
        for it (its minMember or priority unknown)."""
        facts: dict[str, dict[str, Any]] = {}
        with self._lock:
            for job in self._jobs.values():
                if job.podgroup is None and not job.is_synthetic:
                    continue
                group = "" if job.is_synthetic else job.name
                group_class = job.priority_class_name if group else ""
                if group_class and group_class not in self.priority_classes:
                    continue  # its PriorityClass not delivered yet: its value unknown
                # The class's value now, as the snapshot takes it: job.priority is the value
                # when the PodGroup arrived, 0 if its PriorityClass came after it.
                group_priority = (
                    self.priority_classes.get(group_class, self.default_priority) if group else 0
                )
                for uid, task in job.tasks.items():
                    if uid in self._facts_reported:
                        continue
                    spec = task.pod.get("spec") or {}
                    facts[uid] = {
                        "requests": {k: int(v) for k, v in task.resreq.to_dict().items()},
                        "group": group,
                        "minMember": job.min_available if group else 1,
                        "groupPriorityClassName": group_class,
                        "groupPriority": group_priority,
                        "priorityClassName": str(spec.get("priorityClassName") or ""),
                        "priority": task.priority,
                    }
            self._facts_reported.update(facts)
        return facts

    # --- namespaces ------------------------------------------------------------------------

    def add_namespace(self, namespace: Obj) -> None:
        if meta(namespace).get("name") == SYSTEM_NAMESPACE:
            self.cluster_id = str(meta(namespace).get("uid") or "")

    update_namespace = add_namespace

    def delete_namespace(self, namespace: Obj) -> None:
        if meta(namespace).get("name") == SYSTEM_NAMESPACE:
            self.cluster_id = ""

    # --- disruption budgets ----------------------------------------------------------------

    def add_disruption_budget(self, pdb: Obj) -> None:
        budget = DisruptionBudget.from_object(pdb)
        with self._lock:
            self._budgets[(budget.namespace, budget.name)] = budget

    update_disruption_budget = add_disruption_budget

    def delete_disruption_budget(self, pdb: Obj) -> None:
        metadata = meta(pdb)
        with self._lock:
            self._budgets.pop((str(metadata.get("namespace") or "default"),
                               str(metadata.get("name") or "")), None)  # fmt: skip

    # --- nodes -----------------------------------------------------------------------------

    def add_node(self, node: Obj) -> None:
        with self._lock:
            info = NodeInfo(node)
            for task in self._tasks.values():
                if task.node_name == info.name and task.status not in _GONE:
                    info.add_task(task)
            self._nodes[info.name] = info

    update_node = add_node

    def delete_node(self, node: Obj) -> None:
        with self._lock:
            self._nodes.pop(meta(node).get("name") or "", None)

    # --- queues and podgroups --------------------------------------------------------------

    def add_queue(self, queue: Obj) -> None:
        """Raises QueueCycleError (a ValueError) if ``spec.parent`` would close a cycle."""
        with self._lock:
            info = QueueInfo(queue)
            proposed = {**self._queues, info.name: info}
            proposed.setdefault(ROOT_QUEUE, QueueInfo.implicit(ROOT_QUEUE))
            problem = queue_problem(info.name, proposed)
            if problem is not None and "cycle" in problem:
                raise QueueCycleError(problem)
            self._queues[info.name] = info

    update_queue = add_queue

    def delete_queue(self, queue: Obj) -> None:
        with self._lock:
            self._queues.pop(meta(queue).get("name") or "", None)

    def add_podgroup(self, podgroup: Obj) -> None:
        with self._lock:
            fresh = JobInfo.from_podgroup(podgroup, self.priority_classes)
            job = self._jobs.setdefault(fresh.uid, fresh)
            if job is not fresh:
                job.set_podgroup(podgroup, self.priority_classes, describe(podgroup, "podgroup"))

    update_podgroup = add_podgroup

    def delete_podgroup(self, podgroup: Obj) -> None:
        with self._lock:
            ns = meta(podgroup).get("namespace") or "default"
            job = self._jobs.get(f"{ns}/{meta(podgroup).get('name')}")
            if job is not None:
                job.podgroup = None
                if not job.tasks:
                    del self._jobs[job.uid]

    # --- priority classes -----------------------------------------------------------------

    def add_priority_class(self, pc: Obj) -> None:
        with self._lock:
            name = meta(pc).get("name") or ""
            value = as_int(pc.get("value"), obj=describe(pc, "priorityclass"), field="value")
            self.priority_classes[name] = value
            if pc.get("globalDefault") is True:
                self._default_class = name
            elif self._default_class == name:  # no longer the default (an update)
                self._default_class = ""
            self.default_priority = self.priority_classes.get(self._default_class, 0)

    update_priority_class = add_priority_class

    def delete_priority_class(self, pc: Obj) -> None:
        with self._lock:
            name = meta(pc).get("name") or ""
            self.priority_classes.pop(name, None)
            if self._default_class == name:
                self._default_class = ""
            self.default_priority = self.priority_classes.get(self._default_class, 0)

    # --- snapshot --------------------------------------------------------------------------

    def snapshot(self, now: float | None = None) -> ClusterSnapshot:
        """Clone jobs, tasks and nodes; the pod dicts are shared, as in Volcano."""
        now = time.time() if now is None else now
        with self._lock:
            queues = dict(self._queues)
            for name in (ROOT_QUEUE, DEFAULT_QUEUE):
                # An unreadable default queue is not an unlimited one: its jobs wait, with
                # why. (The root stays: every queue hangs from it.)
                if name == ROOT_QUEUE or self.invalid.get("queues", name) is None:
                    queues.setdefault(name, QueueInfo.implicit(name))
            snap = ClusterSnapshot({}, {}, queues, reservations=self._reservations)
            snap.pipeline_deadlines = self._pipeline_deadlines
            snap.lapsed_pipelines = self._lapsed_pipelines
            snap.refused_victims = frozenset(self._still_refused(now))
            snap.disruption_budgets = tuple(self._budgets.values())
            lapsed = time.monotonic() - self.ungate_confirm_timeout
            for uid in [u for u, at in self._ungated.items() if at < lapsed]:
                del self._ungated[uid]
            for name in sorted(self._nodes):
                snap.nodes[name] = self._nodes[name].clone()
            bad_queues = {e.name: e.message for e in self.invalid.entries() if e.kind == "queues"}
            for uid in sorted(self._jobs):
                self._snapshot_job(self._jobs[uid], snap, bad_queues)
            return snap

    def _snapshot_job(
        self, job: JobInfo, snap: ClusterSnapshot, bad_queues: Mapping[str, str] | None = None
    ) -> None:
        reason = None
        if job.podgroup is None and not job.is_synthetic:
            bad = self.invalid.get("podgroups", job.uid)
            why = f"is invalid: {bad.message}" if bad else "does not exist"
            reason = Status(Code.INVALID_OBJECT, "cache", f"podgroup {job.uid} {why}")
        elif job.queue not in snap.queues:
            bad = self.invalid.get("queues", job.queue)
            why = f"is invalid: {bad.message}" if bad else "does not exist"
            reason = Status(Code.QUEUE_INVALID, "cache", f"queue {job.queue} {why}")
        elif bad_queues and (ancestor := _bad_ancestor(job.queue, snap.queues, bad_queues)):
            message = f"queue {job.queue}: its ancestor queue {ancestor} is invalid: "
            reason = Status(Code.QUEUE_INVALID, "cache", message + bad_queues[ancestor])
        if reason is not None:
            snap.skipped[job.uid] = reason
            snap.skipped_jobs[job.uid] = job.clone()
            return
        clone = job.clone()
        if clone.podgroup is not None:  # Volcano's snapshot: the class's value, or the default
            clone.priority = self.priority_classes.get(
                clone.priority_class_name, self.default_priority
            )
        for task in clone.tasks.values():
            if task.uid in self._ungated:
                task.sch_gated = False  # our gate removal is on its way
            node = snap.nodes.get(task.node_name)
            if node is not None and task.uid in node.tasks:
                node.tasks[task.uid] = task
        snap.jobs[clone.uid] = clone

    # --- writes ----------------------------------------------------------------------------

    def stamp_reservation(self, task: TaskInfo, stamp: str, client: ClusterClient) -> None:
        what = f"stamp reservation {task.namespace}/{task.name}"
        self._write(lambda: client.stamp_reservation(task.pod, stamp), what, task.uid)

    def gate_removal_failed(self, uid: str) -> None:
        """The removal queued for this pod was given up: it is gated until the watch says
        otherwise, and the next cycle decides again."""
        with self._lock:
            self._ungated.pop(uid, None)

    def note_gate_removed(self, task: TaskInfo) -> None:
        with self._lock:
            self._ungated[task.uid] = time.monotonic()

    def bind(
        self, task: TaskInfo, node_name: str, client: ClusterClient, *, gate_removed: bool = False
    ) -> None:
        """Remove our gate if still present (the synchronous safety net), then bind.

        The asynchronous removal queued when the task passed its queue check may not have
        happened yet; the freshest copy of the pod the watch delivered decides, unless the
        caller removed the gate itself moments ago (``gate_removed``).
        """
        pod, gated = self._to_bind(task, gate_removed)
        if gated:
            client.remove_scheduling_gate(pod)
            self.gates_removed_at_bind += 1
            self.note_gate_removed(task)  # lifted: until the watch says so, and if the bind fails
        client.bind(pod, node_name)
        with self._lock:
            self._mark_bound(task.uid, node_name)

    def bind_async(
        self, task: TaskInfo, node_name: str, client: ClusterClient, *, gate_removed: bool = False
    ) -> Future[None] | None:
        """The bind handed to the client's bind process (``client.bind_async``,
        scheduler.kube.bind_process), when it has one and no gate of ours is left to remove
        first (that safety net stays :meth:`bind`'s PATCH then bind). The Future ends once the
        answer is applied to the cache, as :meth:`bind` returns. None: nothing was sent."""
        hand_over = getattr(client, "bind_async", None)
        if hand_over is None:
            return None
        pod, gated = self._to_bind(task, gate_removed)
        if gated:
            return None
        future: Future[None] = Future()

        def answered(exc: BaseException | None) -> None:
            if exc is not None:
                future.set_exception(exc)
                return
            with self._lock:
                self._mark_bound(task.uid, node_name)
            future.set_result(None)

        return future if hand_over(pod, node_name, answered) else None

    def _to_bind(self, task: TaskInfo, gate_removed: bool) -> tuple[Mapping[str, Any], bool]:
        """The freshest copy of the task's pod the watch delivered, and whether our gate is
        still its only one to remove before the bind (unless the caller just removed it)."""
        with self._lock:
            cached = self._tasks.get(task.uid)
            pod = cached.pod if cached is not None else task.pod
        ours_only = has_queue_allocation_gate_annotation(pod) and has_only_volcano_scheduling_gate(
            pod
        )
        return pod, ours_only and not gate_removed

    def _mark_bound(self, uid: str, node_name: str) -> None:
        cached = self._tasks.get(uid)
        if cached is not None and (cached.pod.get("spec") or {}).get("nodeName"):
            return  # the watch delivered the bound pod before the bind call returned: fresher
        if cached is not None:
            self._move(cached, TaskStatus.BINDING, node_name)
            cached.sch_gated = False

    def evict(self, task: TaskInfo, reason: str, client: ClusterClient) -> None:
        """Evict through the API; raises what the API refused (a PodDisruptionBudget's 429, an
        error) — except a pod already gone (404), or replaced by another of the same name (409
        on the eviction's uid precondition): what the eviction wanted."""
        try:
            client.evict(task.pod, reason)
        except Exception as exc:
            if not _gone(exc):
                raise
        with self._lock:
            cached = self._tasks.get(task.uid)
            if cached is not None and cached.node_name in self._nodes:
                self._move(cached, TaskStatus.RELEASING, cached.node_name)

    def refuse_victim(self, task: TaskInfo, retry_at: float) -> None:
        """Its eviction was refused: leave it out of the victims until ``retry_at`` or until
        its pod changes in what an eviction depends on (its labels, which budgets select it
        by; its phase; its deletion), whichever comes first."""
        with self._lock:
            cached = self._tasks.get(task.uid)
            self._refused[task.uid] = (
                retry_at,
                _eviction_fingerprint(cached.pod) if cached else "",
            )

    def _still_refused(self, now: float) -> list[str]:
        out = []
        for uid, (retry_at, version) in list(self._refused.items()):
            cached = self._tasks.get(uid)
            current = _eviction_fingerprint(cached.pod) if cached else None
            if cached is None or now >= retry_at or current != version:
                del self._refused[uid]
            else:
                out.append(uid)
        return out

    # --- pipelines (issue #5044) --------------------------------------------------------------

    def pipeline(
        self, task: TaskInfo, node_name: str, client: ClusterClient, deadline: float | None = None
    ) -> bool:
        """Persist "``task`` runs on ``node_name`` once resources are released".

        Under the lock, the cached task becomes Pipelined on the node, holding its request in
        the node's pipelined resources; outside it, ``status.nominatedNodeName`` is patched
        asynchronously, and a failed patch resyncs the task from its pod. Returns False when
        the cache already held exactly this decision (nothing written, no new event). Raises
        KeyError if the task or the node is unknown, and leaves the cache as it was.
        """
        with self._lock:
            cached = self._tasks.get(task.uid)
            if cached is None or cached.job_id not in self._jobs:
                raise KeyError(f"pod {task.namespace}/{task.name}: not in the scheduler cache")
            node = self._nodes.get(node_name)
            if node is None:
                raise KeyError(f"pod {task.namespace}/{task.name}: node {node_name} is unknown")
            if cached.status == TaskStatus.PIPELINED and cached.node_name == node_name:
                return False
            self._move(cached, TaskStatus.PIPELINED, node_name)
            if deadline is not None:
                self._pipeline_deadlines[task.uid] = deadline
            pod = cached.pod
        self._nominate(pod, task, node_name, client)
        return True

    def unpipeline(self, task: TaskInfo, client: ClusterClient) -> bool:
        """Drop a persisted pipeline decision that no longer holds: the task is Pending again,
        its node reservation released and ``status.nominatedNodeName`` cleared (else the next
        rebuild from the pod would restore it). False when the cache held no such decision."""
        with self._lock:
            cached = self._tasks.get(task.uid)
            if cached is None or cached.status != TaskStatus.PIPELINED:
                return False
            self._move(cached, TaskStatus.PENDING, "")
            self._pipeline_deadlines.pop(task.uid, None)
            pod = cached.pod
        self._nominate(pod, task, None, client)
        return True

    def lapse_pipeline(self, task: TaskInfo, node_name: str, releasing: frozenset[str]) -> None:
        """A decision outlived its deadline: remember not to take it again on ``node_name``
        while the same pods (``releasing``) are still leaving it."""
        with self._lock:
            self._lapsed_pipelines[task.uid] = (node_name, releasing)

    def _nominate(self, pod: Obj, task: TaskInfo, node: str | None, client: ClusterClient) -> None:
        """Write ``status.nominatedNodeName``: asynchronously, one write at a time per pod, and
        the latest decision last — a patch still in flight never overwrites a newer one."""
        what = f"pod {task.namespace}/{task.name}: " + (
            f"set status.nominatedNodeName={node}" if node else "clear status.nominatedNodeName"
        )
        with self._lock:
            self._nominations[task.uid] = (pod, node)
            lock = self._nomination_locks.setdefault(task.uid, threading.Lock())

        def flush() -> None:
            with lock:
                while True:
                    with self._lock:
                        latest = self._nominations.pop(task.uid, None)
                    if latest is None:
                        return
                    client.patch_nominated_node(*latest)

        self._write(flush, what, task.uid)

    def _move(self, cached: TaskInfo, status: TaskStatus, node_name: str) -> None:
        """Re-account a cached task under a new status and node (the lock is held)."""
        if status != TaskStatus.PIPELINED:
            self._pipeline_deadlines.pop(cached.uid, None)
        old_node = self._nodes.get(cached.node_name)
        if old_node is not None:
            old_node.remove_task(cached)
        job = self._jobs.get(cached.job_id)
        if job is not None:
            job.update_task_status(cached, status)
        else:
            cached.status = status
        cached.node_name = node_name
        cached.transaction = TransactionContext(
            node_name, node_name if status == TaskStatus.PIPELINED else "", status
        )
        new_node = self._nodes.get(node_name)
        if new_node is not None:
            new_node.add_task(cached)

    def _write(self, call: Callable[[], None], what: str, uid: str) -> None:
        def run() -> None:
            try:
                call()
            except Exception as exc:  # the cache must not keep what the cluster refused
                self.write_errors.append(f"{what}: {exc}")
                log.warning("%s failed: %s; resyncing", what, exc, extra={"object": what})
                self._resync(uid)

        if self.async_writes is None:
            run()
            return
        future = self.async_writes.submit(run)
        with self._lock:
            self._writes.add(future)
        future.add_done_callback(self._writes.discard)

    def _resync(self, uid: str) -> None:
        """Volcano's ``resyncTask``: rebuild the task from the last pod the watch delivered."""
        with self._lock:
            cached = self._tasks.get(uid)
            if cached is not None:
                self._delete_task(uid)
                self.add_pod(cached.pod)

    def drain_write_errors(self) -> list[str]:
        """What the asynchronous writes (nominations, reservation stamps) were refused since
        the last call: for the next cycle's report."""
        with self._lock:
            errors, self.write_errors = self.write_errors, []
        return errors

    def wait_for_writes(self, timeout: float = 10.0) -> bool:
        """Wait for the asynchronous writes queued so far (tests, and a clean shutdown)."""
        with self._lock:
            pending = list(self._writes)
        done, not_done = wait(pending, timeout=timeout)
        return not not_done


def _eviction_fingerprint(pod: Obj) -> str:
    status = pod.get("status") or {}
    return repr(
        (
            sorted((meta(pod).get("labels") or {}).items()),
            meta(pod).get("deletionTimestamp"),
            (pod.get("spec") or {}).get("nodeName"),
            status.get("phase"),
        )
    )


def _bad_ancestor(name: str, queues: Mapping[str, QueueInfo], bad: Mapping[str, str]) -> str:
    """The nearest ancestor of queue ``name`` that Sluice refused, else ""."""
    seen = {name}
    parent = queues[name].parent if name in queues else None
    while parent and parent not in seen:
        if parent in bad:
            return parent
        seen.add(parent)
        parent = queues[parent].parent if parent in queues else None
    return ""


def _gone(exc: Exception) -> bool:
    """The API says the pod an eviction named is no longer there: 404, or a 409 on the uid
    precondition (kube-apiserver's "the UID in the precondition ... does not match")."""
    status = getattr(exc, "status", None)
    if status == 404:
        return True
    body = str(getattr(exc, "body", "") or exc)
    return status == 409 and "precondition" in body.lower()
