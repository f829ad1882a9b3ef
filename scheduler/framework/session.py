"""Session: one scheduling cycle's view of the cluster.

A Session receives its plugin instances, tier by tier (the registry builds them from the
configuration); each plugin registers callbacks on the extension points
(``scheduler.framework.extensions``) in ``on_session_open``. Every check answers with a
``Status``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np

from scheduler.api.helpers import reservation_since
from scheduler.api.job_info import PG_INQUEUE, JobInfo
from scheduler.api.node_info import NodeInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus, TransactionContext
from scheduler.cache.cache import ClusterSnapshot
from scheduler.config import SchedulerConfig
from scheduler.framework.extensions import ExtensionPoints, Mask
from scheduler.framework.node_matrix import NodeMatrix
from scheduler.framework.writer import Writer
from scheduler.plugins.base import Plugin
from scheduler.plugins.queue_tree import QueueAttr


def _time_left(task: TaskInfo, now: float) -> float:
    """How long a leaving pod may still take: until its deletionTimestamp (which Kubernetes
    sets to the deletion time plus its grace period), else its whole grace period."""
    meta = task.pod.get("metadata") or {}
    stamp = meta.get("deletionTimestamp")
    if isinstance(stamp, str):
        try:
            due = datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
            return max(0.0, due.timestamp() - now)
        except ValueError:
            pass
    grace = (task.pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(grace) if isinstance(grace, int | float) and not isinstance(grace, bool) else 30.0


class Session(ExtensionPoints):
    def __init__(
        self,
        snapshot: ClusterSnapshot,
        config: SchedulerConfig,
        writer: Writer,
        now: float,
        tiers: Sequence[Sequence[Plugin]] = (),
    ) -> None:
        super().__init__()
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.skipped: dict[str, Status] = dict(snapshot.skipped)  # job uid -> why not scheduled
        self.skipped_jobs: dict[str, JobInfo] = snapshot.skipped_jobs
        # Jobs that failed a job_valid check (gang: too few pods), with why. They stay in
        # ``jobs``: enqueue may still admit them (a PodGroup created before its pods, as
        # Volcano's job controller and the Spark and Kubeflow operators do); the other
        # actions skip them.
        self.invalid: dict[str, Status] = {}
        self.config, self.writer, self.now = config, writer, now
        writer.persist_pipelines = config.pipeline_persistence
        writer.jobs = self.jobs
        # Gate reservations' start times, shared with the cache so they outlive the cycle.
        self.reservations: dict[str, float | None] = snapshot.reservations
        self.notices: list[str] = []  # lines for the cycle report (e.g. expired reservations)
        # Nodes on which preempt tried victims enough for its preemptor (Volcano's
        # RegisterPreemptionAttempts, volcano_total_preemption_attempts).
        self.preemption_attempts = 0
        extra = {
            k for j in self.jobs.values() for t in j.tasks.values() for k in t.init_resreq.values
        }
        self.matrix = NodeMatrix(list(self.nodes.values()), extra)
        self.node_list: list[NodeInfo] = self.matrix.nodes
        # Decisions persisted by earlier cycles (Volcano's pipeline cache persistence design):
        # task uid -> nominated node.
        self.pipelined_at_open = {
            t.uid: t.node_name
            for j in self.jobs.values()
            for t in j.index.get(TaskStatus.PIPELINED, {}).values()
        }
        self.waiting: dict[str, Status] = {}  # task uid -> why it is still waiting
        # Pipeline decisions' deadlines and the decisions that lapsed (shared with the cache),
        # and victims whose eviction was refused (left out of preempt and reclaim for now).
        self.pipeline_deadlines: dict[str, float] = snapshot.pipeline_deadlines
        self.lapsed_pipelines = snapshot.lapsed_pipelines
        self.refused_victims: frozenset[str] = snapshot.refused_victims
        self.disruption_budgets = snapshot.disruption_budgets
        # The queue plugin's figures per queue (capability, deserved, allocated, share…).
        self.queue_attrs: dict[str, QueueAttr] = {}
        # How that plugin derived them (``scheduler.api.report.FIGURES``), and the queues no
        # job can use with why (a missing parent, a cycle in spec.parent).
        self.queue_figures = ""
        self.queue_problems: dict[str, str] = {}
        self.plugins: list[Plugin] = []
        for index, tier in enumerate(tiers):
            for plugin in tier:
                plugin.tier = index
                self.plugins.append(plugin)

    # --- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        self._admit_ungated_pods()
        self._lapse_pipelines()
        for plugin in self.plugins:
            plugin.on_session_open(self)
        for uid, job in self.jobs.items():
            verdict = self.job_valid(job)
            if not verdict.ok:
                self.invalid[uid] = verdict

    # --- pipeline decisions' life -------------------------------------------------------------

    def releasing_on(self, node: NodeInfo) -> frozenset[str]:
        return frozenset(t.uid for t in node.tasks.values() if t.status == TaskStatus.RELEASING)

    def pipeline_deadline(self, node: NodeInfo) -> float:
        """A decision to run on ``node`` once resources are released there lasts as long as
        the pods leaving it may take (their grace periods) plus ``pipelineMargin``."""
        waits = [0.0]
        for task in node.tasks.values():
            if task.status == TaskStatus.RELEASING:
                waits.append(_time_left(task, self.now))
        return self.now + max(waits) + self.config.pipeline_margin

    def may_pipeline_on(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Not on a node where its decision lapsed while the same pods are still leaving."""
        lapsed = self.lapsed_pipelines.get(task.uid)
        return lapsed is None or lapsed != (node.name, self.releasing_on(node))

    def _lapse_pipelines(self) -> None:
        """A persisted decision whose victims never left releases its node: past its deadline
        it is taken back, so the pod loses its ``nominatedNodeName`` (an autoscaler ignores a
        nominated pod: a stale nomination would hide it for good, kubernetes/autoscaler #9607)
        and may be placed, or seen, anew."""
        for job in self.jobs.values():
            for task in list(job.index.get(TaskStatus.PIPELINED, {}).values()):
                node = self.nodes.get(task.node_name)
                if node is None:
                    continue
                deadline = self.pipeline_deadlines.setdefault(
                    task.uid, self.pipeline_deadline(node)
                )  # a decision this process did not make is timed from now
                if self.now < deadline:
                    continue
                releasing = self.releasing_on(node)
                self.lapsed_pipelines[task.uid] = (node.name, releasing)
                self.pipeline_deadlines.pop(task.uid, None)
                self.unplace_task(task, node.name)
                message = (
                    f"decision to run on {node.name} once resources are released there lapsed: "
                    f"{len(releasing)} pod(s) there did not leave in time"
                )
                self.notices.append(f"pod {task.namespace}/{task.name}: {message}")
                self.writer.event(task.pod, "Warning", "PipelineExpired", message)

    def _drop_orphaned_pipelines(self) -> None:
        """Decisions that outlived their gang: a job that is invalid now (a member deleted) or
        can no longer be pipelined as a whole keeps no member pipelined — its node room and
        queue share go back."""
        for uid, job in self.jobs.items():
            pipelined = list(job.index.get(TaskStatus.PIPELINED, {}).values())
            if not pipelined:
                continue
            why = self.invalid.get(uid)
            if why is None and self.job_pipelined(job):
                continue
            if why is None:
                why = Status(Code.GANG, "gang", f"gang of {job.min_available} can no longer "
                             "be pipelined: its decisions are released")  # fmt: skip
            for task in pipelined:
                self.unplace_task(task, task.node_name)
                self.wait(task, why)

    def _admit_ungated_pods(self) -> None:
        """A pod without a PodGroup has no object to keep its admission in, so its gang of one
        starts each cycle Pending. One whose gate Sluice lifted (its queue admitted it; the
        start of its reservation is on the pod, or this process saw it) stays admitted:
        otherwise a higher-priority newcomer is admitted first, the pod is refused by its queue
        and the newcomer by the pod's reservation, and nothing runs."""
        for job in self.jobs.values():
            if not job.is_synthetic or not job.is_pending():
                continue
            for task in job.pending_tasks():
                if task.sch_gated:
                    continue
                if self.reservations.get(task.uid) is not None or reservation_since(task.pod):
                    job.phase = PG_INQUEUE
                    break

    def schedulable(self, job: JobInfo) -> bool:
        """Admitted (not Pending) and valid: what allocate, backfill, preempt and reclaim take."""
        return not job.is_pending() and job.uid not in self.invalid

    def close(self) -> None:
        self._drop_orphaned_pipelines()
        self._release_stale_pipelines()
        for plugin in self.plugins:
            plugin.on_session_close(self)

    def _release_stale_pipelines(self) -> None:
        """A task that came in Pipelined (a persisted decision) and leaves the cycle Pending
        was unpipelined for good: its nominated node no longer fits it and no other node took
        it. Drop the decision in the cache and on the pod, or it would hold the node forever.
        """
        for job in self.jobs.values():
            for task in job.index.get(TaskStatus.PENDING, {}).values():
                node_name = self.pipelined_at_open.get(task.uid)
                if node_name is not None:
                    why = self.waiting.get(task.uid)
                    message = why.message if why else "nominated node no longer fits"
                    self.writer.unpipeline(task, node_name, message)

    # --- orderings -------------------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> tuple:
        return (*(fn(job) for fn in self.job_order_fns), job.creation, job.uid)

    def task_order_key(self, task: TaskInfo) -> tuple:
        return (*(fn(task) for fn in self.task_order_fns), task.creation, task.uid)

    def queue_order_key(self, queue: QueueInfo) -> tuple:
        return (*(fn(queue) for fn in self.queue_order_fns), queue.creation, queue.uid)

    def victim_order_key(self, preemptor: TaskInfo) -> Callable[[TaskInfo], tuple]:
        """Volcano's BuildVictimsPriorityQueue, as a key to sort victims in reverse (largest
        first): a task whose job is gone first; between queues, the plugins' victim queue
        order for ``preemptor`` (capacity: the queue closest to the preemptor's in the tree),
        then the queue last in queue order; then the job last in job order, then the task last
        in task order (the lowest priority, the newest)."""
        job = self.jobs.get(preemptor.job_id)
        mine = self.queues.get(job.queue) if job is not None else None

        def key(task: TaskInfo) -> tuple:
            victim_job = self.jobs.get(task.job_id)
            queue = self.queues.get(victim_job.queue) if victim_job is not None else None
            if victim_job is None or queue is None:
                return (1, self.task_order_key(task))
            by_preemptor = (
                tuple(fn(queue, mine) for fn in self.victim_queue_order_fns)
                if mine is not None
                else ()
            )
            return (
                0,
                by_preemptor,
                self.queue_order_key(queue),
                self.job_order_key(victim_job),
                self.task_order_key(task),
            )

        return key

    # --- nodes -----------------------------------------------------------------------------

    def predicate_mask(self, task: TaskInfo) -> Mask:
        mask = self.matrix.ready.copy()
        for fn in self.predicate_fns:
            mask &= fn(task)
        return mask

    def predicate_reasons(self, task: TaskInfo, mask: Mask) -> dict[str, int]:
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
            # Pipelined here before: re-account it in place, Pipelined -> Allocated (pipeline
            # cache persistence design, problems 1 and 5), not fail on "task already on node".
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

    def wait(self, task: TaskInfo, status: Status) -> None:
        """Remember why a task is still waiting (for the report and its pod condition)."""
        self.waiting[task.uid] = status
