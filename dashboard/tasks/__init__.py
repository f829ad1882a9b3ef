"""Celery tasks, one module per concern; importing this package registers them all."""

from dashboard.tasks.health import heartbeat

__all__ = ["heartbeat"]
