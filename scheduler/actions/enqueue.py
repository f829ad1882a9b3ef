"""enqueue: admit Pending PodGroups (Pending -> Inqueue) when their queue can take them.

With ``ssn.admission`` set (the loop's ``admission`` argument), a job its queue accepts must
also pass the node-capacity check of seed 004 before it is admitted; the check comes after
the queue's, as in Kueue, so a job the queue refuses is never evaluated.
"""

from __future__ import annotations

from scheduler.admission.enqueue_check import check_refusal, forget_deleted, note_queue_refusal
from scheduler.api.job_info import PG_INQUEUE


def execute(ssn) -> None:
    pending = [job for job in ssn.jobs.values() if job.is_pending()]
    by_queue: dict[str, list] = {}
    for job in pending:
        by_queue.setdefault(job.queue, []).append(job)
    queues = sorted((ssn.queues[q] for q in by_queue), key=ssn.queue_order_key)
    for queue in queues:
        for job in sorted(by_queue[queue.name], key=ssn.job_order_key):
            refusal = _refusal(ssn, job)
            if refusal is None:
                job.phase = PG_INQUEUE
                ssn.job_enqueued(job)
                continue
            job.job_fit_error = refusal
            for task in job.pending_tasks():
                ssn.wait(task, refusal)
    if getattr(ssn, "admission", None) is not None:
        forget_deleted(ssn)


def _refusal(ssn, job) -> str | None:
    refusal = ssn.job_enqueueable(job)
    if refusal is not None:
        note_queue_refusal(ssn, job)
        return refusal
    if getattr(ssn, "admission", None) is None:
        return None
    return check_refusal(ssn, job)
