"""Adversary, Part 15 (what-if lab): a worker killed mid-experiment.

Promise (issue: "It runs as a Celery task ... results stored"; settings.py: tasks are
``acks_late`` + ``reject_on_worker_lost`` so a task is "never lost with its worker"): an
experiment whose worker dies is played again by another worker, not left "running" for ever."""

from __future__ import annotations

from dashboard.tasks.whatif import run_experiment


def test_run_experiment_is_given_back_to_the_queue_when_its_worker_dies():
    """Sent: nothing — read the task's options. Today: run_experiment is a plain
    ``shared_task`` (acks_late False, reject_on_worker_lost None): Celery acknowledges the
    message before the task runs, so a worker SIGKILLed mid-experiment loses it and the
    Experiment row stays status=running with a frozen progress bar for ever (no reaper
    exists: service.execute is the only writer of running/done/failed). Fault:
    dashboard/tasks/whatif.py (the gate and history tasks set both options)."""
    assert run_experiment.acks_late is True
    assert run_experiment.reject_on_worker_lost is True
