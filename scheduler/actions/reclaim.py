"""reclaim: Volcano's reclaim action — a queue takes resources back from other queues.

Queue by queue (queue order, skipping overused queues), each starving job's pending tasks
(task order) that the plugins' ``preemptive`` allows (the queue may still grow: the capacity
and proportion plugins' deserved-share rules) look at the nodes in turn: the Running,
preemptable tasks there of other, reclaimable queues are the candidates; the plugins'
``reclaimable`` picks the victims; they are evicted in victim order until the task fits, and
the task is pipelined on that node. A job's evictions stand only if the job ends up pipelined.
"""

from __future__ import annotations

from scheduler.actions.eviction import (
    RECLAIMABLE_STATUSES,
    commit_if_pipelined,
    evict_on_nodes,
    may_hold_after_evictions,
    may_preempt,
    pending_tasks,
    running_candidates,
    starving_jobs_by_queue,
)
from scheduler.api.job_info import JobInfo
from scheduler.api.node_info import NodeInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.status import Status
from scheduler.api.task_info import TaskInfo
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


def execute(ssn: Session) -> None:
    by_queue = starving_jobs_by_queue(ssn)
    for name in sorted(by_queue, key=lambda q: ssn.queue_order_key(ssn.queues[q])):
        queue = ssn.queues[name]
        if ssn.overused(queue):
            continue
        for job in sorted(by_queue[name], key=ssn.job_order_key):
            _reclaim_for(ssn, queue, job)


def _reclaim_for(ssn: Session, queue: QueueInfo, job: JobInfo) -> None:
    stmt = Statement(ssn)

    def other_reclaimable_queue(task: TaskInfo) -> bool:
        other = ssn.jobs.get(task.job_id)
        if other is None or other.queue == queue.name:
            return False
        owner = ssn.queues.get(other.queue)
        return owner is not None and owner.reclaimable

    def candidates(node: NodeInfo) -> list[TaskInfo]:
        return running_candidates(
            node, other_reclaimable_queue, RECLAIMABLE_STATUSES, ssn.refused_victims
        )

    for task in pending_tasks(ssn, job):
        if not ssn.job_starving(job):
            break
        if not may_preempt(task):
            continue
        refusal = ssn.preemptive(queue, task)
        if not refusal.ok:
            # Why the task did not fit (allocate's reason) stays its reason: that it may not
            # reclaim either says only that it must wait for it to change.
            if task.uid not in ssn.waiting:
                ssn.wait(task, Status(refusal.code, refusal.plugin, f"cannot reclaim: {refusal}"))
            continue
        nodes = [n for n in _predicate_nodes(ssn, task) if candidates(n)]

        def fits(node: NodeInfo, task: TaskInfo = task) -> bool:
            return task.fit_req.less_equal(node.future_idle)

        evict_on_nodes(ssn, stmt, task, nodes, candidates, ssn.reclaimable, fits, "reclaimed for")
    commit_if_pipelined(ssn, stmt, job)


def _predicate_nodes(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    """The nodes that pass the task's predicates, in the session's (name) order, as
    Volcano's reclaim walks them; of those, only where evictions could make room for it
    (``may_hold_after_evictions``: elsewhere Volcano's ValidateVictims refuses any victims)."""
    vec = ssn.matrix.vector(task.fit_req)
    mask = ssn.predicate_mask(task) & may_hold_after_evictions(ssn, vec)
    return [node for node in ssn.node_list if mask[node.index]]
