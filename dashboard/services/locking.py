"""One scheduling cycle at a time across every scheduler worker: a Redis lock with a TTL.

The TTL bounds how long a crashed worker can hold the lock; a failing cycle releases it at
once. A worker that does not get the lock skips the cycle instead of queueing behind it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TypeVar

import redis
from redis.exceptions import LockError

log = logging.getLogger(__name__)

CYCLE_LOCK = "sluice:scheduler:cycle-lock"
T = TypeVar("T")


def run_exclusively(
    client: redis.Redis, work: Callable[[], T], *, ttl: float, name: str = CYCLE_LOCK
) -> tuple[bool, T | None]:
    """Run ``work`` if no other worker holds ``name``; returns (ran, result)."""
    lock = client.lock(name, timeout=ttl, blocking=False)
    if not lock.acquire(blocking=False):
        log.info("another worker holds the lock; skipping", extra={"object": name})
        return False, None
    try:
        return True, work()
    finally:
        # The TTL may have expired during a very long cycle; then the lock is no longer ours.
        with contextlib.suppress(LockError):
            lock.release()
