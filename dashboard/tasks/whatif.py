"""``run_experiment`` (queue ``default``): play a stored what-if experiment in virtual time."""

from __future__ import annotations

from celery import shared_task

from dashboard.whatif.service import execute


@shared_task(name="dashboard.tasks.run_experiment", ignore_result=True)
def run_experiment(experiment_id: int) -> None:
    execute(experiment_id)
