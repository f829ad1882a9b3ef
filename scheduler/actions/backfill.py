"""backfill: place best-effort tasks (no requests) on any node that passes the predicates.

Gated tasks are skipped (Volcano's pod scheduling readiness design), but for our own
queue-allocation gate: a best-effort pod asks its queue for nothing, so once its queue admits
it (open, valid) its gate is lifted here and it is placed in the same cycle — unless it is a
member of a gang not running yet, whose gates go all together or not at all (allocate)."""

from __future__ import annotations

import numpy as np

from scheduler.api.helpers import has_only_volcano_scheduling_gate
from scheduler.api.job_info import JobInfo
from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskInfo
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.plugins.predicates import fit_error_message, resource_reasons


def execute(ssn: Session) -> None:
    for job in sorted(ssn.jobs.values(), key=ssn.job_order_key):
        if not ssn.schedulable(job):
            continue
        for task in sorted(job.pending_tasks(), key=ssn.task_order_key):
            if not task.best_effort:
                continue
            if task.sch_gated and not has_only_volcano_scheduling_gate(task.pod):
                continue  # another controller's gate
            _backfill(ssn, job, task)


def _backfill(ssn: Session, job: JobInfo, task: TaskInfo) -> None:
    stmt = Statement(ssn)
    if task.sch_gated:
        if job.min_available > 1 and not ssn.job_ready(job):
            return  # a gang's member: its gate goes with its gang's (allocate), or stays
        queue = ssn.queues.get(job.queue)
        refusal = ssn.allocatable(queue, task) if queue is not None else None
        if refusal is None or not refusal.ok:
            return  # it waits, gated: its queue's refusal was recorded by allocate
        stmt.ungate(task)
    vec = ssn.matrix.vector(task.fit_req)
    mask = ssn.predicate_mask(task)
    fit = mask & ssn.matrix.fits(vec, future=False)
    if not fit.any():
        reasons = ssn.predicate_reasons(task, mask)
        reasons.update(resource_reasons(ssn.matrix, vec, mask))
        message = fit_error_message(len(ssn.node_list), reasons)
        status = Status(Code.UNSCHEDULABLE, "predicates", message)
        job.nodes_fit_errors[task.uid] = status
        ssn.wait(task, status)
        stmt.commit()  # ungated, it waits for a node in the open
        return
    node = ssn.node_list[int(np.argmax(fit))]
    stmt.allocate(task, node)
    stmt.commit()
