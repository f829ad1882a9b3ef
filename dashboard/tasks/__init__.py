"""Celery tasks, one module per concern; importing this package registers them all."""

from dashboard.tasks.admission import refresh_capacity_snapshot  # noqa: F401
from dashboard.tasks.gates import remove_gate
from dashboard.tasks.health import heartbeat
from dashboard.tasks.history import prune_history, store_cycle_report  # noqa: F401
from dashboard.tasks.scheduling import run_cycle
from dashboard.tasks.whatif import run_experiment  # noqa: F401

__all__ = ["heartbeat", "remove_gate", "run_cycle"]
