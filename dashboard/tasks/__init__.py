"""Celery tasks, one module per concern; importing this package registers them all."""

from dashboard.tasks.gates import remove_gate
from dashboard.tasks.health import heartbeat
from dashboard.tasks.scheduling import run_cycle

__all__ = ["heartbeat", "remove_gate", "run_cycle"]
