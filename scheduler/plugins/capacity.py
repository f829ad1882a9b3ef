"""capacity: Volcano's capacity plugin — per-queue capability, guarantee and deserved,
hierarchical, with gate reservations (Volcano's gate-controlled scheduling design) and the
deduction of gated pods' resources (Volcano's pod scheduling readiness design)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.job_info import PG_INQUEUE, PG_RUNNING, JobInfo
from scheduler.api.labels import ROOT_QUEUE
from scheduler.api.queue_info import QueueInfo
from scheduler.api.resource import Resource, exceeded_part, res_max, share
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.plugins.base import Plugin
from scheduler.plugins.gate_reservations import RESERVATION_ARGUMENTS, GateReservations
from scheduler.plugins.queue_tree import QueueAttr, build_tree

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class CapacityPlugin(Plugin):
    name = "capacity"
    ARGUMENTS = RESERVATION_ARGUMENTS
    VOLCANO_ONLY = frozenset(
        {"ancestorReclaimLevel", "capacity.DynamicResourceAllocationEnable",
         "capacity.DRAConsumableCapacityEnable"}
    )  # fmt: skip

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.gates = GateReservations(self, ssn)
        self.attrs, self.problems = build_tree(ssn.queues)
        self._account_jobs(ssn)
        self.gates.load()
        self.gates.expire()
        self._compute_capabilities(ssn)
        ssn.queue_attrs = self.attrs
        ssn.add_queue_order_fn(self, lambda q: (-q.priority, self._share(q.name)))
        ssn.add_job_enqueueable_fn(self, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self, self.job_enqueued)
        ssn.add_allocatable_fn(self, self.allocatable)
        ssn.add_event_handler(lambda t: self._on_change(t, +1), lambda t: self._on_change(t, -1))
        ssn.add_cleanup_reservations_fn(self.gates.cleanup)
        ssn.add_reclaimable_fn(self, self.reclaimable)
        ssn.add_preemptive_fn(self, self.preemptive)

    def on_session_close(self, ssn: Session) -> None:
        self.gates.report(self.attrs, ssn.jobs.values(), self._job_inqueue)

    def _share(self, name: str) -> float:
        attr = self.attrs.get(name)
        return attr.share if attr is not None else 0.0

    # --- figures ---------------------------------------------------------------------------

    def _account_jobs(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            chain = self.attrs[job.queue].chain if job.queue in self.attrs else []
            inqueue, elastic = self._job_inqueue(job), _elastic(job)
            for attr in chain:
                attr.allocated.add(job.allocated)
                attr.inqueue.add(inqueue)
                attr.elastic.add(elastic)
            for task in job.index.get(TaskStatus.PIPELINED, {}).values():
                # A persisted pipeline decision holds its share of the queue, as a task
                # pipelined during the cycle does.
                for attr in chain:
                    attr.allocated.add(task.resreq)

    def _job_inqueue(self, job: JobInfo) -> Resource:
        if job.min_resources is None:
            return Resource()
        running_ready = job.phase == PG_RUNNING and job.ready_task_num() >= job.min_available
        if job.phase != PG_INQUEUE and not running_ready:
            return Resource()
        wanted = exceeded_part(job.min_resources, job.allocated)
        return job.deduct_sch_gated_resources(wanted)

    def _compute_capabilities(self, ssn: Session) -> None:
        total = Resource()
        for node in ssn.nodes.values():
            total.add(node.allocatable)
        for attr in self.attrs.values():  # parents before children
            if attr.parent is None:
                base, guarantees = total, Resource()
            else:
                parent = self.attrs[attr.parent]
                base, guarantees = parent.real_capability, parent.children_guarantee
            real = exceeded_part(base, guarantees).add(attr.guarantee)
            attr.real_capability = _cap(real, attr.capability)
            deserved = _cap(attr.deserved, attr.real_capability)
            attr.deserved = res_max(deserved, attr.guarantee)
            attr.share = share(attr.allocated, attr.deserved)

    # --- checks ----------------------------------------------------------------------------

    def _queue_status(self, name: str) -> tuple[QueueAttr | None, Status]:
        """The queue's attributes, or why no job can use it."""
        if name in self.problems:
            return None, Status(Code.QUEUE_INVALID, self.name, self.problems[name])
        attr = self.attrs.get(name)
        if attr is None or not attr.is_leaf:
            return None, Status(Code.QUEUE_INVALID, self.name, f"queue {name} is not a leaf queue")
        if not attr.open:
            return None, Status(Code.QUEUE_CLOSED, self.name, f"queue {name} is not open")
        return attr, SUCCESS

    def job_enqueueable(self, job: JobInfo) -> Status:
        attr, status = self._queue_status(job.queue)
        if attr is None:
            return status
        min_req = job.min_resources
        if min_req is None or min_req.is_empty():
            return SUCCESS
        for level in _quota_levels(attr):
            future = min_req.clone().add(level.allocated).add(level.inqueue).sub(level.elastic)
            short = future.insufficient(level.real_capability, min_req.names())
            if short:
                where = "" if level is attr else f" (parent queue {level.name})"
                message = (
                    f"queue resource quota insufficient: insufficient {', '.join(short)}{where}"
                )
                return Status(Code.QUEUE_FULL, self.name, message)
        return SUCCESS

    def job_enqueued(self, job: JobInfo) -> None:
        if job.min_resources is None or job.queue not in self.attrs:
            return
        added = job.deduct_sch_gated_resources(job.min_resources)
        for level in self.attrs[job.queue].chain:
            level.inqueue.add(added)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status:
        attr, status = self._queue_status(queue.name)
        if attr is None:
            return status
        reserved = self.gates.held_by_others(queue.name, task)
        for level in _quota_levels(attr):
            future = level.allocated.clone().add(reserved).add(task.resreq)
            short = future.insufficient(level.real_capability, task.resreq.names())
            if short:
                message = _limit_message(level, short, reserved, task)
                return Status(Code.QUEUE_FULL, self.name, message)
        self.gates.reserve_if_opted_in(queue.name, task)
        return SUCCESS

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        """A queue may reclaim for ``task`` only while it stays within its deserved share."""
        attr = self.attrs.get(queue.name)
        if attr is None:
            return Status(Code.QUEUE_INVALID, self.name, f"queue {queue.name} is unknown")
        future = attr.allocated.clone().add(task.resreq)
        over = [d for d in task.resreq.names() & attr.deserved.names()
                if future.get(d) > attr.deserved.get(d) + 1e-9]  # fmt: skip
        if over:
            message = (
                f"queue {queue.name} would exceed its deserved share ({', '.join(sorted(over))}: "
                f"allocated {attr.allocated.describe()}, deserved {attr.deserved.describe()})"
            )
            return Status(Code.QUEUE_FULL, self.name, message)
        return SUCCESS

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims from queues above their deserved share, while they stay at or above it in
        some resource (Volcano's capacity reclaimable function)."""
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for task in candidates:
            queue = self.ssn.jobs[task.job_id].queue
            attr = self.attrs.get(queue)
            if attr is None or not attr.deserved.names():
                continue  # no deserved share set: nothing is "above" it
            allocated = allocations.setdefault(queue, attr.allocated.clone())
            if allocated.less_equal(attr.deserved, attr.deserved.names()):
                continue  # not above its deserved share
            if any(allocated.get(d) < reclaimer.resreq.get(d) for d in reclaimer.resreq.names()):
                continue
            left = allocated.clone().sub(task.resreq)
            if not any(attr.deserved.get(d) <= left.get(d) for d in attr.deserved.names()):
                continue  # taking it would push the queue below its deserved share
            allocated.sub(task.resreq)
            victims.append(task)
        return victims

    def _on_change(self, task: TaskInfo, sign: int) -> None:
        # Pipelined tasks count too, as Volcano's Pipeline fires the allocate event.
        job = self.ssn.jobs.get(task.job_id)
        if job is None or job.queue not in self.attrs:
            return
        self.gates.on_change(job.queue, task, sign)
        for level in self.attrs[job.queue].chain:
            if sign > 0:
                level.allocated.add(task.resreq)
            else:
                level.allocated.sub(task.resreq)
            level.share = share(level.allocated, level.deserved)


def _quota_levels(attr: QueueAttr) -> list[QueueAttr]:
    """The queue and its ancestors that carry a quota. The implicit root's only limit is the
    cluster's size: a full cluster is the nodes' business (allocate, reclaim, the autoscaler),
    never a reason to refuse a workload its queue has room for."""
    return [
        level for level in attr.chain if level.name != ROOT_QUEUE or level.capability is not None
    ]


def _elastic(job: JobInfo) -> Resource:
    if job.min_resources is None:
        return Resource()
    return exceeded_part(job.allocated, job.min_resources)


def _cap(value: Resource, capability: Resource | None) -> Resource:
    if capability is None:
        return value.clone()
    return Resource(
        {
            k: min(v, capability.get(k)) if k in capability.values else v
            for k, v in value.values.items()
        }
    )


def _limit_message(level: QueueAttr, short: list[str], reserved: Resource, task: TaskInfo) -> str:
    dims = ", ".join(short)
    return (
        f"queue {level.name} capability exceeded: insufficient {dims} "
        f"(allocated {level.allocated.describe()}; reserved {reserved.describe()}; "
        f"request {task.resreq.describe()}; capability {level.real_capability.describe()})"
    )


__all__ = ["CapacityPlugin"]
