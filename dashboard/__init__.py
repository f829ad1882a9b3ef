"""Sluice's Django side: settings, the Celery app, views, tasks and models."""

from dashboard.celery import app as celery_app

__all__ = ["celery_app"]
