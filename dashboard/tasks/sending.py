"""Sending a task the scheduler cannot afford to lose while Redis (the broker) is down.

The scheduler's leader does not need Redis to schedule: the Lease, the cache and every write
are the cluster's. What it sends through the broker — gate removals (queue ``gates``) and its
cycles' reports (``store_cycle_report``) — it does itself while the broker does not take them,
so a Redis restart or outage stops neither: ``send`` says False and the caller does the work in
this process. After a refusal the broker is skipped for ``SKIP_S`` seconds, so a cycle does not
wait out Celery's publish retries (about 0.6 s) once per removal; then it is tried again.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import kombu.exceptions
import redis

log = logging.getLogger(__name__)

SKIP_S = 5.0
BROKER_ERRORS = (kombu.exceptions.OperationalError, redis.RedisError, OSError)

_lock = threading.Lock()
_down_until = 0.0


def send(task: Any, args: tuple, **options: Any) -> bool:
    """``task.apply_async(args, **options)`` (``task.delay(*args)`` without options); False
    when the broker refused it or was refused less than ``SKIP_S`` ago (the caller then does
    the work itself)."""
    global _down_until
    if time.monotonic() < _down_until:
        return False
    name = getattr(task, "name", repr(task))
    try:
        if options:
            task.apply_async(args, **options)
        else:
            task.delay(*args)
    except BROKER_ERRORS as exc:
        with _lock:
            first = _down_until == 0.0
            _down_until = time.monotonic() + SKIP_S
        level = logging.WARNING if first else logging.INFO
        log.log(level, "broker unreachable, %s done in this process: %s", name, exc,
                extra={"object": "redis"})  # fmt: skip
        return False
    with _lock:
        if _down_until:
            log.warning("broker reachable again: %s sent", name, extra={"object": "redis"})
        _down_until = 0.0
    return True


def reset() -> None:
    """Forget a past refusal (tests)."""
    global _down_until
    with _lock:
        _down_until = 0.0
