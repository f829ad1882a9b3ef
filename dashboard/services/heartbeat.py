"""What the scheduler leader and the Celery workers say about themselves, in Redis, so that
``/healthz`` reads it in a round trip instead of broadcasting to the workers and waiting.

The leader is the worker that holds the Lease (``dashboard.tasks.scheduling``, leader election)
or, with ``SLUICE_LEADER_ELECT=false``, the cycle lock (``dashboard.services.locking``). It beats
when its cycle starts, every half period while the cycle runs (a long cycle is not a dead
leader) and when the cycle ends; between cycles, beat sends the next one a period later. Each
beat sets ``ALIVE_KEY`` with a time to live of ``ALIVE_PERIODS`` (1.8) periods: a leader that
stops lets it expire less than two periods after its last beat, whatever the delay of the probe
that asks, measured by Redis's clock (no skew between the worker's and the web server's
clocks); a leader that beats every period has 0.8 of a period to spare. A successful cycle
sets ``SUCCESS_KEY`` the same way. The details
(who, when, the last error, since when cycles fail) are in the hash ``LEADER_KEY``, kept a day
so that ``/healthz/scheduler`` can say since when the leader is gone.

Every Celery worker records its name and queues in the hash ``WORKERS_KEY`` every few seconds
(:class:`WorkerPresence`, a consumer bootstep) and removes itself when it stops.

A Redis outage never stops a cycle: a beat that cannot be written is logged and skipped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis
from celery import bootsteps

log = logging.getLogger(__name__)

LEADER_KEY = "sluice:scheduler:leader"
ALIVE_KEY = "sluice:scheduler:leader-alive"
SUCCESS_KEY = "sluice:scheduler:recent-success"
ALIVE_PERIODS = 1.8
LEADER_RETENTION_S = 86400  # how long the details outlive the last beat
WORKERS_KEY = "sluice:workers"
PRESENCE_INTERVAL_S = 5.0
PRESENCE_TTL_S = 30.0  # a worker's entry is stale after this (a solo worker busy with a cycle
# refreshes it only between tasks)
PRESENCE_RETENTION_S = 86400  # stale entries older than this are removed when a worker starts

_REDIS_ERRORS = (redis.RedisError, OSError)


def worker_identity(hostname: str | None = None) -> str:
    """The Celery node name (``scheduler@host``) when known, else the host; with the pid."""
    return f"{hostname or socket.gethostname()} pid {os.getpid()}"


@dataclass
class CycleOutcome:
    """Set ``error`` to say the cycle failed (a failed report); an exception does it too."""

    error: str = ""


@dataclass
class LeaderHeartbeat:
    """The heartbeat of the worker running cycles; ``period`` is ``SLUICE_CYCLE_PERIOD``."""

    client: redis.Redis
    worker: str
    period: float
    clock: Callable[[], float] = time.time
    # With leader election: a beat is written only while this worker holds the Lease, so a
    # leader deposed in the middle of a cycle says nothing more (its successor beats).
    leading: Callable[[], bool] | None = None
    _warned: bool = field(default=False, repr=False)

    @property
    def alive_ms(self) -> int:
        return max(1, round(ALIVE_PERIODS * self.period * 1000))

    @contextlib.contextmanager
    def cycle(self) -> Iterator[CycleOutcome]:
        """Around one cycle run under the cycle lock: beats at the start, every half period
        while it runs, and records how it ended."""
        outcome = CycleOutcome()
        self._write(cycle_started_at=self.clock())
        stop = threading.Event()
        keepalive = threading.Thread(
            target=self._keep_alive, args=(stop,), name="sluice-leader-heartbeat", daemon=True
        )
        keepalive.start()
        try:
            yield outcome
        except BaseException as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            stop.set()
            keepalive.join(timeout=5)
            self._finished(outcome.error)

    def failed(self, error: str) -> None:
        """A cycle that could not even start (no configuration, no cluster): the worker is
        alive, and cycles fail."""
        self._finished(error or "cycle failed")

    def _keep_alive(self, stop: threading.Event) -> None:
        interval = max(0.05, self.period / 2)
        while not stop.wait(interval):
            self._write()

    def _finished(self, error: str) -> None:
        now = self.clock()
        if error:
            fields = {"last_cycle_at": now, "last_error": error[:2000], "last_error_at": now}
            self._write(failed=True, clear=("cycle_started_at",), **fields)
        else:
            self._write(
                succeeded=True,
                clear=("cycle_started_at", "failing_since", "failed_cycles_in_a_row"),
                last_cycle_at=now,
                last_success_at=now,
            )

    def _write(
        self,
        *,
        failed: bool = False,
        succeeded: bool = False,
        clear: tuple[str, ...] = (),
        **fields: float | str,
    ) -> None:
        if self.leading is not None and not self.leading():
            return
        now = self.clock()
        mapping = {
            "worker": self.worker,
            "heartbeat_at": repr(now),
            "period_s": repr(float(self.period)),
            **{k: v if isinstance(v, str) else repr(v) for k, v in fields.items()},
        }
        try:
            pipe = self.client.pipeline(transaction=True)
            if clear:
                pipe.hdel(LEADER_KEY, *clear)
            pipe.hset(LEADER_KEY, mapping=mapping)
            if failed:
                pipe.hsetnx(LEADER_KEY, "failing_since", repr(now))
                pipe.hincrby(LEADER_KEY, "failed_cycles_in_a_row", 1)
            pipe.expire(LEADER_KEY, LEADER_RETENTION_S)
            pipe.set(ALIVE_KEY, self.worker, px=self.alive_ms)
            if succeeded:
                pipe.set(SUCCESS_KEY, repr(now), px=self.alive_ms)
            pipe.execute()
            self._warned = False
        except _REDIS_ERRORS as exc:
            if not self._warned:  # once per outage, not once per half period
                log.warning("heartbeat not recorded: %s", exc, extra={"object": LEADER_KEY})
                self._warned = True


def record_worker(client: redis.Redis, hostname: str, queues: list[str]) -> None:
    entry = {"queues": sorted(queues), "at": time.time(), "pid": os.getpid()}
    client.hset(WORKERS_KEY, hostname, json.dumps(entry))


def forget_worker(client: redis.Redis, hostname: str) -> None:
    client.hdel(WORKERS_KEY, hostname)


def prune_workers(client: redis.Redis, now: float | None = None) -> None:
    """Remove entries of workers gone for more than ``PRESENCE_RETENTION_S``."""
    now = time.time() if now is None else now
    stale = [
        name
        for name, raw in client.hgetall(WORKERS_KEY).items()
        if now - _entry_time(raw) > PRESENCE_RETENTION_S
    ]
    if stale:
        client.hdel(WORKERS_KEY, *stale)


def _entry_time(raw: bytes | str) -> float:
    try:
        return float(json.loads(raw)["at"])
    except (ValueError, KeyError, TypeError):
        return 0.0


class WorkerPresence(bootsteps.StartStopStep):
    """A consumer bootstep: the worker's name and queues in ``WORKERS_KEY``, refreshed every
    ``PRESENCE_INTERVAL_S`` by the worker's timer, removed when the consumer stops."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.tref: Any = None
        self.client: redis.Redis | None = None

    def start(self, c: Any) -> None:
        try:
            self.client = redis.Redis.from_url(
                c.app.conf.broker_url, socket_timeout=1.0, socket_connect_timeout=1.0
            )
        except ValueError:  # not a Redis broker: nothing to record into
            return
        consumer = getattr(c, "task_consumer", None)
        if consumer is not None and consumer.queues:
            queues = [q.name for q in consumer.queues]
        else:
            queues = list(c.app.amqp.queues.consume_from or {})
        hostname = c.hostname

        def refresh() -> None:
            try:
                record_worker(self.client, hostname, queues)
            except _REDIS_ERRORS as exc:
                log.debug("presence not recorded: %s", exc, extra={"object": hostname})

        with contextlib.suppress(*_REDIS_ERRORS):
            prune_workers(self.client)
        refresh()
        self.tref = c.timer.call_repeatedly(PRESENCE_INTERVAL_S, refresh)

    def stop(self, c: Any) -> None:
        if self.tref is not None:
            c.timer.cancel(self.tref)
            self.tref = None
        if self.client is not None:
            with contextlib.suppress(*_REDIS_ERRORS):
                forget_worker(self.client, c.hostname)

    def shutdown(self, c: Any) -> None:
        self.stop(c)
