"""Statement: a job's tentative operations, applied together or undone together."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.node_info import NodeInfo
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.framework.session import Session

ALLOCATE, PIPELINE, EVICT = "allocate", "pipeline", "evict"


@dataclass
class Operation:
    name: str
    task: TaskInfo
    node_name: str
    reason: str = ""
    previous: TaskStatus = TaskStatus.PENDING


class Statement:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.operations: list[Operation] = []

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self.session.allocate_task(task, node)
        self.operations.append(Operation(ALLOCATE, task, node.name))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self.session.pipeline_task(task, node)
        self.operations.append(Operation(PIPELINE, task, node.name))

    def evict(self, task: TaskInfo, reason: str) -> None:
        previous = self.session.evict_task(task)
        self.operations.append(Operation(EVICT, task, task.node_name, reason, previous))

    def discard(self) -> None:
        """Undo every operation, newest first."""
        for op in reversed(self.operations):
            if op.name == EVICT:
                self.session.unevict_task(op.task, op.previous)
            else:
                self.session.unplace_task(op.task, op.node_name)
        self.operations.clear()

    def commit(self) -> None:
        """Apply through the writer: allocations bind, pipelines nominate, evictions evict."""
        writer = self.session.writer
        for op in self.operations:
            op.task.last_transaction = None  # committed: nothing to report from a discard
            if op.name == ALLOCATE:
                writer.bind(op.task, op.node_name)
            elif op.name == PIPELINE:
                writer.nominate(op.task, op.node_name)
            else:
                writer.evict(op.task, op.reason)
        self.operations.clear()

    def commit_pipelines(self) -> None:
        """For a job pipelined but not ready: persist nominations (seed 002), bind nothing.

        Its allocations stay in the session, as Volcano leaves the statement open.
        """
        for op in self.operations:
            if op.name == PIPELINE:
                self.session.writer.nominate(op.task, op.node_name)
        self.operations.clear()
