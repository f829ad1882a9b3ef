"""The Celery app: workers for queue ``scheduler`` (the scheduling loop), ``gates`` and ``default``."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, bootsteps

from dashboard.services.heartbeat import WorkerPresence

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


class SchedulerLeadership(bootsteps.StartStopStep):
    """A worker bootstep: a worker consuming queue ``scheduler`` campaigns for the Lease from
    its start (``SLUICE_LEADER_ELECT``: ``dashboard.tasks.scheduling.LeaderLoop``) and, when it
    stops, releases it. A worker step, not a consumer step: the consumer restarts when the
    broker's connection drops, and a Redis outage must not depose the leader."""

    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.started = False

    def start(self, worker: Any) -> None:
        from django.conf import settings

        from dashboard.tasks import scheduling  # the app's tasks need Django set up first

        queues = set(worker.app.amqp.queues.consume_from or {})
        if settings.SLUICE_LEADER_ELECT and scheduling.SCHEDULER_QUEUE in queues:
            scheduling.start_leader_loop(worker.hostname)
            self.started = True

    def stop(self, worker: Any) -> None:
        if self.started:
            from dashboard.tasks import scheduling

            self.started = False
            scheduling.stop_leader_loop(release=True)

    def terminate(self, worker: Any) -> None:
        self.stop(worker)

    def shutdown(self, worker: Any) -> None:
        self.stop(worker)


app = Celery("sluice")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard"])
# Each worker records its name and queues in Redis for /healthz (no broadcast to wait on).
app.steps["consumer"].add(WorkerPresence)
# A scheduler worker campaigns for the Lease and, while it leads, schedules (leader election).
app.steps["worker"].add(SchedulerLeadership)
