"""Statement: a job's tentative operations, applied together or undone together."""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from scheduler.api.node_info import NodeInfo
from scheduler.api.report import PodState
from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus, pod_state_of
from scheduler.framework.session import Session

log = logging.getLogger(__name__)
# Seconds before a victim whose eviction was refused may be picked again (sooner if its pod
# changes): a PodDisruptionBudget lets evictions through as its pods become healthy again.
EVICTION_RETRY = 30.0


class Op(enum.Enum):
    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"
    UNGATE = "ungate"  # lift our queue-allocation gate: the pod's queue has room


@dataclass
class Operation:
    name: Op
    task: TaskInfo
    node_name: str
    reason: str = ""
    previous: TaskStatus = TaskStatus.PENDING  # to undo: the task's status before
    was: PodState = PodState.WAITING  # to report: the pod's state before
    waited: Status | None = None  # why the task waited before this placement


class Statement:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.operations: list[Operation] = []

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        # Pending, or Pipelined on this node (pipeline cache persistence design, problem 1).
        previous, was = task.status, self._state_of(task)
        self.session.allocate_task(task, node)
        self.operations.append(Operation(Op.ALLOCATE, task, node.name, "", previous, was))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        if task.status == TaskStatus.PIPELINED and task.node_name == node.name:
            # Already pipelined there (this cycle, or persisted by an earlier one): placing it
            # again would only repeat the decision and its event (the design's change 5).
            return
        was, waited = self._state_of(task), self.session.waiting.get(task.uid)
        self.session.pipeline_task(task, node)
        self.operations.append(Operation(Op.PIPELINE, task, node.name, was=was, waited=waited))

    def ungate(self, task: TaskInfo) -> None:
        """The task's queue has room: its gate goes when the statement commits (Volcano's
        gate-controlled scheduling design), together with its gang's; discarded, the task
        stays gated and holds no reservation."""
        if not task.sch_gated:
            return
        task.sch_gated = False
        self.operations.append(Operation(Op.UNGATE, task, "", was=PodState.GATED))

    def take_back_ungate(self, task: TaskInfo) -> None:
        """Undo this statement's gate removal of ``task`` alone (what it was tried for did not
        work out): it stays gated and holds no reservation."""
        ops = [op for op in self.operations if op.name is Op.UNGATE and op.task is task]
        for op in ops:
            self.operations.remove(op)
            task.sch_gated = True
            self.session.unreserve(task)

    def unpipeline(self, task: TaskInfo) -> None:
        """Take back a pipeline decision now, outside the statement's undo list (Volcano's
        exported ``UnPipeline``): the nominated node no longer fits the task."""
        self.session.unplace_task(task, task.node_name)

    def evict(self, task: TaskInfo, reason: str) -> None:
        was = self._state_of(task)
        previous = self.session.evict_task(task)
        self.operations.append(Operation(Op.EVICT, task, task.node_name, reason, previous, was))

    def _state_of(self, task: TaskInfo) -> PodState:
        """The pod's state as the cluster shows it: a decision persisted by an earlier cycle
        and taken back in this one (to look again) was still the pod's nomination."""
        state = pod_state_of(task)
        if state is PodState.WAITING and task.uid in self.session.pipelined_at_open:
            return PodState.PIPELINED
        return state

    def merge(self, other: Statement) -> None:
        """Take over ``other``'s operations (already applied to the session), so they are
        committed or discarded with this statement's (Volcano's Statement.Merge)."""
        self.operations.extend(other.operations)
        other.operations = []

    def allocated_tasks(self) -> list[TaskInfo]:
        """The tasks this statement allocates (what commit will bind)."""
        return [op.task for op in self.operations if op.name is Op.ALLOCATE]

    def discard(self) -> None:
        """Undo every operation, newest first."""
        for op in reversed(self.operations):
            if op.name is Op.UNGATE:
                op.task.sch_gated = True
                self.session.unreserve(op.task)
            elif op.name is Op.EVICT:
                self.session.unevict_task(op.task, op.previous)
            else:
                self.session.unplace_task(op.task, op.node_name)
                if op.previous == TaskStatus.PIPELINED:  # back to its earlier decision
                    self.session.pipeline_task(op.task, self.session.nodes[op.node_name])
        self.operations.clear()

    def commit_ungates_only(self) -> None:
        """Undo every operation but the gate removals, and commit those: the gang's minimum
        fits its queue, so all its members are let through together, to wait for nodes in
        the open (an autoscaler sees them), holding their reservations."""
        ungates = [op for op in self.operations if op.name is Op.UNGATE]
        self.operations = [op for op in self.operations if op.name is not Op.UNGATE]
        self.discard()
        self.operations = ungates
        self.commit()

    def commit(self) -> None:
        """Apply through the writer: evictions first, then gate removals, binds and pipelines
        (persisted in the cache, published as nominatedNodeName). A pipeline the cache refuses
        is undone in the session, so the session never claims what the cache does not hold.

        An eviction the API refuses (a PodDisruptionBudget) undoes what waited for it: the
        pipeline on its node, and the gate removal of the pod pipelined there — a pod held
        by our gate keeps it unless its evictions stand. No further eviction is sent on that
        node; for a gang (whose members run together or not at all) none at all, and none of
        its pipelines stands: evicting more pods would free room for nothing."""
        session, writer = self.session, self.session.writer
        gang = any(
            op.name is Op.PIPELINE and session.jobs[op.task.job_id].min_available > 1
            for op in self.operations
            if op.task.job_id in session.jobs
        )
        refused: dict[str, str] = {}  # node -> the victim whose eviction was refused there
        for op in self.operations:
            if op.name is not Op.EVICT:
                continue
            op.task.last_transaction = None
            if (gang and refused) or op.node_name in refused:
                session.unevict_task(op.task, op.previous)  # not sent: it would free nothing
            elif not writer.evict(op.task, op.reason, op.was, session.now + EVICTION_RETRY):
                refused[op.node_name] = f"{op.task.namespace}/{op.task.name}"
                session.unevict_task(op.task, op.previous)
        pipelines = {op.task.uid: op.node_name for op in self.operations if op.name is Op.PIPELINE}
        allocated = {op.task.uid for op in self.operations if op.name is Op.ALLOCATE}
        blocked = set(pipelines.values()) if gang and refused else set(refused)
        for op in self.operations:
            op.task.last_transaction = None  # committed: nothing to report from a discard
            if op.name is Op.UNGATE:
                if pipelines.get(op.task.uid) in blocked:
                    op.task.sch_gated = True
                    session.unreserve(op.task)
                else:
                    writer.remove_gate(op.task, session.reservations.get(op.task.uid),
                                       bound_next=op.task.uid in allocated)  # fmt: skip
            elif op.name is Op.ALLOCATE:
                writer.bind(op.task, op.node_name, op.was)
            elif op.name is Op.PIPELINE:
                if op.node_name in blocked:
                    self._refused(op, refused)
                    continue
                node = session.nodes[op.node_name]
                try:
                    writer.pipeline(op.task, op.node_name, op.was, session.pipeline_deadline(node))
                except KeyError as exc:
                    log.warning("pipeline not persisted: %s", exc, extra={"object": str(exc)})
                    writer.errors.append(f"pipeline {op.task.namespace}/{op.task.name}: {exc}")
                    session.unplace_task(op.task, op.node_name)
        self.operations.clear()

    def _refused(self, op: Operation, refused: dict[str, str]) -> None:
        """The pipeline ``op`` waited for an eviction the API refused: undone. The pod waits
        for what it waited for before it tried to evict (its queue, or nodes), so a pod only
        its queue holds back is never marked ``Unschedulable`` for it."""
        session = self.session
        session.unplace_task(op.task, op.node_name)
        if op.node_name in refused:
            what = f"the eviction of {refused[op.node_name]} there was refused"
        else:
            what = f"the eviction of {', '.join(sorted(refused.values()))} for its gang was refused"
        before = op.waited
        code = Code.UNSCHEDULABLE
        if before is not None and not before.ok and before.code is not Code.PIPELINED:
            code = before.code
        session.wait(op.task, Status(code, "preempt", f"not pipelined on {op.node_name}: {what}"))
