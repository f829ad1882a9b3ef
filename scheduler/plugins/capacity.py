"""capacity: Volcano's capacity plugin (pkg/scheduler/plugins/capacity/capacity.go at
ed72c7c815a9fd547a787134676f73d42e9d049c) — per-queue capability, guarantee and deserved,
flat or hierarchical (``enableHierarchy``, see ``queue_tree``), reclaim within the deserved
share with ``ancestorReclaimLevel`` — with gate reservations (Volcano's gate-controlled
scheduling design) and the deduction of gated pods' resources (Volcano's pod scheduling
readiness design).

Where Sluice differs on purpose:

- A job in a queue that cannot take jobs (a parent queue, a cycle in ``spec.parent``, a missing
  parent) is refused with the reason, and only that queue's jobs are; Volcano stops the whole
  plugin (every queue) for the cycle.
- Gate reservations held in a queue count against its ancestors' capabilities too; Volcano
  counts them in the queue's own check only.
- An allocation updates the share of the queue and of its ancestors; Volcano updates the
  queue's alone until the next cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.job_info import PG_INQUEUE, PG_RUNNING, JobInfo
from scheduler.api.labels import ROOT_QUEUE
from scheduler.api.quantity import CPU, MEMORY, PODS
from scheduler.api.queue_info import QueueInfo
from scheduler.api.report import FIGURES_CAPACITY, FIGURES_HIERARCHY
from scheduler.api.resource import INFINITE, Resource, exceeded_part
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus, allocated_status
from scheduler.plugins.base import Plugin
from scheduler.plugins.gate_reservations import RESERVATION_ARGUMENTS, GateReservations
from scheduler.plugins.queue_tree import QueueAttr, build_flat, build_tree

if TYPE_CHECKING:
    from scheduler.framework.session import Session

# Volcano's minResource: smaller amounts are zero when dimensions are compared.
_MIN = 0.1


class CapacityPlugin(Plugin):
    name = "capacity"
    ARGUMENTS = {**RESERVATION_ARGUMENTS, "ancestorReclaimLevel": 0}
    POSITIVE = frozenset({"reservationTimeout"})
    NON_NEGATIVE_INTEGER = frozenset({"ancestorReclaimLevel"})
    VOLCANO_ONLY = frozenset(
        {"capacity.DynamicResourceAllocationEnable", "capacity.DRAConsumableCapacityEnable"}
    )

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.hierarchy = self.enabled("enableHierarchy")
        # Volcano reads ancestorReclaimLevel always but uses it only with the hierarchy on; a
        # negative level falls back to 0, as Volcano's parseArguments.
        self.ancestor_level = max(0, int(self.argument("ancestorReclaimLevel")))
        total = Resource()
        for node in ssn.nodes.values():
            total.add(node.allocatable)
        build = build_tree if self.hierarchy else build_flat
        self.attrs, self.problems = build(ssn.queues, total)
        levels = {name: frozenset(a.name for a in attr.chain) for name, attr in self.attrs.items()}
        self.gates = GateReservations(self, ssn, lambda q: levels.get(q, (q,)))
        self._account_jobs(ssn)
        self.gates.load(self._room)
        self.gates.expire()
        for attr in self.attrs.values():
            attr.update_share()
        ssn.queue_attrs = self.attrs
        ssn.queue_figures = FIGURES_HIERARCHY if self.hierarchy else FIGURES_CAPACITY
        ssn.queue_problems = dict(self.problems)
        ssn.add_queue_order_fn(self, self._queue_order)
        if self.hierarchy:
            ssn.add_victim_queue_order_fn(self, self._victim_queue_order)
        ssn.add_job_enqueueable_fn(self, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self, self.job_enqueued)
        ssn.add_allocatable_fn(self, self.allocatable)
        ssn.add_event_handler(lambda t: self._on_change(t, +1), lambda t: self._on_change(t, -1))
        ssn.add_cleanup_reservations_fn(self.gates.cleanup)
        ssn.add_unreserve_fn(self.gates.unreserve)
        ssn.add_reclaimable_fn(self, self.reclaimable)
        ssn.add_preemptive_fn(self, self.preemptive)

    def on_session_close(self, ssn: Session) -> None:
        self.gates.report(self.attrs, ssn.jobs.values(), self._job_inqueue)

    # --- order -----------------------------------------------------------------------------

    def _queue_order(self, queue: QueueInfo) -> tuple:
        """Priority first; then the lower share, a queue with a deserved share before a
        best-effort one at equal shares (Volcano's compareShareWithDeserved). With the
        hierarchy, leaves before parents, and Volcano's comparison of two leaves by their
        ancestors."""
        attr = self.attrs.get(queue.name)
        if attr is None:
            return (-queue.priority, 1)
        if not self.hierarchy:
            return (-queue.priority, _share_key(attr))
        if not attr.is_leaf:
            return (-queue.priority, 1, (_share_key(attr),))
        # The path from just below root down to the queue: two leaves compare by their
        # ancestors just below the deepest one they share, then by themselves. Root is common
        # to all and its share moves with every allocation, so it is left out: a key waiting
        # in a heap must not go stale on a figure every queue shares.
        below_root = attr.chain[:-1] if attr.chain[-1].name == ROOT_QUEUE else attr.chain
        return (-queue.priority, 0, tuple(_share_key(a) for a in reversed(below_root)))

    def _victim_queue_order(self, queue: QueueInfo, preemptor: QueueInfo) -> int:
        """Victims of the queue that shares the deeper ancestor with the preemptor's go first
        (Volcano's capacity VictimQueueOrderFn)."""
        mine, theirs = self.attrs.get(preemptor.name), self.attrs.get(queue.name)
        if mine is None or theirs is None:
            return 0
        return _common_depth(theirs, mine)

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
            request = _request(job)
            for attr in chain:  # Volcano's capacity plugin: the ancestors' requests too
                attr.request.add(request)

    def _job_inqueue(self, job: JobInfo) -> Resource:
        if job.min_resources is None:
            return Resource()
        # Volcano's capacity plugin counts the tasks holding node resources (its
        # util.CalculateAllocatedTaskNum: AllocatedStatus), not ReadyTaskNum, which adds the
        # Succeeded ones: a job whose pods finished must not have its room reserved again.
        placed = sum(len(tasks) for status, tasks in job.index.items() if allocated_status(status))
        running_ready = job.phase == PG_RUNNING and placed >= job.min_available
        if job.phase != PG_INQUEUE and not running_ready:
            return Resource()
        wanted = exceeded_part(job.min_resources, job.allocated_or_pipelined())
        return job.deduct_sch_gated_resources(wanted)

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
        dims = _dims(min_req)
        for level in _limiting(attr, dims):
            future = min_req.clone().add(level.allocated).add(level.inqueue).sub(level.elastic)
            short = future.insufficient(level.real_capability, dims)
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
        dims = _dims(task.resreq)
        for level in _limiting(attr, dims):
            reserved = self.gates.held_by_others(level.name, task)
            future = level.allocated.clone().add(reserved).add(task.resreq)
            short = future.insufficient(level.real_capability, dims)
            if short:
                message = _limit_message(level, short, reserved, task)
                return Status(Code.QUEUE_FULL, self.name, message)
        self.gates.reserve_if_opted_in(queue.name, task)
        return SUCCESS

    def _room(self, queue: str, need: Resource) -> bool:
        """The queue and every limiting ancestor hold ``need`` beside what is allocated and
        reserved already (the gate reservations taken up at session open)."""
        attr, status = self._queue_status(queue)
        if attr is None:
            return False
        dims = _dims(need)
        for level in _limiting(attr, dims):
            future = level.allocated.clone().add(self.gates.held_at(level.name)).add(need)
            if future.insufficient(level.real_capability, dims):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        """May ``queue`` reclaim for ``task``? It must be open, stay within its real capability
        (with the room other pods' gate reservations hold), and stay within its deserved share on at least one resource the task requests (or, with
        ``ancestorReclaimLevel``, an ancestor within that many levels must)."""
        attr = self.attrs.get(queue.name)
        if attr is None:
            return Status(Code.QUEUE_INVALID, self.name, f"queue {queue.name} is unknown")
        if not attr.open:
            return Status(Code.QUEUE_CLOSED, self.name, f"queue {queue.name} is not open")
        req = task.resreq
        # Room other pods' gate reservations hold is the queue's already: reclaiming for more
        # would take it from them (the design's race, through reclaim).
        reserved = self.gates.held_by_others(attr.name, task)
        future = attr.allocated.clone().add(reserved).add(req)
        short = future.insufficient(attr.real_capability, _dims(req))
        if short:
            return Status(Code.QUEUE_FULL, self.name, _limit_message(attr, short, reserved, task))
        if _within_partly(future, attr.deserved, req):
            return SUCCESS
        if self.hierarchy:
            for level in range(1, self.ancestor_level + 1):
                if level >= len(attr.chain) or attr.chain[level].name == ROOT_QUEUE:
                    continue
                ancestor = attr.chain[level]
                if _within_partly(ancestor.allocated.clone().add(req), ancestor.deserved, req):
                    return SUCCESS
        message = (
            f"queue {queue.name} would exceed its deserved share on every resource the pod "
            f"requests (allocated {attr.allocated.describe()}, deserved "
            f"{attr.deserved.describe()}, request {req.describe()})"
        )
        return Status(Code.QUEUE_FULL, self.name, message)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Volcano's capacity reclaimable function: in victim order, a candidate is a victim
        when its queue keeps its guarantee without it and either has no deserved share on the
        resources the candidate uses (an immediate victim) or is above its deserved share on
        one of them; with ``ancestorReclaimLevel``, the ancestors it does not share with the
        reclaimer must be above theirs too."""
        reclaimer_job = self.ssn.jobs.get(reclaimer.job_id)
        reclaimer_attr = self.attrs.get(reclaimer_job.queue) if reclaimer_job else None
        if reclaimer_attr is None:
            return []
        levels = self.ancestor_level if self.hierarchy else 0
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for reclaimee in sorted(candidates, key=self.ssn.victim_order_key(reclaimer), reverse=True):
            job = self.ssn.jobs.get(reclaimee.job_id)
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            if not (_names(reclaimee.resreq) & _names(reclaimer.init_resreq)) - {PODS}:
                continue  # nothing the reclaimer needs would be freed
            allocated = allocations.setdefault(attr.name, attr.allocated.clone())
            if not attr.guarantee.less_equal(allocated.clone().sub(reclaimee.resreq)):
                continue  # its queue would fall below its guarantee
            if not _has_relevant_deserved(reclaimee, attr.deserved):
                if (
                    levels
                    and _share_ancestor(reclaimer_attr, attr, levels)
                    and not _has_relevant_deserved(reclaimer, reclaimer_attr.deserved)
                ):
                    continue  # no contention between the two under their shared ancestor
            elif not _greater_partly(allocated, attr, reclaimee.resreq):
                continue
            ancestors: list[Resource] = []
            eligible = True
            for level in range(1, levels + 1):
                ancestor = _reclaimee_ancestor(reclaimer_attr, attr, level)
                if ancestor is None:
                    continue
                held = allocations.setdefault(ancestor.name, ancestor.allocated.clone())
                ancestors.append(held)
                if not _has_relevant_deserved(reclaimee, ancestor.deserved):
                    continue
                if not _greater_partly(held, ancestor, reclaimee.resreq):
                    eligible = False
                    break
            if not eligible:
                continue
            allocated.sub(reclaimee.resreq)
            for held in ancestors:
                held.sub(reclaimee.resreq)
            victims.append(reclaimee)
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
            level.update_share()


def _request(job: JobInfo) -> Resource:
    """Volcano's capacity ``attr.request`` of one job: its allocated-status tasks (and
    pipelined ones, which Sluice counts as allocated) and its pending ones."""
    request = Resource()
    for status, tasks in job.index.items():
        if allocated_status(status) or status in (TaskStatus.PIPELINED, TaskStatus.PENDING):
            for task in tasks.values():
                request.add(task.resreq)
    return request


def _share_key(attr: QueueAttr) -> tuple[float, int]:
    return (attr.share, 0 if attr.has_deserved else 1)


def _names(r: Resource) -> set[str]:
    """Volcano's ResourceNames: the dimensions of at least minResource."""
    return {k for k, v in r.values.items() if v >= _MIN}


def _dims(req: Resource) -> set[str]:
    """The requested dimensions a queue limit compares (pods are never a queue limit)."""
    return {k for k, v in req.values.items() if v > 0 and k != PODS}


def _limiting(attr: QueueAttr, dims: set[str]) -> list[QueueAttr]:
    """The queue and its ancestors, less those unlimited on every dimension in ``dims`` (an
    unset root, typically: it cannot refuse, so it is not asked)."""
    return [
        level
        for level in attr.chain
        if not all(level.real_capability.get(k) == INFINITE for k in dims)
    ]


def _has_relevant_deserved(task: TaskInfo, deserved: Resource) -> bool:
    """Volcano's hasRelevantDeserved: the task's request (which counts a pod slot) and the
    deserved share name a dimension in common."""
    return bool((_names(task.resreq) | {PODS}) & _names(deserved))


def _within_partly(used: Resource, deserved: Resource, req: Resource) -> bool:
    """Volcano's LessEqualPartlyWithDimensionZeroFiltered: on some dimension the request
    names (and ``used`` or ``deserved`` is not zero), ``used`` is within ``deserved``."""
    for k in _dims(req):
        if used.get(k) < _MIN and deserved.get(k) < _MIN:
            continue
        if used.get(k) < deserved.get(k) or abs(used.get(k) - deserved.get(k)) < _MIN:
            return True
    return False


def _greater_partly(allocated: Resource, attr: QueueAttr, req: Resource) -> bool:
    """Volcano's GreaterPartlyWithRelevantDimensions: above the deserved share on a dimension
    the request names and the deserved share has (CPU and memory when not zero, any other
    resource when the spec names it, even at zero)."""
    deserved = attr.deserved
    for k in _dims(req):
        if k in (CPU, MEMORY):
            relevant = deserved.get(k) >= _MIN
        else:
            relevant = k in deserved.values or k in attr.deserved_declared
        if relevant and allocated.get(k) > deserved.get(k):
            return True
    return False


def _common_depth(a: QueueAttr, b: QueueAttr) -> int:
    """Volcano's getQueueLevel: the index (root 0) of the deepest ancestor both share."""
    level = 0
    for i, (x, y) in enumerate(zip(reversed(a.ancestors), reversed(b.ancestors), strict=False)):
        if x is not y:
            break
        level = i
    return level


def _ancestor_at(attr: QueueAttr, depth: int) -> QueueAttr | None:
    """Volcano's queueAncestorAtDepth: 1 is the parent."""
    return attr.chain[depth] if depth < len(attr.chain) else None


def _share_ancestor(a: QueueAttr, b: QueueAttr, levels: int) -> bool:
    """Volcano's sharesAnyNonRootAncestorWithinLevel."""
    mine = {x.name for d in range(1, levels + 1) if (x := _ancestor_at(a, d)) is not None}
    theirs = {x.name for d in range(1, levels + 1) if (x := _ancestor_at(b, d)) is not None}
    return bool((mine & theirs) - {ROOT_QUEUE})


def _reclaimee_ancestor(reclaimer: QueueAttr, reclaimee: QueueAttr, level: int) -> QueueAttr | None:
    """Volcano's getReclaimeeAncestorToCheck: the reclaimee's ancestor at ``level`` unless it
    is root or the reclaimer's ancestor at the same level."""
    ancestor = _ancestor_at(reclaimee, level)
    if ancestor is None or ancestor.name == ROOT_QUEUE:
        return None
    mine = _ancestor_at(reclaimer, level)
    if mine is not None and mine.name == ancestor.name:
        return None
    return ancestor


def _elastic(job: JobInfo) -> Resource:
    if job.min_resources is None:
        return Resource()
    return exceeded_part(job.allocated, job.min_resources)


def _limit_message(level: QueueAttr, short: list[str], reserved: Resource, task: TaskInfo) -> str:
    dims = ", ".join(short)
    return (
        f"queue {level.name} capability exceeded: insufficient {dims} "
        f"(allocated {level.allocated.describe()}; reserved {reserved.describe()}; "
        f"request {task.resreq.describe()}; capability {level.real_capability.describe()})"
    )


__all__ = ["CapacityPlugin"]
