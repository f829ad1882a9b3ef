"""enqueue: admit Pending PodGroups (Pending -> Inqueue) when their queue can take them.

Every plugin's ``job_enqueueable`` must agree, in tier order: the queue plugin first, then
(when the scheduler runs it) the node-capacity check, which sits in a tier of its own after
the configured ones; a job its queue refuses is never evaluated by the check, as in Kueue.
"""

from __future__ import annotations

from scheduler.api.job_info import PG_INQUEUE, JobInfo
from scheduler.framework.session import Session


def execute(ssn: Session) -> None:
    pending = [job for job in ssn.jobs.values() if job.is_pending()]
    by_queue: dict[str, list[JobInfo]] = {}
    for job in pending:
        by_queue.setdefault(job.queue, []).append(job)
    queues = sorted((ssn.queues[q] for q in by_queue), key=ssn.queue_order_key)
    for queue in queues:
        for job in sorted(by_queue[queue.name], key=ssn.job_order_key):
            status = ssn.job_enqueueable(job)
            if status.ok:
                job.phase = PG_INQUEUE
                ssn.job_enqueued(job)
                continue
            job.job_fit_error = status
            for task in job.pending_tasks():
                ssn.wait(task, status)
