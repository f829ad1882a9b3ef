"""enqueue: admit Pending PodGroups (Pending -> Inqueue) when their queue can take them.

As Volcano's enqueue: queues take turns in queue order, one job each (job order), until every
queue's pending jobs were tried, so a queue's share grows as its jobs are admitted. A PodGroup
without ``minResources`` passes its queue at once; any other needs the plugins'
``job_enqueueable``. Then, when the scheduler runs it, the node-capacity check (Kueue
KEP-3211) has its say: as in Kueue, a job its queue refuses is never evaluated by the check. A PodGroup with fewer pods than minMember,
even none, is admitted on its minResources: job controllers (Volcano's, the Spark and
Kubeflow operators) create the PodGroup first and its pods once it is Inqueue.
"""

from __future__ import annotations

import heapq

from scheduler.api.job_info import PG_INQUEUE, JobInfo
from scheduler.api.status import SUCCESS
from scheduler.api.task_info import TaskStatus
from scheduler.framework.session import Session


def execute(ssn: Session) -> None:
    by_queue: dict[str, list[tuple[tuple, str]]] = {}
    for job in ssn.jobs.values():
        if job.is_synthetic and not job.count(TaskStatus.PENDING):
            # A pod without a PodGroup is a job only for its own sake: once it is terminating
            # (Releasing) or finished there is nothing to admit, and admitting it would hold
            # its request in the queue's inqueue figure, against the pods waiting there, for
            # as long as its grace period lasts (Volcano's capacity plugin reads inqueue).
            continue
        if job.is_pending() and job.queue in ssn.queues:
            by_queue.setdefault(job.queue, []).append((ssn.job_order_key(job), job.uid))
    turns = []
    for name, jobs in by_queue.items():
        heapq.heapify(jobs)
        turns.append((ssn.queue_order_key(ssn.queues[name]), name))
    heapq.heapify(turns)
    while turns:
        _, name = heapq.heappop(turns)
        jobs = by_queue[name]
        _enqueue(ssn, ssn.jobs[heapq.heappop(jobs)[1]])
        if jobs:
            heapq.heappush(turns, (ssn.queue_order_key(ssn.queues[name]), name))


def _enqueue(ssn: Session, job: JobInfo) -> None:
    status = ssn.job_enqueueable(job) if job.min_resources is not None else SUCCESS
    if status.ok:
        status = ssn.admission_check(job)
    if status.ok:
        job.phase = PG_INQUEUE
        ssn.job_enqueued(job)
        return
    job.job_fit_error = status
    for task in job.pending_tasks():
        ssn.wait(task, status)
