"""Injected time: the same kubelet, autoscaler and engine code runs on the wall clock (optionally
sped up) and in virtual time (discrete events, SimPy-style).

Every clock answers ``now()`` in epoch seconds of *simulated* time.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float: ...


class WallClock:
    """Simulated time = ``start + (wall - wall_start) * speed``.

    ``speed=60`` runs a simulated minute per wall second; the scheduler and the simulation
    share one instance so they agree on how fast time passes.
    """

    def __init__(self, speed: float = 1.0, start: float | None = None) -> None:
        if speed <= 0:
            raise ValueError(f"clock speed must be positive, got {speed}")
        self.speed = speed
        self._wall_start = time.time()
        self.start = self._wall_start if start is None else start

    def now(self) -> float:
        return self.start + (time.time() - self._wall_start) * self.speed

    def sleep(self, simulated_seconds: float) -> None:
        """Sleep for a span of simulated time (shorter on the wall when sped up)."""
        time.sleep(max(0.0, simulated_seconds) / self.speed)

    def describe(self) -> dict[str, float]:
        """What another process needs to follow this clock (see ``follow``)."""
        wall = time.time()
        simulated = self.start + (wall - self._wall_start) * self.speed
        return {"speed": self.speed, "wallTime": wall, "simulatedTime": simulated}

    @classmethod
    def follow(cls, description: dict) -> WallClock:
        """A clock in another process that runs in step with the described one."""
        try:
            speed = float(description["speed"])
            simulated = float(description["simulatedTime"])
            wall = float(description["wallTime"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"clock description {description!r}: {exc}") from None
        return cls(speed, start=simulated + (time.time() - wall) * speed)


Callback = Callable[[], None]


class VirtualClock:
    """Discrete-event time: an event heap of ``(time, priority, counter, callback)``.

    The counter breaks ties so equal-time, equal-priority events run in scheduling order, and
    the seeded ``random`` makes every run with the same seed identical.
    """

    def __init__(self, start: float = 0.0, *, seed: int = 0) -> None:
        self._now = float(start)
        self._heap: list[tuple[float, int, int, Callback]] = []
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self.random = random.Random(seed)

    def now(self) -> float:
        return self._now

    def schedule(self, at: float, callback: Callback, *, priority: int = 0) -> None:
        """Run ``callback`` at simulated time ``at`` (never in the past)."""
        with self._lock:
            heapq.heappush(
                self._heap, (max(at, self._now), priority, next(self._counter), callback)
            )

    def call_later(self, delay: float, callback: Callback, *, priority: int = 0) -> None:
        self.schedule(self._now + delay, callback, priority=priority)

    def pending(self) -> int:
        return len(self._heap)

    def run_until(self, until: float) -> None:
        """Run every event due up to ``until`` in order, then leave the clock at ``until``."""
        while True:
            with self._lock:
                if not self._heap or self._heap[0][0] > until:
                    break
                at, _, _, callback = heapq.heappop(self._heap)
            self._now = at
            callback()
        self._now = max(self._now, until)

    def advance(self, seconds: float) -> None:
        self.run_until(self._now + seconds)
