"""``run_experiment`` (queue ``default``): play a stored what-if experiment in virtual time."""

from __future__ import annotations

from celery import shared_task

from dashboard.whatif.service import execute


@shared_task(
    name="dashboard.tasks.run_experiment",
    ignore_result=True,
    # Acknowledged once it ran, and given back to the queue when the process running it dies
    # (as the gate and history tasks): an experiment is not left "running" for ever with a
    # dead worker. Playing it again is safe: ``execute`` does nothing for one finished or
    # cancelled, leaves one another worker is still playing alone, and restarts a stalled one.
    acks_late=True,
    reject_on_worker_lost=True,
)
def run_experiment(experiment_id: int) -> None:
    execute(experiment_id)
