from __future__ import annotations

import time

import pytest

from scheduler.clock import Clock, VirtualClock, WallClock


def test_wall_clock_runs_faster_by_its_speed():
    clock = WallClock(speed=100.0, start=1000.0)
    time.sleep(0.05)
    elapsed = clock.now() - 1000.0
    assert 4.0 <= elapsed <= 30.0
    assert isinstance(clock, Clock)


def test_wall_clock_refuses_a_non_positive_speed():
    with pytest.raises(ValueError, match="speed"):
        WallClock(speed=0)


def test_virtual_clock_runs_events_in_time_then_priority_then_insertion_order():
    clock = VirtualClock(10.0)
    seen: list[tuple[str, float]] = []
    clock.schedule(12.0, lambda: seen.append(("late", clock.now())))
    clock.schedule(11.0, lambda: seen.append(("b", clock.now())), priority=1)
    clock.schedule(11.0, lambda: seen.append(("a", clock.now())), priority=0)
    clock.schedule(11.0, lambda: seen.append(("a2", clock.now())), priority=0)
    clock.run_until(11.5)
    assert seen == [("a", 11.0), ("a2", 11.0), ("b", 11.0)]
    assert clock.now() == 11.5
    clock.advance(1.0)
    assert seen[-1] == ("late", 12.0) and clock.now() == 12.5


def test_virtual_clock_events_can_schedule_more_events():
    clock = VirtualClock()
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(clock.now())
        if len(ticks) < 3:
            clock.call_later(5.0, tick)

    clock.call_later(5.0, tick)
    clock.run_until(100.0)
    assert ticks == [5.0, 10.0, 15.0]


def test_virtual_clock_random_is_seeded():
    assert VirtualClock(seed=7).random.random() == VirtualClock(seed=7).random.random()
