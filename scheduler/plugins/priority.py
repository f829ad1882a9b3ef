"""priority: higher PriorityClass value first, for jobs and for tasks within a job."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.task_info import TaskInfo
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_job_order_fn(self, lambda job: -job.priority)
        ssn.add_task_order_fn(self, lambda task: -task.priority)
        ssn.add_preemptable_fn(self, lambda task, cands: _lower_priority(ssn, task, cands))
        # Volcano's priority jobStarvingFn: a job wants more while some task is neither
        # placed nor pipelined (gang, in the same tier, adds "below minAvailable").
        ssn.add_job_starving_fn(
            self, lambda job: job.ready_task_num() + job.pipelined_num() < len(job.tasks)
        )


def _lower_priority(
    ssn: Session, preemptor: TaskInfo, candidates: list[TaskInfo]
) -> list[TaskInfo]:
    """Tasks of lower-priority jobs; within the preemptor's own job, lower-priority tasks."""
    own = ssn.jobs[preemptor.job_id]
    victims = []
    for task in candidates:
        job = ssn.jobs.get(task.job_id)
        if job is None:
            continue
        other_job_lower = job.uid != own.uid and job.priority < own.priority
        own_task_lower = job.uid == own.uid and task.priority < preemptor.priority
        if other_job_lower or own_task_lower:
            victims.append(task)
    return victims
