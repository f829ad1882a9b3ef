"""proportion: Volcano's default queue plugin (``pkg/scheduler/plugins/proportion/
proportion.go`` at Volcano commit ed72c7c815a9fd547a787134676f73d42e9d049c), with Sluice's gate
reservations.

Every queue with jobs deserves a share of the cluster by weight, capped by its real capability
(the cluster less the other queues' guarantees, within its capability) and by what its jobs
request, and at least its guarantee (``proportion_shares.fill_deserved``). Queues go in
priority order, then lowest share (allocated / deserved) first. A queue is overused once its
allocation reaches its deserved share; a task is allocatable while the queue stays within it;
a job is admitted while its minResources, with what the queue holds and has admitted, stays
within the real capability; reclaim may take from queues above their deserved share, for a
queue that stays within its own. Queues are flat: ``spec.parent`` plays no part.

Gate reservations (``gate_reservations``): Volcano does not hold the room a gate-removal
check saw for proportion yet (issue #5271); Sluice does, as its capacity plugin does — an
opted-in pod whose gate was removed holds its request in its queue's deserved share until it
binds. Arguments: ``gateReservation`` (default true) and ``reservationTimeout`` (seconds).

Where Sluice differs: a pipelined task persisted by an earlier cycle (Sluice's pipeline cache
persistence) counts in its queue's allocated and request, as a task pipelined in the cycle
does through the allocate event; Volcano sees no such task at session open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.job_info import PG_INQUEUE, PG_RUNNING, JobInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.report import FIGURES_PROPORTION
from scheduler.api.resource import Resource, exceeded_part
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus, allocated_status
from scheduler.plugins.base import Plugin
from scheduler.plugins.gate_reservations import RESERVATION_ARGUMENTS, GateReservations
from scheduler.plugins.proportion_shares import (
    ProportionAttr,
    exceeds,
    fill_deserved,
    insufficient,
    queue_share,
    real_capability,
)

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class ProportionPlugin(Plugin):
    name = "proportion"
    ARGUMENTS = RESERVATION_ARGUMENTS
    POSITIVE = frozenset({"reservationTimeout"})

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.gates = GateReservations(self, ssn)
        total = _total(ssn)
        self.attrs = _queue_attrs(ssn, total)
        self._account_jobs(ssn)
        with_jobs = {job.queue for job in ssn.jobs.values()} & set(self.attrs)
        fill_deserved([self.attrs[q] for q in sorted(with_jobs)], total)
        self.gates.load(self._room)
        self.gates.expire()
        ssn.queue_attrs = dict(self.attrs)
        ssn.queue_figures = FIGURES_PROPORTION
        ssn.add_queue_order_fn(self, lambda q: (-q.priority, self._share(q.name)))
        ssn.add_reclaimable_fn(self, self.reclaimable)
        ssn.add_overused_fn(self, self.overused)
        ssn.add_allocatable_fn(self, self.allocatable)
        ssn.add_preemptive_fn(self, self.preemptive)
        ssn.add_job_enqueueable_fn(self, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self, self.job_enqueued)
        ssn.add_event_handler(lambda t: self._on_change(t, +1), lambda t: self._on_change(t, -1))
        ssn.add_cleanup_reservations_fn(self.gates.cleanup)
        ssn.add_unreserve_fn(self.gates.unreserve)

    def on_session_close(self, ssn: Session) -> None:
        self.gates.report(self.attrs, ssn.jobs.values(), _job_inqueue)

    def _share(self, name: str) -> float:
        attr = self.attrs.get(name)
        return attr.share if attr is not None else 0.0

    # --- figures ---------------------------------------------------------------------------

    def _account_jobs(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue  # the cache keeps jobs of unknown queues out of the session
            for status, tasks in job.index.items():
                # A pipelined task persisted by an earlier cycle holds its share, as one
                # pipelined in this cycle does (the allocate event).
                placed = allocated_status(status) or status == TaskStatus.PIPELINED
                if not placed and status != TaskStatus.PENDING:
                    continue
                for task in tasks.values():
                    attr.request.add(task.resreq)
                    if placed:
                        attr.allocated.add(task.resreq)
            attr.inqueue.add(_job_inqueue(job))
            attr.elastic.add(exceeded_part(job.allocated, job.min_resources or Resource()))

    # --- checks ----------------------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        """Allocated has reached the deserved share in every dimension it has."""
        attr = self.attrs.get(queue.name)
        return attr is not None and attr.deserved.less_equal(attr.allocated)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status:
        """The task fits the queue's deserved share, beside the other pods' reservations."""
        attr, status = self._open_queue(queue)
        if attr is None:
            return status
        reserved = self.gates.held_by_others(queue.name, task)
        future = attr.allocated.clone().add(reserved).add(task.resreq)
        short = exceeds(future, attr.deserved, task.resreq)
        if short:
            message = (
                f"queue {queue.name} deserved share exceeded: insufficient {', '.join(short)} "
                f"(allocated {attr.allocated.describe()}; reserved {reserved.describe()}; "
                f"request {task.resreq.describe()}; deserved {attr.deserved.describe()})"
            )
            return Status(Code.QUEUE_FULL, self.name, message)
        self.gates.reserve_if_opted_in(queue.name, task)
        return SUCCESS

    def _room(self, queue: str, need: Resource) -> bool:
        """The queue's deserved share holds ``need`` beside what is allocated and reserved."""
        attr = self.attrs.get(queue)
        if attr is None:
            return False
        future = attr.allocated.clone().add(self.gates.held_at(queue)).add(need)
        return not exceeds(future, attr.deserved, need)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        """The queue may reclaim for ``task`` while it stays within its deserved share, beside
        the room other pods' gate reservations hold in it."""
        attr, status = self._open_queue(queue)
        if attr is None:
            return status
        reserved = self.gates.held_by_others(queue.name, task)
        future = attr.allocated.clone().add(reserved).add(task.resreq)
        short = exceeds(future, attr.deserved, task.resreq)
        if short:
            message = (
                f"queue {queue.name} would exceed its deserved share ({', '.join(short)}: "
                f"allocated {attr.allocated.describe()}, reserved {reserved.describe()}, "
                f"deserved {attr.deserved.describe()})"
            )
            return Status(Code.QUEUE_FULL, self.name, message)
        return SUCCESS

    def _open_queue(self, queue: QueueInfo) -> tuple[ProportionAttr | None, Status]:
        if not queue.is_open():
            return None, Status(Code.QUEUE_CLOSED, self.name, f"queue {queue.name} is not open")
        attr = self.attrs.get(queue.name)
        if attr is None:
            return None, Status(Code.QUEUE_INVALID, self.name, f"queue {queue.name} is unknown")
        return attr, SUCCESS

    def job_enqueueable(self, job: JobInfo) -> Status:
        """minResources, with what the queue holds and has admitted (less the elastic part
        of its jobs), within the queue's real capability — which, without a capability, is
        what the cluster has beyond the other queues' guarantees."""
        queue = self.ssn.queues[job.queue]
        attr, status = self._open_queue(queue)
        if attr is None:
            return status
        min_req = job.min_resources
        if min_req is None:
            return SUCCESS
        future = min_req.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
        short = exceeds(future, attr.real_capability, min_req)
        if short:
            message = insufficient("queue resource quota insufficient", "insufficient", short)
            return Status(Code.QUEUE_FULL, self.name, message)
        return SUCCESS

    def job_enqueued(self, job: JobInfo) -> None:
        if job.min_resources is None or job.queue not in self.attrs:
            return
        # Gated pods' resources do not count, so they do not keep other jobs out (Volcano's
        # pod scheduling readiness design).
        self.attrs[job.queue].inqueue.add(job.deduct_sch_gated_resources(job.min_resources))

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims from queues allocated above their deserved share, one after another until
        the queue is back within it."""
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for task in candidates:
            job = self.ssn.jobs.get(task.job_id)
            attr = self.attrs.get(job.queue) if job is not None else None
            if job is None or attr is None:
                continue
            allocated = allocations.setdefault(job.queue, attr.allocated.clone())
            if not allocated.less_equal(attr.deserved):
                allocated.sub(task.resreq)
                victims.append(task)
        return victims

    def _on_change(self, task: TaskInfo, sign: int) -> None:
        # Pipelined tasks count too, as Volcano's Pipeline fires the allocate event.
        job = self.ssn.jobs.get(task.job_id)
        attr = self.attrs.get(job.queue) if job is not None else None
        if job is None or attr is None:
            return
        self.gates.on_change(job.queue, task, sign)
        if sign > 0:
            attr.allocated.add(task.resreq)
        else:
            attr.allocated.sub(task.resreq)
        attr.share = queue_share(attr.allocated, attr.deserved)


def _queue_attrs(ssn: Session, total: Resource) -> dict[str, ProportionAttr]:
    """Every queue's attributes (Volcano builds them for queues with jobs only; the others
    get theirs here for the report, and take no part in the water-filling)."""
    total_guarantee = Resource()
    for queue in ssn.queues.values():
        total_guarantee.add(queue.guarantee)
    attrs = {}
    for name, q in sorted(ssn.queues.items()):
        attr = ProportionAttr(name, q.parent, q.guarantee.clone(), Resource(), q.capability)
        attr.weight, attr.open, attr.chain = q.weight, q.is_open(), []
        attr.chain.append(attr)  # flat: a queue's figures are its own
        attr.real_capability = real_capability(total, total_guarantee, attr)
        attrs[name] = attr
    return attrs


def _total(ssn: Session) -> Resource:
    """Volcano's ssn.TotalResource: every node's allocatable (Volcano's snapshot counts a node
    whatever its conditions)."""
    total = Resource()
    for node in ssn.nodes.values():
        total.add(node.allocatable)
    return total


def _job_inqueue(job: JobInfo) -> Resource:
    """What an admitted job's minResources still claims beyond its allocation: an Inqueue
    job's, and a Running job's whose allocated tasks reach minMember (Volcano: a completed
    Spark driver must not have its job's room reserved again)."""
    if job.min_resources is None:
        return Resource()
    placed = sum(len(tasks) for status, tasks in job.index.items() if allocated_status(status))
    if job.phase != PG_INQUEUE and not (job.phase == PG_RUNNING and placed >= job.min_available):
        return Resource()
    wanted = exceeded_part(job.min_resources, job.allocated_or_pipelined())
    return job.deduct_sch_gated_resources(wanted)


__all__ = ["ProportionPlugin"]
