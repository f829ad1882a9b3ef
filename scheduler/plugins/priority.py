"""priority: higher PriorityClass value first, for jobs and for tasks within a job."""

from __future__ import annotations

from scheduler.plugins import Plugin


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn) -> None:
        ssn.job_order_fns.append(lambda job: -job.priority)
        ssn.task_order_fns.append(lambda task: -task.priority)
