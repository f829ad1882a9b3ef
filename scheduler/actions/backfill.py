"""backfill: place best-effort tasks (no requests) on any node that passes the predicates."""

from __future__ import annotations

import numpy as np

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
            if not task.best_effort or task.sch_gated:
                continue  # gated tasks are skipped by every action but enqueue (Volcano's
                # pod scheduling readiness design)
            _backfill(ssn, job, task)


def _backfill(ssn: Session, job: JobInfo, task: TaskInfo) -> None:
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
        return
    node = ssn.node_list[int(np.argmax(fit))]
    stmt = Statement(ssn)
    stmt.allocate(task, node)
    stmt.commit()
