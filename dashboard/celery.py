"""The Celery app: workers for queue ``scheduler`` (the scheduling loop), ``gates`` and ``default``."""

from __future__ import annotations

import os

from celery import Celery

from dashboard.services.heartbeat import WorkerPresence

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("sluice")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard"])
# Each worker records its name and queues in Redis for /healthz (no broadcast to wait on).
app.steps["consumer"].add(WorkerPresence)
