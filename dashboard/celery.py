"""The Celery app: workers for queue ``scheduler`` (the scheduling loop), ``gates`` and ``default``."""

from __future__ import annotations

import os
from typing import Any

import kombu.transport.redis
import redis
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


class RedisChannel(kombu.transport.redis.Channel):
    """kombu's Redis channel, telling a closed connection as a connection error.

    When a worker loses Redis (a restart), Celery 5.7.0 collects the broken connection
    (``Consumer.on_connection_error_after_connected``), which clears its transport's client,
    and then uses that connection's channel twice more: closing it restores the messages it
    delivered and were not acknowledged yet (a task running with ``acks_late``, a prefetched or
    countdown one), and a task that ends after the reconnection acknowledges its message on it.
    Both make a Redis client from the cleared one: ``AttributeError: 'NoneType' object has no
    attribute 'hostname'`` (kombu 5.7.0, ``Channel._connparams``), which neither the close's
    ``ignore_errors`` nor the acknowledgement's error handling expects (they catch connection
    errors), and the worker stopped ("Unrecoverable error") instead of reconnecting — seen with
    Redis restarted under a ``gates,default`` worker (tests/e2e/test_redis_restart.py). As a
    connection error, the close goes on and the acknowledgement is logged as failed; the
    message stays in Redis's unacked set, restored once older than the visibility timeout and
    run again (the tasks that ack late are idempotent)."""

    def _connparams(self, asynchronous: bool = False) -> dict:
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError(
                "the broker connection of this channel was closed (Redis went away)"
            )
        return super()._connparams(asynchronous=asynchronous)


class RedisTransport(kombu.transport.redis.Transport):
    """The Redis transport with ``RedisChannel`` (``CELERY_BROKER_TRANSPORT`` for redis:// URLs)."""

    Channel = RedisChannel


app = Celery("sluice")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard"])
# Each worker records its name and queues in Redis for /healthz (no broadcast to wait on).
app.steps["consumer"].add(WorkerPresence)
# A scheduler worker campaigns for the Lease and, while it leads, schedules (leader election).
app.steps["worker"].add(SchedulerLeadership)
