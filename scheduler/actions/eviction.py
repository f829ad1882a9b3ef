"""What preempt and reclaim share: find a node where evicting some running tasks makes room
for a waiting task, evict just enough of them, and pipeline the task onto that node.

The evicted pods release their resources over their termination grace period; until then
the node's future idle (idle + releasing - pipelined) is what the pipelined task holds, and
the decision persists across cycles through the cache (Volcano's pipeline cache persistence
design).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scheduler.api.job_info import JobInfo
from scheduler.api.labels import PREEMPTABLE
from scheduler.api.node_info import NodeInfo
from scheduler.api.resource import Resource
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement

VictimFilter = Callable[[TaskInfo], bool]
Victims = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]


def preemptable(task: TaskInfo) -> bool:
    """``volcano.sh/preemptable`` (annotation, then label); a pod is preemptable by default."""
    meta = task.pod.get("metadata") or {}
    for source in (meta.get("annotations") or {}, meta.get("labels") or {}):
        if PREEMPTABLE in source:
            return str(source[PREEMPTABLE]).strip().lower() in {"true", "1", "t", "yes"}
    return True


def may_preempt(task: TaskInfo) -> bool:
    """A pod with ``preemptionPolicy: Never`` waits instead of evicting others."""
    return (task.pod.get("spec") or {}).get("preemptionPolicy") != "Never"


def candidates_on(node: NodeInfo, keep: VictimFilter) -> list[TaskInfo]:
    return [
        t
        for t in node.tasks.values()
        if t.status == TaskStatus.RUNNING and not t.resreq.is_empty() and preemptable(t) and keep(t)
    ]


def evict_for(
    ssn: Session, stmt: Statement, task: TaskInfo, keep: VictimFilter, victims_of: Victims,
    why: str, *, queue_has_room: bool,
) -> bool:  # fmt: skip
    """Make room for ``task`` on the first suitable node and pipeline it there.

    A node whose future idle already holds the task needs no victim and is taken first —
    when the task's queue has room for it (``queue_has_room``); evicting from the same queue
    is what makes room in a full one.
    Otherwise nodes are tried best score first (name breaks ties). On a node, the plugins choose the
    victims among the running tasks ``keep`` allows; if even all of them would not free
    enough, the node is skipped. Victims go lowest priority, newest first, until the task
    fits the node's future idle. Returns True when the task was pipelined.
    """
    matrix = ssn.matrix
    vec = matrix.vector(task.fit_req)
    mask = ssn.predicate_mask(task)
    room = mask & matrix.fits(vec, future=True)
    if queue_has_room and room.any():
        # Room is promised there already (an earlier victim of this action is releasing it,
        # or a gang-mate left space): no eviction needed.
        stmt.pipeline(task, ssn.node_list[int(room.argmax())])
        return True
    scores = ssn.node_scores(task, vec) if ssn.node_score_fns else np.zeros(len(ssn.node_list))
    order = sorted((i for i in range(len(ssn.node_list)) if mask[i]), key=lambda i: -scores[i])
    for i in order:
        node = ssn.node_list[i]
        victims = victims_of(task, candidates_on(node, keep))
        if not victims:
            continue
        freed = Resource()
        for victim in victims:
            freed.add(victim.node_req)
        if not task.fit_req.less_equal(node.future_idle.add(freed)):
            continue  # even every allowed victim would not make room here
        victims.sort(key=ssn.task_order_key, reverse=True)
        for victim in victims:
            if task.fit_req.less_equal(node.future_idle):
                break
            stmt.evict(victim, f"{why} {task.namespace}/{task.name}")
        if task.fit_req.less_equal(node.future_idle):
            stmt.pipeline(task, node)
            return True
    return False


def starving_jobs_by_queue(ssn: Session) -> dict[str, list[JobInfo]]:
    """Admitted jobs that still need resources, with their pending tasks, by queue."""
    out: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or not ssn.job_starving(job):
            continue
        if any(_may_take_room(t) for t in job.pending_tasks()):
            out.setdefault(job.queue, []).append(job)
    return out


def pending_tasks(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks that may evict for room (ungated, not best-effort), in order."""
    return sorted(filter(_may_take_room, job.pending_tasks()), key=ssn.task_order_key)


def commit_if_pipelined(ssn: Session, stmt: Statement, job: JobInfo) -> None:
    """A job's evictions stand only if it ends up pipelined (gang: ready + pipelined reach
    minAvailable); otherwise nothing is evicted for it."""
    if ssn.job_pipelined(job):
        stmt.commit()
    else:
        stmt.discard()


def _may_take_room(task: TaskInfo) -> bool:
    return not task.sch_gated and not task.best_effort
