"""Gate reservations, shared by the queue plugins (capacity, proportion).

Volcano's gate-controlled scheduling design lets a pod that opted in
(``scheduling.volcano.sh/queue-allocation-gate: "true"``) keep its scheduling gate until its
queue has room; the allocate action removes the gate when the queue plugin's ``allocatable``
passes. Between that moment and the pod's bind, nothing in Volcano holds the room the check
saw, so another pod can take it and the ungated pod waits on a full queue (the design's race;
Volcano has not closed it for proportion yet, issue #5271). Sluice closes it: a pod whose
check passed holds its request in its queue — a *reservation* — until it binds, is deleted,
or has held it longer than ``reservationTimeout`` seconds (Volcano's reservations would never
expire; a pod that never finds a node would hold its queue forever).

A queue plugin keeps one ``GateReservations`` per session: ``load`` and ``expire`` at session
open, ``held_by_others`` and ``reserve`` in its allocatable check, ``on_change`` from its event
handlers (an allocation holds the share instead of the reservation, never both),
``cleanup`` as the session's cleanup-reservations function, ``unreserve`` when a gate removal
is taken back, and ``report`` at session close. A reservation's start is written on the pod
with the gate removal (``sluice.io/queue-reservation-since``), so a restarted scheduler, or a
second one taking over, takes it up from the pod itself; ``ssn.reservations`` keeps the start
times this process saw (and the expired ones, None) between cycles.

A queue's check counts the reservations of the queue and, at each ancestor, of every queue
under it: a reservation in one child holds its parent's capability against a sibling.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from scheduler.api.helpers import (
    has_only_volcano_scheduling_gate,
    has_queue_allocation_gate_annotation,
    reservation_since,
)
from scheduler.api.job_info import JobInfo
from scheduler.api.quantity import CPU, MEMORY
from scheduler.api.resource import Resource, res_min
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.plugins.base import Plugin
from scheduler.plugins.queue_tree import QueueAttr

if TYPE_CHECKING:
    from scheduler.framework.session import Session
    from scheduler.framework.statement import Statement

# A reservation dated later than this after the scheduler's clock was not written by Sluice
# (which stamps its own clock's time); anyone who can create pods can write the annotation.
CLOCK_SKEW = 60.0
RESERVATION_TIMEOUT = 900.0  # seconds: Cluster Autoscaler's default max node provision time
# The arguments of every queue plugin that keeps gate reservations.
RESERVATION_ARGUMENTS = {"gateReservation": True, "reservationTimeout": RESERVATION_TIMEOUT}


class GateReservations:
    def __init__(
        self,
        plugin: Plugin,
        ssn: Session,
        levels_of: Callable[[str], Collection[str]] | None = None,
    ) -> None:
        self.ssn = ssn
        self.enabled = plugin.flag("gateReservation")
        self.timeout = plugin.argument("reservationTimeout")
        # queue -> the names whose checks its reservations count in (itself, its ancestors)
        self.levels_of = levels_of or (lambda queue: (queue,))
        self.reserved: dict[str, dict[str, TaskInfo]] = {}  # queue -> gate-reserved tasks
        self.placed: dict[str, TaskInfo] = {}  # reserved tasks placed in this session

    # --- session open ----------------------------------------------------------------------

    def load(self, room: Callable[[str, Resource], bool]) -> None:
        """Take up the reservations of earlier cycles (Volcano's design rebuilds them at session
        open): an opted-in pod that passed its check, had its gate removed and is still
        pending. Only a pass Sluice recorded counts — on the pod, or seen by this process — so
        an opted-in pod that was never gated (created while the webhook was away) does not hold
        its queue unchecked, and a date Sluice cannot have written (in the future) is no pass.

        A reservation holds room its queue has: since the pass, the capability may have been
        lowered, the gang may have lost members, or gate removals queued before a restart may
        have landed after other pods were let through. So the reservations are taken up job by
        job, the oldest first, each job only if its queue (``room``: at every level) still
        holds what it reserves plus what its gang still needs to reach its minimum. A job that
        no longer fits holds nothing: its pods compete for the queue as any other pod, and it
        never blocks the queue it overflows."""
        ssn = self.ssn
        claims = []
        for job in ssn.jobs.values():
            tasks = [task for task in job.index.get(TaskStatus.PENDING, {}).values()
                     if self._recorded_pass(task)]  # fmt: skip
            if tasks:
                since = min(ssn.reservations[t.uid] or ssn.now for t in tasks)
                claims.append((since, -job.priority, job.creation, job.uid, job, tasks))
        for *_, job, tasks in sorted(claims, key=lambda c: c[:4]):
            if room(job.queue, _still_needed(job, tasks)):
                for task in tasks:
                    self.reserve(job.queue, task)

    def _recorded_pass(self, task: TaskInfo) -> bool:
        """Sluice let ``task`` through its queue and it still waits: a reservation, unless it
        expired (None in ``ssn.reservations``)."""
        ssn = self.ssn
        if not has_queue_allocation_gate_annotation(task.pod):
            return False
        if task.sch_gated and not (
            has_only_volcano_scheduling_gate(task.pod) and reservation_since(task.pod) is not None
        ):
            return False  # gated, and no removal of ours on its way (stamped ahead of it)
        if task.uid not in ssn.reservations:
            since = reservation_since(task.pod)
            if since is None or since > ssn.now + CLOCK_SKEW:
                return False
            ssn.reservations[task.uid] = since
        return ssn.reservations[task.uid] is not None

    def held_at(self, level: str) -> Resource:
        """What reservations count against ``level`` now."""
        return self.held_by_others(level, None)

    def expire(self) -> None:
        """Forget reservations of pods that are gone, and release those held too long."""
        ssn = self.ssn
        live = {uid for tasks in self.reserved.values() for uid in tasks}
        pending = {
            t.uid for j in ssn.jobs.values() for t in j.index.get(TaskStatus.PENDING, {}).values()
        }
        for uid in [u for u in ssn.reservations if u not in live and u not in pending]:
            del ssn.reservations[uid]  # bound, deleted or gone: forget it
        for queue, tasks in self.reserved.items():
            for task in list(tasks.values()):
                since = ssn.reservations[task.uid]
                if since is None or ssn.now - since < self.timeout:
                    continue  # None: released earlier, reserve never takes it again
                del tasks[task.uid]
                ssn.reservations[task.uid] = None
                self._notify_expired(queue, task, ssn.now - since)

    def _notify_expired(self, queue: str, task: TaskInfo, held: float) -> None:
        message = (
            f"reservation of {task.resreq.describe()} in queue {queue} released after "
            f"{_duration(held)} without a node (limit {_duration(self.timeout)})"
        )
        self.ssn.notices.append(f"pod {task.namespace}/{task.name}: {message}")
        self.ssn.writer.event(task.pod, "Warning", "QueueReservationExpired", message)

    # --- the allocatable check ---------------------------------------------------------------

    def held_by_others(self, level: str, task: TaskInfo | None) -> Resource:
        """What reservations count against ``level`` (a queue, or an ancestor of queues) for
        pods other than ``task``."""
        held = Resource()
        for queue, tasks in self.reserved.items():
            if not tasks or level not in self.levels_of(queue):
                continue
            for other in tasks.values():
                if task is None or other.uid != task.uid:
                    held.add(other.resreq)
        return held

    def reserve_if_opted_in(self, queue: str, task: TaskInfo) -> None:
        """The queue had room for ``task``: an opted-in pod keeps it until it binds."""
        if has_queue_allocation_gate_annotation(task.pod):
            self.reserve(queue, task)

    def reserve(self, queue: str, task: TaskInfo) -> None:
        if not self.enabled:
            return
        since = self.ssn.reservations.setdefault(task.uid, self.ssn.now)
        if since is not None:  # an expired reservation (None) is never taken again
            self.reserved.setdefault(queue, {})[task.uid] = task

    def unreserve(self, task: TaskInfo) -> None:
        """The gate removal that came with this reservation was taken back, or its gang no
        longer fits its queue: the pod holds nothing."""
        for tasks in self.reserved.values():
            tasks.pop(task.uid, None)
        self.placed.pop(task.uid, None)
        self.ssn.reservations.pop(task.uid, None)

    # --- events ----------------------------------------------------------------------------

    def on_change(self, queue: str, task: TaskInfo, sign: int) -> None:
        """A reserved task that is placed holds its share through its allocation instead;
        undone, it holds it through its reservation again (never both, never neither)."""
        held = self.reserved.setdefault(queue, {})
        if sign > 0 and task.uid in held:
            self.placed[task.uid] = held.pop(task.uid)
        elif sign < 0 and task.uid in self.placed:
            held[task.uid] = self.placed.pop(task.uid)

    def cleanup(self, statement: Statement) -> None:
        """Allocations about to be committed end their reservations for good."""
        for task in statement.allocated_tasks():
            self.placed.pop(task.uid, None)
            for tasks in self.reserved.values():
                tasks.pop(task.uid, None)

    # --- session close ---------------------------------------------------------------------

    def report(
        self,
        attrs: Mapping[str, QueueAttr],
        jobs: Iterable[JobInfo],
        inqueue_of: Callable[[JobInfo], Resource],
    ) -> None:
        """The report's figures per queue, each summed up the hierarchy (``attr.chain``).

        inqueue is recomputed: within a cycle an admitted job's minResources and its new
        allocations both count (as in Volcano); at the end only the unmet part does.
        ``reserved`` sums the gate reservations left after the cycle, and ``inqueue_reserved``
        is the part of inqueue they already hold: an admitted job whose ungated pods wait for
        a node counts in both figures (the enqueue check reads one, the allocatable check the
        other), and a display must not add them."""
        for attr in attrs.values():
            attr.inqueue, attr.reserved, attr.inqueue_reserved = Resource(), Resource(), Resource()
        reserved_by_job: dict[str, Resource] = {}
        for queue, tasks in self.reserved.items():
            chain = attrs[queue].chain if queue in attrs else []
            for task in tasks.values():
                reserved_by_job.setdefault(task.job_id, Resource()).add(task.resreq)
                for attr in chain:
                    attr.reserved.add(task.resreq)
        for job in jobs:
            if job.queue in attrs:
                inqueue = inqueue_of(job)
                held = res_min(inqueue, reserved_by_job.get(job.uid, Resource()))
                for attr in attrs[job.queue].chain:
                    attr.inqueue.add(inqueue)
                    attr.inqueue_reserved.add(held)


def _still_needed(job: JobInfo, reserved: list[TaskInfo]) -> Resource:
    """What ``job`` needs of its queue to reach its minimum: the reserved tasks, and as many
    of its other pending tasks (the smallest first) as its gang still lacks."""
    need = Resource()
    for task in reserved:
        need.add(task.resreq)
    lacking = job.min_available - job.ready_task_num() - job.pipelined_num() - len(reserved)
    if lacking > 0:
        held = {t.uid for t in reserved}
        others = sorted((t for t in job.pending_tasks() if t.uid not in held),
                        key=lambda t: (t.resreq.get(CPU), t.resreq.get(MEMORY)))  # fmt: skip
        for task in others[:lacking]:
            need.add(task.resreq)
    return need


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


__all__ = ["RESERVATION_ARGUMENTS", "RESERVATION_TIMEOUT", "GateReservations"]
