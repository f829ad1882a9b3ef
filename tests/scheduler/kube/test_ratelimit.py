"""The QPS limiter (Volcano's --kube-api-qps / --kube-api-burst)."""

from __future__ import annotations

import pytest

from scheduler.kube.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_burst_goes_at_once_then_requests_wait_their_turn():
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: clock.now, sleep=clock.sleep)
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.acquire() == pytest.approx(0.1)  # the fourth waits for a token at 10/s
    assert bucket.acquire() == pytest.approx(0.1)
    clock.now += 10  # idle: the bucket refills, never above its burst
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.acquire() > 0


def test_waiters_queue_up_rather_than_all_going_at_once():
    """Several requests arriving together with no token wait 1/qps apart, not all at once."""
    clock = Clock()
    bucket = TokenBucket(qps=100, burst=1, clock=lambda: clock.now, sleep=lambda s: None)
    bucket.acquire()
    waits = [bucket.acquire() for _ in range(3)]  # the clock does not move: they queue
    assert waits == pytest.approx([0.01, 0.02, 0.03])


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (float("nan"), 1), (float("inf"), 1),
                                           (1, 0)])  # fmt: skip
def test_a_limit_out_of_range_is_an_error_naming_the_flag(qps, burst):
    with pytest.raises(ValueError, match="kube-api-(qps|burst)"):
        TokenBucket(qps, burst)
