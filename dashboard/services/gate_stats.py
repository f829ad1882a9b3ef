"""Counters of gate removals, kept in Redis so every worker adds to the same figures.

The scheduler worker adds what its cycles queued and removed at bind; the ``gates`` workers add
the outcome of each asynchronous removal and every conflict they retried. The Scheduler page
reads them with :func:`snapshot`.
"""

from __future__ import annotations

import logging

import redis

from dashboard.health import broker_client

log = logging.getLogger(__name__)

KEY = "sluice:gates:counters"
COUNTERS = (
    "queued",  # removals a cycle queued to the gates workers
    "at_bind",  # removed synchronously by the bind path (the queued one had not run yet)
    "removed",  # removed by a gates worker
    "already_ungated",
    "pod_gone",
    "pod_replaced",
    "conflicts",  # 409s met (each one re-read and retried)
    "gave_up",  # still conflicting after every attempt
    "failed",  # the API server refused or was unreachable
    "deposed",  # dropped: the leader that queued it no longer holds the Lease
)


def add(counts: dict[str, int]) -> None:
    """Add to the counters; a Redis outage loses figures, never a gate removal."""
    counts = {k: v for k, v in counts.items() if v}
    if not counts:
        return
    unknown = set(counts) - set(COUNTERS)
    if unknown:
        raise ValueError(f"unknown gate counters: {', '.join(sorted(unknown))}")
    try:
        pipe = broker_client().pipeline()
        for name, value in counts.items():
            pipe.hincrby(KEY, name, value)
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("gate counters not updated: %s", exc, extra={"object": "redis"})


def read() -> dict[str, int]:
    """Every counter (zero when never incremented); ``redis.RedisError`` when Redis does not
    answer — for ``/metrics``, where zeros would read as a counter reset."""
    values = {k.decode(): int(v) for k, v in broker_client().hgetall(KEY).items()}
    return {name: values.get(name, 0) for name in COUNTERS}


def snapshot() -> dict[str, int]:
    """Every counter (zero when never incremented); empty when Redis is unreachable."""
    try:
        return read()
    except redis.RedisError:
        return {}
