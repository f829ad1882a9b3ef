"""enqueue: admit Pending PodGroups (Pending -> Inqueue) when their queue can take them."""

from __future__ import annotations

from scheduler.api.job_info import PG_INQUEUE


def execute(ssn) -> None:
    pending = [job for job in ssn.jobs.values() if job.is_pending()]
    by_queue: dict[str, list] = {}
    for job in pending:
        by_queue.setdefault(job.queue, []).append(job)
    queues = sorted((ssn.queues[q] for q in by_queue), key=ssn.queue_order_key)
    for queue in queues:
        for job in sorted(by_queue[queue.name], key=ssn.job_order_key):
            refusal = ssn.job_enqueueable(job)
            if refusal is None:
                job.phase = PG_INQUEUE
                ssn.job_enqueued(job)
                continue
            job.job_fit_error = refusal
            for task in job.pending_tasks():
                ssn.wait(task, refusal)
