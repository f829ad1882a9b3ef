"""Celery tasks. They stay thin: each calls a service and takes names, never objects."""

from __future__ import annotations

from celery import shared_task

from dashboard.health import record_heartbeat


@shared_task(name="dashboard.tasks.heartbeat", ignore_result=True, soft_time_limit=5, time_limit=10)
def heartbeat() -> None:
    """Sent by beat; proves beat, the broker and a worker are all alive (see /healthz)."""
    record_heartbeat()
