"""NodeInfo: a node's resources as Volcano tracks them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.helpers import describe, require_name
from scheduler.api.quantity import parse_resource_list
from scheduler.api.resource import Resource
from scheduler.api.task_info import TaskInfo, TaskStatus


class NodeInfo:
    """Idle + Used = Allocatable; Releasing and Pipelined are tracked besides.

    ``used`` is the exact sum of the node's tasks, even when pods bound by another scheduler
    overcommit the node; ``idle`` is ``allocatable - used`` floored at zero per resource, so
    a node that is overcommitted on one resource offers none of it until enough pods leave.
    """

    def __init__(self, node: Mapping[str, Any]) -> None:
        self.name = require_name(node, "node")
        self.node = node
        status = node.get("status") or {}
        obj = describe(node, "node")
        alloc = status.get("allocatable") or status.get("capacity")
        self.allocatable = Resource(parse_resource_list(alloc, obj=obj, field="status.allocatable"))
        self.idle = self.allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.tasks: dict[str, TaskInfo] = {}
        self.ready = _is_ready(node)
        self.index = -1  # row in the session's node matrix

    @property
    def future_idle(self) -> Resource:
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def clone(self) -> NodeInfo:
        n = NodeInfo.__new__(NodeInfo)
        n.__dict__.update(self.__dict__)
        for attr in ("idle", "used", "releasing", "pipelined"):
            setattr(n, attr, getattr(self, attr).clone())
        n.tasks = dict(self.tasks)
        return n

    def add_task(self, task: TaskInfo) -> None:
        if task.uid in self.tasks:
            return
        req = task.node_req
        if task.status == TaskStatus.PIPELINED:
            self.pipelined.add(req)
        else:
            if task.status == TaskStatus.RELEASING:
                self.releasing.add(req)
            self.used.add(req)
            self._sync_idle(req)
        self.tasks[task.uid] = task

    def remove_task(self, task: TaskInfo) -> None:
        old = self.tasks.pop(task.uid, None)
        if old is None:
            return
        req = old.node_req
        if old.status == TaskStatus.PIPELINED:
            self.pipelined.sub(req)
            return
        if old.status == TaskStatus.RELEASING:
            self.releasing.sub(req)
        self.used.sub(req)
        self._sync_idle(req)

    def _sync_idle(self, changed: Resource) -> None:
        """Recompute ``idle`` on the resources ``changed`` touched: allocatable - used, floored."""
        alloc, used, idle = self.allocatable.values, self.used.values, self.idle.values
        for k in changed.values:
            left = alloc.get(k, 0) - used.get(k, 0)
            if left > 0:
                idle[k] = left
            else:
                idle.pop(k, None)


def _is_ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return True  # no conditions reported (tests, fresh objects): assume ready
