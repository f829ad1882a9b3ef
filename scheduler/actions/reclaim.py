"""reclaim: a queue below its deserved share takes resources back from reclaimable queues
above theirs: running tasks of those queues are evicted and the waiting task is pipelined
onto the node they free (Volcano's reclaim).

Only queues with ``spec.reclaimable`` (the default) give up tasks; the reclaiming queue must
stay within its deserved share (the capacity plugin's ``preemptive``) and its capability. A
job's evictions are committed only if the job ends up pipelined.
"""

from __future__ import annotations

from scheduler.actions.eviction import (
    commit_if_pipelined,
    evict_for,
    may_preempt,
    pending_tasks,
    starving_jobs_by_queue,
)
from scheduler.api.job_info import JobInfo
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

    for task in pending_tasks(ssn, job):
        if not ssn.job_starving(job):
            break
        refusal = ssn.preemptive(queue, task)
        if refusal.ok:
            refusal = ssn.allocatable(queue, task)
        if not refusal.ok:
            ssn.wait(task, Status(refusal.code, refusal.plugin, f"cannot reclaim: {refusal}"))
            continue
        if may_preempt(task):
            evict_for(ssn, stmt, task, other_reclaimable_queue, ssn.reclaimable, "reclaimed for",
                      queue_has_room=True)  # fmt: skip
    commit_if_pipelined(ssn, stmt, job)
