"""gang: a job runs only when minMember of its tasks can run together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.job_info import JobInfo
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.plugins.base import Plugin, Vote

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_job_valid_fn(self, _job_valid)
        # Jobs that are not ready yet go first, as in Volcano's gang job order.
        ssn.add_job_order_fn(self, lambda job: int(_ready(job)))
        ssn.add_job_ready_fn(self, _ready)
        ssn.add_job_pipelined_fn(self, _pipelined)
        ssn.add_preemptable_fn(self, lambda task, candidates: _keep_gangs(ssn, candidates))
        ssn.add_reclaimable_fn(self, lambda task, candidates: _keep_gangs(ssn, candidates))
        ssn.add_job_starving_fn(self, _starving)


def _keep_gangs(ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]:
    """Victims that leave each job at least minAvailable ready tasks; a job of minAvailable 1
    is no gang, so any of its tasks may go."""
    victims: list[TaskInfo] = []
    occupied: dict[str, int] = {}
    for task in candidates:
        job = ssn.jobs.get(task.job_id)
        if job is None:
            continue
        left = occupied.setdefault(job.uid, job.ready_task_num())
        if left > job.min_available or job.min_available <= 1:
            occupied[job.uid] = left - 1
            victims.append(task)
    return victims


def _ready(job: JobInfo) -> bool:
    return job.ready_task_num() >= job.min_available


def _pipelined(job: JobInfo) -> Vote:
    """Volcano's JobInfo.IsPipelined: pending best-effort tasks count, as backfill places
    them on any node."""
    placed = job.ready_task_num() + job.pipelined_num() + job.pending_best_effort_num()
    pipelined = placed >= job.min_available
    return Vote.PERMIT if pipelined else Vote.REJECT


def _starving(job: JobInfo) -> bool:
    """Volcano's JobInfo.IsStarving: fewer ready and pipelined tasks than minAvailable."""
    return job.ready_task_num() + job.pipelined_num() < job.min_available


def _job_valid(job: JobInfo) -> Status:
    valid = job.valid_task_num()
    if valid >= job.min_available:
        return SUCCESS
    message = (
        f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
    )
    return Status(Code.GANG, GangPlugin.name, message)


def unready_count(job: JobInfo) -> int:
    return max(job.min_available - job.ready_task_num(), 0)


def gated_pending(job: JobInfo) -> int:
    return sum(1 for t in job.index.get(TaskStatus.PENDING, {}).values() if t.sch_gated)
