"""A token bucket for the requests the scheduler sends: client-go's ``flowcontrol`` rate limiter
that Volcano's ``--kube-api-qps`` / ``--kube-api-burst`` configure (defaults 2000 / 2000 at
Volcano's pinned commit, cmd/scheduler/app/options/options.go). Blocking: a request waits for its
token instead of failing."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

DEFAULT_QPS = 2000.0
DEFAULT_BURST = 2000


class TokenBucket:
    def __init__(
        self,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not (math.isfinite(qps) and qps > 0):
            raise ValueError(f"kube-api-qps: expected a number > 0, got {qps!r}")
        if burst < 1:
            raise ValueError(f"kube-api-burst: expected an integer >= 1, got {burst!r}")
        self.qps, self.burst = float(qps), int(burst)
        self._clock, self._sleep = clock, sleep
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, waiting as long as needed; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0  # reserved now; a negative balance is the queue of waiters
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait
