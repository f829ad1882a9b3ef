"""Session: one scheduling cycle's view of the cluster, and the plugins' extension points.

Plugins register callbacks in ``on_session_open``; tiers are flattened in configuration order,
so for orderings the first plugin that tells two items apart decides, and ties fall back to
creation time, then UID — the same rule as Volcano, and deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from scheduler.api.job_info import JobInfo
from scheduler.api.node_info import NodeInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.task_info import TaskInfo, TaskStatus, TransactionContext
from scheduler.cache.cache import Snapshot
from scheduler.config import SchedulerConfig
from scheduler.framework.node_matrix import NodeMatrix
from scheduler.framework.writer import Writer

Refusal = str | None  # None: allowed; otherwise why not, in words


class Session:
    def __init__(self, snapshot: Snapshot, config: SchedulerConfig, writer: Writer, now: float):
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.skipped: dict[str, str] = dict(snapshot.skipped)
        self.skipped_jobs: dict[str, JobInfo] = snapshot.skipped_jobs
        self.invalid_jobs: dict[str, tuple[JobInfo, str, str]] = {}  # uid -> (job, reason, msg)
        self.config, self.writer, self.now = config, writer, now
        writer.persist_pipelines = config.pipeline_persistence
        writer.jobs = self.jobs
        self.reservations = snapshot.reservations
        self.notices: list[str] = []  # lines for the cycle report (e.g. expired reservations)
        extra = {
            k for j in self.jobs.values() for t in j.tasks.values() for k in t.init_resreq.values
        }
        self.matrix = NodeMatrix(list(self.nodes.values()), extra)
        # Decisions persisted by earlier cycles (seed 002): task uid -> nominated node.
        self.pipelined_at_open = {
            t.uid: t.node_name
            for j in self.jobs.values()
            for t in j.index.get(TaskStatus.PIPELINED, {}).values()
        }
        self.node_list = self.matrix.nodes
        self.waiting: dict[str, str] = {}  # task uid -> why it is still waiting
        self.plugins: list[Any] = []
        self.job_order_fns: list[Callable[[JobInfo], Any]] = []
        self.task_order_fns: list[Callable[[TaskInfo], Any]] = []
        self.queue_order_fns: list[Callable[[QueueInfo], Any]] = []
        self.job_ready_fns: list[Callable[[JobInfo], bool]] = []
        self.job_pipelined_fns: list[Callable[[JobInfo], bool]] = []
        self.job_valid_fns: list[Callable[[JobInfo], tuple[str, str] | None]] = []
        self.job_enqueueable_fns: list[Callable[[JobInfo], Refusal]] = []
        self.job_enqueued_fns: list[Callable[[JobInfo], None]] = []
        self.allocatable_fns: list[Callable[[QueueInfo, TaskInfo], Refusal]] = []
        self.overused_fns: list[Callable[[QueueInfo], bool]] = []
        # For preempt and reclaim: (preemptor, candidates) -> victims.
        self.preemptable_fns: list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]] = []
        self.reclaimable_fns: list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]] = []
        self.preemptive_fns: list[Callable[[QueueInfo, TaskInfo], Refusal]] = []
        self.predicate_fns: list[Callable[[TaskInfo], np.ndarray]] = []
        self.predicate_reason_fns: list[Callable[[TaskInfo, np.ndarray], dict[str, int]]] = []
        self.node_score_fns: list[Callable[[TaskInfo, np.ndarray], np.ndarray]] = []
        self.allocate_handlers: list[Callable[[TaskInfo], None]] = []
        self.deallocate_handlers: list[Callable[[TaskInfo], None]] = []
        self.cleanup_reservations_fns: list[Callable[[Any], None]] = []
        self.close_fns: list[Callable[[Session], None]] = []

    # --- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        from scheduler.framework.registry import PLUGINS

        for tier in self.config.tiers:
            for option in tier:
                plugin = PLUGINS[option.name](option.arguments)
                plugin.on_session_open(self)
                self.plugins.append(plugin)
        for uid in list(self.jobs):
            verdict = self.job_valid(self.jobs[uid])
            if verdict is not None:
                self.invalid_jobs[uid] = (self.jobs.pop(uid), *verdict)

    def close(self) -> None:
        self._release_stale_pipelines()
        for fn in self.close_fns:
            fn(self)

    def _release_stale_pipelines(self) -> None:
        """A task that came in Pipelined (a persisted decision) and leaves the cycle Pending
        was unpipelined for good: its nominated node no longer fits it and no other node took
        it. Drop the decision in the cache and on the pod, or it would hold the node forever.
        """
        for job in self.jobs.values():
            for task in job.index.get(TaskStatus.PENDING, {}).values():
                node_name = self.pipelined_at_open.get(task.uid)
                if node_name is not None:
                    reason = self.waiting.get(task.uid) or "nominated node no longer fits"
                    self.writer.unpipeline(task, node_name, reason)

    # --- orderings -------------------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> tuple:
        return (*(fn(job) for fn in self.job_order_fns), job.creation, job.uid)

    def task_order_key(self, task: TaskInfo) -> tuple:
        return (*(fn(task) for fn in self.task_order_fns), task.creation, task.uid)

    def queue_order_key(self, queue: QueueInfo) -> tuple:
        return (*(fn(queue) for fn in self.queue_order_fns), queue.creation, queue.uid)

    # --- votes -----------------------------------------------------------------------------

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self.job_ready_fns)

    def job_pipelined(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self.job_pipelined_fns)

    def job_valid(self, job: JobInfo) -> tuple[str, str] | None:
        for fn in self.job_valid_fns:
            verdict = fn(job)
            if verdict is not None:
                return verdict
        return None

    def job_enqueueable(self, job: JobInfo) -> Refusal:
        for fn in self.job_enqueueable_fns:
            refusal = fn(job)
            if refusal:
                return refusal
        return None

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self.job_enqueued_fns:
            fn(job)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Refusal:
        for fn in self.allocatable_fns:
            refusal = fn(queue, task)
            if refusal:
                return refusal
        return None

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self.overused_fns)

    def cleanup_reservations(self, statement: Any) -> None:
        for fn in self.cleanup_reservations_fns:
            fn(statement)

    # --- nodes -----------------------------------------------------------------------------

    def predicate_mask(self, task: TaskInfo) -> np.ndarray:
        mask = self.matrix.ready.copy()
        for fn in self.predicate_fns:
            mask &= fn(task)
        return mask

    def predicate_reasons(self, task: TaskInfo, mask: np.ndarray) -> dict[str, int]:
        reasons: dict[str, int] = {}
        not_ready = int((~self.matrix.ready).sum())
        if not_ready:
            reasons["node(s) were not ready"] = not_ready
        for fn in self.predicate_reason_fns:
            for reason, count in fn(task, mask).items():
                reasons[reason] = reasons.get(reason, 0) + count
        return reasons

    def node_scores(self, task: TaskInfo, vec: np.ndarray) -> np.ndarray:
        total = np.zeros(len(self.node_list))
        for fn in self.node_score_fns:
            total += fn(task, vec)
        return total

    # --- state changes used by Statement ---------------------------------------------------

    def _place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus) -> None:
        if task.status == TaskStatus.PIPELINED and task.node_name != node.name:
            self._unplace(task, task.node_name)  # moving a decision: release the old node
        if task.uid in node.tasks:
            # Pipelined here before: re-account it in place, Pipelined -> Allocated (seed 002,
            # problems 1 and 5), instead of failing on "task already on node".
            node.remove_task(task)
            for handler in self.deallocate_handlers:
                handler(task)
        self.jobs[task.job_id].update_task_status(task, status)
        task.node_name = node.name  # as Volcano: task.NodeName is the transaction's NodeName
        nominated = node.name if status == TaskStatus.PIPELINED else ""
        task.transaction = TransactionContext(node.name, nominated, status)
        node.add_task(task)
        self.matrix.sync(node)
        self.waiting.pop(task.uid, None)
        for handler in self.allocate_handlers:
            handler(task)

    def _unplace(self, task: TaskInfo, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is not None:  # a persisted decision may name a node that has since gone
            node.remove_task(task)
            self.matrix.sync(node)
        task.last_transaction = task.transaction.clone()
        self.jobs[task.job_id].update_task_status(task, TaskStatus.PENDING)
        task.node_name = ""
        task.transaction = TransactionContext()
        for handler in self.deallocate_handlers:
            handler(task)

    def allocate_task(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, TaskStatus.ALLOCATED)

    def pipeline_task(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, TaskStatus.PIPELINED)

    def unplace_task(self, task: TaskInfo, node_name: str) -> None:
        self._unplace(task, node_name)

    def evict_task(self, task: TaskInfo) -> TaskStatus:
        node, previous = self.nodes[task.node_name], task.status
        node.remove_task(task)
        self.jobs[task.job_id].update_task_status(task, TaskStatus.RELEASING)
        node.add_task(task)
        self.matrix.sync(node)
        for handler in self.deallocate_handlers:
            handler(task)
        return previous

    def unevict_task(self, task: TaskInfo, previous: TaskStatus) -> None:
        node = self.nodes[task.node_name]
        node.remove_task(task)
        self.jobs[task.job_id].update_task_status(task, previous)
        node.add_task(task)
        self.matrix.sync(node)
        for handler in self.allocate_handlers:
            handler(task)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(self.preemptable_fns, preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(self.reclaimable_fns, reclaimer, candidates)

    @staticmethod
    def _victims(fns, task: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims every registered plugin agrees to (Volcano intersects the plugins' answers);
        with no plugin registered, none."""
        if not fns:
            return []
        chosen = None
        for fn in fns:
            allowed = {v.uid for v in fn(task, candidates)}
            chosen = allowed if chosen is None else chosen & allowed
        return [c for c in candidates if c.uid in chosen]

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Refusal:
        """May ``queue`` take resources from other queues for ``task``? (reclaim)"""
        for fn in self.preemptive_fns:
            refusal = fn(queue, task)
            if refusal:
                return refusal
        return None

    def job_starving(self, job: JobInfo) -> bool:
        """The job still needs resources: it is neither ready nor pipelined."""
        return not self.job_ready(job) and not self.job_pipelined(job)

    def wait(self, task: TaskInfo, reason: str) -> None:
        """Remember why a task is still waiting (for the report and its pod condition)."""
        self.waiting[task.uid] = reason
