"""preempt: Volcano's preempt action, in its two phases.

Queue by queue (queue order), each starving job (job order) tries its pending tasks (task
order): on the first node where evicting lower-priority tasks of *other* jobs of the same
queue makes room, the task is pipelined. After every eviction the task must fit the node
*and its queue* again (``ssn.allocatable``: capability, gate reservations), as Volcano's
preemptorFitsOnNode; a node where that never happens is abandoned and its evictions undone.
The job's evictions stand only if the job ends up pipelined. Then, within each starving job,
a pending task may evict lower-priority tasks of its own job.

A pod held only by our queue-allocation gate preempts too (Volcano's priority semantics survive
opting in): it waits gated because its queue is full, and evicting lower-priority pods of its
queue is what makes the room; its gate is lifted with the evictions, and kept if none stand.

A pod with ``preemptionPolicy: Never`` never evicts others; a best-effort pod only evicts
best-effort pods (which Volcano lets it do for the pod slot, issue #3335); pods annotated or
labelled ``volcano.sh/preemptable: "false"`` are never victims.
"""

from __future__ import annotations

import numpy as np

from scheduler.actions.eviction import (
    PREEMPTABLE_STATUSES,
    VictimFilter,
    commit_if_pipelined,
    evict_on_nodes,
    fits_now,
    may_preempt,
    nodes_by_score,
    pending_tasks,
    running_candidates,
    starving_jobs_by_queue,
)
from scheduler.api.job_info import JobInfo
from scheduler.api.node_info import NodeInfo
from scheduler.api.task_info import TaskInfo
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


def execute(ssn: Session) -> None:
    by_queue = starving_jobs_by_queue(ssn)
    if not by_queue:
        return
    room = _VictimRoom(ssn, {job.uid for jobs in by_queue.values() for job in jobs})
    for name in sorted(by_queue, key=lambda q: ssn.queue_order_key(ssn.queues[q])):
        jobs = sorted(by_queue[name], key=ssn.job_order_key)
        for job in jobs:
            _between_jobs(ssn, job, room.of_queue(name))
        for job in jobs:
            _within_job(ssn, job, room.of_job(job.uid))


class _VictimRoom:
    """Per node, what the action's victims could free at most: the requests of the Bound and
    Running preemptable tasks there, summed by queue (victims between jobs are of the
    preemptor's queue) and by starving job (victims within a job are of that job), as rows of
    the session's node matrix. Taken when the action starts: a task leaves Bound and Running
    during the action only to be evicted (a discarded eviction brings it back), so no victim
    is ever outside these sums. A node where the preemptor's request exceeds future idle plus
    that sum is one Volcano's ValidateVictims refuses whatever the plugins choose; skipping it
    before listing its candidates is what keeps preempt cheap at thousands of nodes."""

    def __init__(self, ssn: Session, preemptors: set[str]) -> None:
        self.matrix = ssn.matrix
        self.queues: dict[str, np.ndarray] = {}
        self.jobs: dict[str, np.ndarray] = {}
        shape = self.matrix.future.shape
        for node in ssn.node_list:
            for task in node.tasks.values():
                if not task.preemptable or task.status not in PREEMPTABLE_STATUSES:
                    continue
                job = ssn.jobs.get(task.job_id)
                if job is None:
                    continue
                vec = self.matrix.vector(task.node_req)
                sums = [self.queues.setdefault(job.queue, np.zeros(shape))]
                if job.uid in preemptors:
                    sums.append(self.jobs.setdefault(job.uid, np.zeros(shape)))
                for total in sums:
                    total[node.index] += vec
        self._none = np.zeros(shape)

    def of_queue(self, queue: str) -> np.ndarray:
        return self.queues.get(queue, self._none)

    def of_job(self, uid: str) -> np.ndarray:
        return self.jobs.get(uid, self._none)


def _between_jobs(ssn: Session, job: JobInfo, victims: np.ndarray) -> None:
    stmt = Statement(ssn)
    for task in pending_tasks(ssn, job, ours_gated=True):
        if not ssn.job_starving(job):
            break

        def other_job_of_queue(victim: TaskInfo, task: TaskInfo = task) -> bool:
            other = ssn.jobs.get(victim.job_id)
            return (
                other is not None and other.queue == job.queue and other.uid != job.uid
                and _best_effort_rule(task, victim)
            )  # fmt: skip

        _preempt(ssn, stmt, job, task, other_job_of_queue, victims)
    commit_if_pipelined(ssn, stmt, job)


def _within_job(ssn: Session, job: JobInfo, victims: np.ndarray) -> None:
    """Volcano's second phase: a task evicts lower-priority tasks of its own job.

    Volcano commits each task's statement on its own as soon as that task is pipelined, so a
    gang that cannot all fit keeps some members pipelined (holding node room for nothing).
    Here the phase's decisions stand only if the job is then pipelined, as in the first
    phase: gangs stay all-or-nothing (README, "Differences from Volcano")."""
    stmt = Statement(ssn)
    for task in pending_tasks(ssn, job, ours_gated=True):

        def same_job(victim: TaskInfo, task: TaskInfo = task) -> bool:
            return victim.job_id == task.job_id and _best_effort_rule(task, victim)

        if not _preempt(ssn, stmt, job, task, same_job, victims):
            break
    commit_if_pipelined(ssn, stmt, job)


def _preempt(
    ssn: Session,
    stmt: Statement,
    job: JobInfo,
    task: TaskInfo,
    keep: VictimFilter,
    victims: np.ndarray,
) -> bool:
    """``victims``: per node, at most what ``keep``'s victims there could free
    (``_VictimRoom``)."""
    if not may_preempt(task):
        return False
    if task.best_effort and _room_now(ssn, task):
        # Backfill places it this cycle on the free slot; Volcano would pipeline it there
        # first and bind it a cycle later.
        return False
    queue = ssn.queues[job.queue]

    def fits(node: NodeInfo) -> bool:
        return ssn.allocatable(queue, task).ok and fits_now(ssn, task, node)

    def candidates(node: NodeInfo) -> list[TaskInfo]:
        return running_candidates(node, keep, PREEMPTABLE_STATUSES, ssn.refused_victims)

    gated = task.sch_gated
    stmt.ungate(task)  # tried as the pod it becomes once its queue has room

    def attempted() -> None:  # Volcano counts each node whose victims passed ValidateVictims
        ssn.preemption_attempts += 1

    placed = evict_on_nodes(
        ssn, stmt, task, nodes_by_score(ssn, task, victims), candidates, ssn.preemptable, fits,
        "preempted for", on_attempt=attempted,
    )  # fmt: skip
    if gated and not placed:
        stmt.take_back_ungate(task)
    return placed


def _room_now(ssn: Session, task: TaskInfo) -> bool:
    vec = ssn.matrix.vector(task.fit_req)
    return bool((ssn.predicate_mask(task) & ssn.matrix.fits(vec, future=False)).any())


def _best_effort_rule(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    """A best-effort pod may only take another best-effort pod's place."""
    return not preemptor.best_effort or victim.best_effort
