"""preempt: within a queue, a starving job's tasks evict lower-priority running tasks of other
jobs in the same queue, and are pipelined onto the node they free (Volcano's preempt, phase 1).

A job's evictions are committed only if the job ends up pipelined (gang: ready + pipelined
reach minAvailable); otherwise nothing is evicted for it.
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
from scheduler.api.task_info import TaskInfo
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement


def execute(ssn: Session) -> None:
    by_queue = starving_jobs_by_queue(ssn)
    for name in sorted(by_queue, key=lambda q: ssn.queue_order_key(ssn.queues[q])):
        for job in sorted(by_queue[name], key=ssn.job_order_key):
            _preempt_for(ssn, job)


def _preempt_for(ssn: Session, job: JobInfo) -> None:
    stmt = Statement(ssn)

    def same_queue_other_job(task: TaskInfo) -> bool:
        other = ssn.jobs.get(task.job_id)
        return other is not None and other.queue == job.queue and other.uid != job.uid

    for task in pending_tasks(ssn, job):
        if not ssn.job_starving(job):
            break
        if may_preempt(task):
            room = ssn.allocatable(ssn.queues[job.queue], task).ok
            evict_for(ssn, stmt, task, same_queue_other_job, ssn.preemptable, "preempted for",
                      queue_has_room=room)  # fmt: skip
    commit_if_pipelined(ssn, stmt, job)
