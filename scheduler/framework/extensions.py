"""The Session's extension points: what plugins register in ``on_session_open``, and how the
session combines their answers — Volcano's ``session_plugins.go``, point by point.

A plugin registers through ``ssn.add_<point>(plugin, fn)``; a point its configuration switches
off (``enablePreemptable: false``…) is not registered at all. Answers combine as in Volcano:

* orders: the first plugin (in tier order) that tells two items apart decides; then creation
  time, then UID;
* job ready, allocatable, preemptive: every plugin must agree; overused: any plugin;
* job pipelined and job enqueueable: tier by tier, a Reject ends it; a tier where some plugin
  Permits (and none rejects) decides; plugins that abstain leave it to the next tier;
* job starving: the first tier with a plugin registered decides, all its plugins must agree;
  with none registered the job is not starving;
* preemptable and reclaimable victims: tier by tier, the intersection of the answers of the
  plugins that do not abstain; the first tier with victims decides (an empty answer lets the
  next tier decide).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.job_info import JobInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import TaskInfo
from scheduler.plugins.base import Plugin, Vote

if TYPE_CHECKING:  # the statement works on a session: the same layer, typing only
    from scheduler.framework.statement import Statement


ABSTAIN = Status(Code.SKIP)  # a job_enqueueable answer that leaves the decision to others
Mask = np.ndarray  # one bool per node of the session, in ``node_list`` order
JobCheck = Callable[[JobInfo], Status]
TaskCheck = Callable[[QueueInfo, TaskInfo], Status]
# (preemptor, candidates) -> victims, or None to abstain
VictimFilter = Callable[[TaskInfo, list[TaskInfo]], "list[TaskInfo] | None"]

Tiered = list[tuple[int, Any]]  # (tier, fn) in tier order


class ExtensionPoints:
    def __init__(self) -> None:
        self.job_order_fns: list[Callable[[JobInfo], Any]] = []
        self.task_order_fns: list[Callable[[TaskInfo], Any]] = []
        self.queue_order_fns: list[Callable[[QueueInfo], Any]] = []
        # fn(victim's queue, preemptor's queue) -> key; a larger key's victims go first
        self.victim_queue_order_fns: list[Callable[[QueueInfo, QueueInfo], Any]] = []
        self.job_ready_fns: list[Callable[[JobInfo], bool]] = []
        self.job_pipelined_fns: Tiered = []  # (tier, fn(job) -> Vote)
        self.job_valid_fns: list[JobCheck] = []
        self.job_enqueueable_fns: Tiered = []  # (tier, fn(job) -> Status; ABSTAIN abstains)
        self.job_enqueued_fns: list[Callable[[JobInfo], None]] = []
        # Kueue-style admission checks: asked after the queue admitted a job (not Volcano's).
        self.admission_check_fns: list[JobCheck] = []
        self.job_starving_fns: Tiered = []  # (tier, fn(job) -> bool)
        self.allocatable_fns: list[TaskCheck] = []
        self.overused_fns: list[Callable[[QueueInfo], bool]] = []
        self.preemptive_fns: list[TaskCheck] = []
        self.preemptable_fns: Tiered = []  # (tier, VictimFilter)
        self.reclaimable_fns: Tiered = []  # (tier, VictimFilter)
        # Filters every plugin's choice of victims must pass, whatever the tiers decided.
        self.victim_limit_fns: list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]] = []
        self.predicate_fns: list[Callable[[TaskInfo], Mask]] = []
        self.predicate_reason_fns: list[Callable[[TaskInfo, Mask], dict[str, int]]] = []
        self.node_score_fns: list[Callable[[TaskInfo, np.ndarray], np.ndarray]] = []
        # Event handlers and reservation cleanups have no switch in Volcano.
        self.allocate_handlers: list[Callable[[TaskInfo], None]] = []
        self.deallocate_handlers: list[Callable[[TaskInfo], None]] = []
        self.cleanup_reservations_fns: list[Callable[[Statement], None]] = []
        self.unreserve_fns: list[Callable[[TaskInfo], None]] = []

    # --- registration (Volcano's ssn.AddXxxFn) ---------------------------------------------

    def add_job_order_fn(self, plugin: Plugin, fn: Callable[[JobInfo], Any]) -> None:
        if plugin.enabled("enableJobOrder"):
            self.job_order_fns.append(fn)

    def add_task_order_fn(self, plugin: Plugin, fn: Callable[[TaskInfo], Any]) -> None:
        if plugin.enabled("enableTaskOrder"):
            self.task_order_fns.append(fn)

    def add_queue_order_fn(self, plugin: Plugin, fn: Callable[[QueueInfo], Any]) -> None:
        if plugin.enabled("enableQueueOrder"):
            self.queue_order_fns.append(fn)

    def add_victim_queue_order_fn(
        self, plugin: Plugin, fn: Callable[[QueueInfo, QueueInfo], Any]
    ) -> None:
        """Which queue's victims go first, given the preemptor's queue (no switch in Volcano)."""
        self.victim_queue_order_fns.append(fn)

    def add_job_ready_fn(self, plugin: Plugin, fn: Callable[[JobInfo], bool]) -> None:
        if plugin.enabled("enableJobReady"):
            self.job_ready_fns.append(fn)

    def add_job_pipelined_fn(self, plugin: Plugin, fn: Callable[[JobInfo], Vote]) -> None:
        if plugin.enabled("enableJobPipelined"):
            self.job_pipelined_fns.append((plugin.tier, fn))

    def add_job_valid_fn(self, plugin: Plugin, fn: JobCheck) -> None:
        self.job_valid_fns.append(fn)  # no switch in Volcano

    def add_job_enqueueable_fn(self, plugin: Plugin, fn: JobCheck) -> None:
        if plugin.enabled("enableJobEnqueued"):
            self.job_enqueueable_fns.append((plugin.tier, fn))

    def add_job_enqueued_fn(self, plugin: Plugin, fn: Callable[[JobInfo], None]) -> None:
        if plugin.enabled("enableJobEnqueued"):
            self.job_enqueued_fns.append(fn)

    def add_admission_check_fn(self, plugin: Plugin, fn: JobCheck) -> None:
        self.admission_check_fns.append(fn)

    def add_job_starving_fn(self, plugin: Plugin, fn: Callable[[JobInfo], bool]) -> None:
        if plugin.enabled("enableJobStarving"):
            self.job_starving_fns.append((plugin.tier, fn))

    def add_allocatable_fn(self, plugin: Plugin, fn: TaskCheck) -> None:
        if plugin.enabled("enabledAllocatable"):
            self.allocatable_fns.append(fn)

    def add_overused_fn(self, plugin: Plugin, fn: Callable[[QueueInfo], bool]) -> None:
        if plugin.enabled("enabledOverused"):
            self.overused_fns.append(fn)

    def add_preemptive_fn(self, plugin: Plugin, fn: TaskCheck) -> None:
        if plugin.enabled("enablePreemptive"):
            self.preemptive_fns.append(fn)

    def add_preemptable_fn(self, plugin: Plugin, fn: VictimFilter) -> None:
        if plugin.enabled("enablePreemptable"):
            self.preemptable_fns.append((plugin.tier, fn))

    def add_reclaimable_fn(self, plugin: Plugin, fn: VictimFilter) -> None:
        if plugin.enabled("enableReclaimable"):
            self.reclaimable_fns.append((plugin.tier, fn))

    def add_victim_limit_fn(self, fn: Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]) -> None:
        """A last word on the victims preempt and reclaim chose (the pdb plugin): unlike a
        tier's vote, an empty answer means none, not "let the next tier decide"."""
        self.victim_limit_fns.append(fn)

    def add_predicate_fn(
        self,
        plugin: Plugin,
        fn: Callable[[TaskInfo], Mask],
        reasons: Callable[[TaskInfo, Mask], dict[str, int]] | None = None,
    ) -> None:
        if plugin.enabled("enablePredicate"):
            self.predicate_fns.append(fn)
            if reasons is not None:
                self.predicate_reason_fns.append(reasons)

    def add_node_order_fn(
        self, plugin: Plugin, fn: Callable[[TaskInfo, np.ndarray], np.ndarray]
    ) -> None:
        if plugin.enabled("enableNodeOrder"):
            self.node_score_fns.append(fn)

    def add_event_handler(
        self,
        allocate: Callable[[TaskInfo], None],
        deallocate: Callable[[TaskInfo], None],
    ) -> None:
        self.allocate_handlers.append(allocate)
        self.deallocate_handlers.append(deallocate)

    def add_cleanup_reservations_fn(self, fn: Callable[[Statement], None]) -> None:
        self.cleanup_reservations_fns.append(fn)

    def add_unreserve_fn(self, fn: Callable[[TaskInfo], None]) -> None:
        """Called when a task's gate removal is taken back: it holds no reservation."""
        self.unreserve_fns.append(fn)

    # --- votes -----------------------------------------------------------------------------

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self.job_ready_fns)

    def job_pipelined(self, job: JobInfo) -> bool:
        return _tiered_vote((tier, fn(job)) for tier, fn in self.job_pipelined_fns)

    def job_valid(self, job: JobInfo) -> Status:
        return _first_refusal(fn(job) for fn in self.job_valid_fns)

    def job_enqueueable(self, job: JobInfo) -> Status:
        """SUCCESS to admit; the first refusal otherwise (tier by tier, as Volcano votes)."""
        permitted_in: int | None = None
        for tier, fn in self.job_enqueueable_fns:
            if permitted_in is not None and tier != permitted_in:
                break  # a tier permitted: later tiers are not asked
            status = fn(job)
            if status.code is Code.SKIP:
                continue
            if not status.ok:
                return status
            permitted_in = tier
        return SUCCESS

    def admission_check(self, job: JobInfo) -> Status:
        return _first_refusal(fn(job) for fn in self.admission_check_fns)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self.job_enqueued_fns:
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """The job still needs resources; without a registered plugin, it does not."""
        if not self.job_starving_fns:
            return False
        first_tier = self.job_starving_fns[0][0]
        return all(fn(job) for tier, fn in self.job_starving_fns if tier == first_tier)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status:
        return _first_refusal(fn(queue, task) for fn in self.allocatable_fns)

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self.overused_fns)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        """May ``queue`` take resources from other queues for ``task``? (reclaim)"""
        return _first_refusal(fn(queue, task) for fn in self.preemptive_fns)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._limit_victims(preemptor, _victims(self.preemptable_fns, preemptor, candidates))

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._limit_victims(reclaimer, _victims(self.reclaimable_fns, reclaimer, candidates))

    def _limit_victims(self, task: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        for fn in self.victim_limit_fns:
            if not victims:
                break
            victims = fn(task, victims)
        return victims

    def cleanup_reservations(self, statement: Statement) -> None:
        for fn in self.cleanup_reservations_fns:
            fn(statement)

    def unreserve(self, task: TaskInfo) -> None:
        for fn in self.unreserve_fns:
            fn(task)


def _first_refusal(statuses: Iterable[Status]) -> Status:
    for status in statuses:
        if not status.ok and status.code is not Code.SKIP:
            return status
    return SUCCESS


def _tiered_vote(votes: Iterable[tuple[int, Vote]]) -> bool:
    """Volcano's JobPipelined: a Reject ends it; a Permit decides at the end of its tier."""
    permitted_in: int | None = None
    for tier, vote in votes:
        if permitted_in is not None and tier != permitted_in:
            return True
        if vote < 0:
            return False
        if vote > 0:
            permitted_in = tier
    return True


def _victims(
    fns: Sequence[tuple[int, VictimFilter]], task: TaskInfo, candidates: list[TaskInfo]
) -> list[TaskInfo]:
    """Tier by tier, the victims every plugin that does not abstain agrees to; the first tier
    with victims decides. With no plugin answering, none."""
    tiers: dict[int, list[VictimFilter]] = {}
    for tier, fn in fns:
        tiers.setdefault(tier, []).append(fn)
    for tier_fns in tiers.values():
        chosen: set[str] | None = None
        for fn in tier_fns:
            answer = fn(task, candidates)
            if answer is None:
                continue  # abstains
            if not answer:
                chosen = None
                break  # an empty answer: this tier decides nothing
            allowed = {v.uid for v in answer}
            # As Volcano's: an empty intersection is nil, and the next answer starts afresh.
            chosen = (allowed if chosen is None else chosen & allowed) or None
        if chosen:
            return [c for c in candidates if c.uid in chosen]
    return []
