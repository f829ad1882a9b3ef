"""Statement: a job's tentative operations, applied together or undone together."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scheduler.api.node_info import NodeInfo
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.framework.session import Session

log = logging.getLogger(__name__)

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
        previous = task.status  # Pending, or Pipelined on this node (seed 002, problem 1)
        self.session.allocate_task(task, node)
        self.operations.append(Operation(ALLOCATE, task, node.name, previous=previous))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        if task.status == TaskStatus.PIPELINED and task.node_name == node.name:
            # Already pipelined there (this cycle, or persisted by an earlier one): placing it
            # again would only repeat the decision and its event (seed 002, change 5).
            return
        self.session.pipeline_task(task, node)
        self.operations.append(Operation(PIPELINE, task, node.name))

    def unpipeline(self, task: TaskInfo) -> None:
        """Take back a pipeline decision now, outside the statement's undo list (Volcano's
        exported ``UnPipeline``): the nominated node no longer fits the task."""
        self.session.unplace_task(task, task.node_name)

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
                if op.previous == TaskStatus.PIPELINED:  # back to its earlier decision
                    self.session.pipeline_task(op.task, self.session.nodes[op.node_name])
        self.operations.clear()

    def commit(self) -> None:
        """Apply through the writer: allocations bind, pipelines persist in the cache (and
        publish nominatedNodeName), evictions evict. A pipeline the cache refuses is undone
        in the session, so the session never claims what the cache does not hold."""
        writer = self.session.writer
        for op in self.operations:
            op.task.last_transaction = None  # committed: nothing to report from a discard
            if op.name == ALLOCATE:
                writer.bind(op.task, op.node_name)
            elif op.name == PIPELINE:
                try:
                    writer.pipeline(op.task, op.node_name)
                except KeyError as exc:
                    log.warning("pipeline not persisted: %s", exc, extra={"object": str(exc)})
                    writer.errors.append(f"pipeline {op.task.namespace}/{op.task.name}: {exc}")
                    self.session.unplace_task(op.task, op.node_name)
            else:
                writer.evict(op.task, op.reason)
        self.operations.clear()
