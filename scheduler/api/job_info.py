"""JobInfo: a gang (a PodGroup, or a synthetic gang of one pod)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.helpers import (
    annotations_of,
    as_int,
    describe,
    has_only_volcano_scheduling_gate,
    meta,
    require_name,
)
from scheduler.api.labels import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION
from scheduler.api.quantity import parse_resource_list
from scheduler.api.resource import Resource
from scheduler.api.status import Status
from scheduler.api.task_info import TaskInfo, TaskStatus, allocated_status

PG_PENDING, PG_INQUEUE, PG_RUNNING = "Pending", "Inqueue", "Running"
PG_UNKNOWN, PG_COMPLETED = "Unknown", "Completed"

_READY = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED,
     TaskStatus.SUCCEEDED}
)  # fmt: skip
_VALID = _READY | {TaskStatus.PIPELINED, TaskStatus.PENDING}


class JobInfo:
    def __init__(self, uid: str, namespace: str, name: str) -> None:
        self.uid, self.namespace, self.name = uid, namespace, name
        self.queue = DEFAULT_QUEUE
        self.podgroup: Mapping[str, Any] | None = None
        self.phase = PG_PENDING
        self.min_available = 1
        self.min_resources: Resource | None = None
        self.priority = 0
        self.creation = ""
        self.tasks: dict[str, TaskInfo] = {}
        self.index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        # Kept in step with the index (a hot path): ready, pipelined, valid, pending best-effort.
        self._ready = self._pipelined = self._valid = self._best_effort_pending = 0
        self.nodes_fit_errors: dict[str, Status] = {}  # task uid -> why it was not placed
        self.job_fit_error: Status | None = None  # why the job was not admitted
        self.is_synthetic = False
        self.priority_class_name = ""  # the PodGroup's spec.priorityClassName

    @classmethod
    def from_podgroup(cls, pg: Mapping[str, Any], priority_classes: Mapping[str, int]) -> JobInfo:
        obj = describe(pg, "podgroup")
        ns = meta(pg).get("namespace") or "default"
        job = cls(f"{ns}/{require_name(pg, 'podgroup')}", ns, meta(pg)["name"])
        job.set_podgroup(pg, priority_classes, obj)
        return job

    def set_podgroup(self, pg: Mapping[str, Any], classes: Mapping[str, int], obj: str) -> None:
        spec = pg.get("spec") or {}
        self.podgroup = pg
        self.queue = spec.get("queue") or DEFAULT_QUEUE
        self.min_available = as_int(spec.get("minMember"), obj=obj, field="spec.minMember")
        min_res = spec.get("minResources")
        field = "spec.minResources"
        # Unset is not empty: Volcano's enqueue admits a PodGroup without minResources at
        # once, without asking the queue plugins.
        self.min_resources = (
            None
            if min_res is None
            else Resource(parse_resource_list(min_res, obj=obj, field=field))
        )
        self.phase = (pg.get("status") or {}).get("phase") or PG_PENDING
        # As Volcano's cache: the value of the PodGroup's PriorityClass, else the default
        # priority (the global default class, or 0) — never its pods' priorities.
        self.priority_class_name = str(spec.get("priorityClassName") or "")
        self.priority = classes.get(self.priority_class_name, 0)
        self.creation = meta(pg).get("creationTimestamp") or ""

    @classmethod
    def synthetic(cls, task: TaskInfo) -> JobInfo:
        """A pod without a PodGroup: a gang of one, admitted by its own request."""
        job = cls(task.job_id, task.namespace, task.name)
        job.queue = annotations_of(task.pod).get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
        job.min_resources = task.resreq.clone()
        job.priority = task.priority
        job.creation = task.creation
        job.is_synthetic = True
        return job

    def clone(self) -> JobInfo:
        """Copy the job with cloned tasks (sharing pod dicts); run once per job per cycle."""
        job = JobInfo.__new__(JobInfo)
        job.__dict__.update(self.__dict__)
        job.tasks = {uid: t.clone() for uid, t in self.tasks.items()}
        job.index = {}
        for task in job.tasks.values():
            job.index.setdefault(task.status, {})[task.uid] = task
        job.allocated = self.allocated.clone()
        job.nodes_fit_errors, job.job_fit_error = {}, None
        if job.is_synthetic:
            # A pod pipelined by an earlier cycle was admitted then: it stays admitted.
            admitted = PG_INQUEUE if job.pipelined_num() else PG_PENDING
            job.phase = PG_RUNNING if job.ready_task_num() else admitted
        return job

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.index.setdefault(task.status, {})[task.uid] = task
        self._tally(task, 1)
        if allocated_status(task.status):
            self.allocated.add(task.resreq)

    def delete_task(self, task: TaskInfo) -> None:
        old = self.tasks.pop(task.uid, None)
        if old is None:
            return
        self.index.get(old.status, {}).pop(old.uid, None)
        self._tally(old, -1)
        if allocated_status(old.status):
            self.allocated.sub(old.resreq)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        self.delete_task(task)
        task.status = status
        self.add_task(task)

    def _tally(self, task: TaskInfo, delta: int) -> None:
        status = task.status
        self._ready += delta if status in _READY else 0
        self._pipelined += delta if status == TaskStatus.PIPELINED else 0
        self._valid += delta if status in _VALID else 0
        if status == TaskStatus.PENDING and task.best_effort:
            self._best_effort_pending += delta

    def count(self, *statuses: TaskStatus) -> int:
        return sum(len(self.index.get(s, ())) for s in statuses)

    def ready_task_num(self) -> int:
        return self._ready

    def pipelined_num(self) -> int:
        return self._pipelined

    def valid_task_num(self) -> int:
        return self._valid

    def pending_best_effort_num(self) -> int:
        return self._best_effort_pending

    def allocated_or_pipelined(self) -> Resource:
        """What the job holds of its queue: its allocated tasks and, as Sluice persists
        pipeline decisions across cycles and counts them in their queue's allocated figure,
        its pipelined ones. An admitted job's inqueue figure is its minResources beyond this,
        so a pipelined task is counted once (in Volcano it is Pending again at the next
        session, counted in inqueue only)."""
        held = self.allocated.clone()
        for task in self.index.get(TaskStatus.PIPELINED, {}).values():
            held.add(task.resreq)
        return held

    def pending_tasks(self) -> list[TaskInfo]:
        return list(self.index.get(TaskStatus.PENDING, {}).values())

    def is_pending(self) -> bool:
        return self.phase == PG_PENDING

    def get_sch_gated_pod_resources(self) -> Resource:
        """Requests of gated tasks, except those gated only by our gate (Volcano's
        pod scheduling readiness and gate-controlled scheduling designs)."""
        res = Resource()
        for task in self.tasks.values():
            if task.sch_gated and not has_only_volcano_scheduling_gate(task.pod):
                res.add(task.resreq)
        return res

    def deduct_sch_gated_resources(self, res: Resource) -> Resource:
        gated = self.get_sch_gated_pod_resources()
        if gated.is_empty():
            return res
        return res.clone().sub(gated)

    def order_key(self) -> tuple:
        return (self.creation, self.uid)

    def __repr__(self) -> str:
        return f"Job({self.uid} {self.phase} min={self.min_available} tasks={len(self.tasks)})"
