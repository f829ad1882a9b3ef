"""run_cycle through a real Celery worker and a real Redis broker, against the simulated
cluster: the worker keeps its SchedulerService, binds pods, and survives a missing cluster."""

from __future__ import annotations

import base64
import json
import logging
import zlib

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from django.db import OperationalError

from dashboard import kube
from dashboard.celery import app
from dashboard.tasks import scheduling
from dashboard.tasks.history import store_cycle_report
from tests.builders import body, pod
from tests.conftest import wait_until
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture
from tests.scheduler.test_service import bound_nodes, create_cluster


@pytest.fixture
def scheduler_worker(settings, redis_url):
    """A worker running each cycle beat sends under the Redis cycle lock; the leader-elected
    workers are in tests/dashboard/test_celery_leader_election.py."""
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_MODE = "act"
    settings.SLUICE_LEADER_ELECT = False
    previous = app.conf.broker_url
    use_broker(redis_url)
    with start_worker(app, pool="solo", queues=["scheduler"], perform_ping_check=False):
        yield
    scheduling.reset_scheduler_service()
    kube.api_client.cache_clear()
    use_broker(previous)


def use_broker(url: str) -> None:
    """Point the Celery app at ``url``, dropping connections pooled for an earlier broker."""
    app.close()
    app.amqp._producer_pool = None
    app.conf.broker_url = url


def point_at(settings, cluster, tmp_path) -> None:
    settings.SLUICE_KUBECONFIG = str(cluster.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()


def test_the_worker_runs_cycles_that_bind_pods(settings, sim, tmp_path, scheduler_worker):  # noqa: F811
    create_cluster(sim, pods=3)
    point_at(settings, sim, tmp_path)

    scheduling.run_cycle.apply_async(queue="scheduler")

    wait_until(lambda: all(bound_nodes(sim).values()), timeout=20)
    service = scheduling.scheduler_service()
    sim.core.create_namespaced_pod("default", body(pod("late")))
    wait_until(lambda: len(service.cache.snapshot().jobs) == 4)

    scheduling.run_cycle.apply_async(queue="scheduler")

    wait_until(lambda: bound_nodes(sim).get("late"), timeout=20)
    assert scheduling.scheduler_service() is service  # one long-lived cache per worker


def test_a_cycle_without_a_cluster_logs_and_returns(settings, tmp_path, caplog):
    # A Celery worker started by an earlier test may have raised the root logger's level.
    caplog.set_level(logging.WARNING, logger="dashboard.tasks.scheduling")
    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")
    settings.SLUICE_LEADER_ELECT = False
    kube.api_client.cache_clear()
    scheduling.reset_scheduler_service()

    assert scheduling.run_cycle() is None
    assert "no cycle: no cluster configured" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_each_cycle_report_reaches_the_history_through_celery(
    settings,
    sim,  # noqa: F811
    tmp_path,
    redis_url,
):
    from dashboard.models import Cycle, PodTransition

    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_MODE = "act"
    settings.SLUICE_LEADER_ELECT = False  # a cycle per message, under the cycle lock
    previous = app.conf.broker_url
    use_broker(redis_url)
    create_cluster(sim, pods=2)
    point_at(settings, sim, tmp_path)
    try:
        with start_worker(
            app, pool="solo", queues=["scheduler", "default"], perform_ping_check=False
        ):
            scheduling.run_cycle.apply_async(queue="scheduler")
            # The test database is SQLite shared between this thread and the worker's: a read
            # while the worker writes may find the table locked; that is "not yet".
            wait_until(lambda: quietly(lambda: Cycle.objects.exists()), timeout=20, interval=0.2)
            wait_until(
                lambda: (
                    quietly(lambda: PodTransition.objects.filter(to_state="binding").count()) == 2
                ),
                interval=0.2,
            )
    finally:
        scheduling.reset_scheduler_service()
        kube.api_client.cache_clear()
        use_broker(previous)
    cycle = Cycle.objects.get()
    assert cycle.mode == "act" and cycle.decisions == 2


def quietly(read):
    try:
        return read()
    except OperationalError:
        return None


def test_cycle_reports_travel_to_redis_compressed(redis_url):
    waiting = [
        {"namespace": "team", "name": f"pod-{i}", "uid": f"uid-{i}", "queue": "q", "gated": True,
         "reason": "queue resource quota insufficient: insufficient cpu"}
        for i in range(2000)
    ]  # fmt: skip
    report = {"started_at": 1.0, "waiting": waiting}
    previous = app.conf.broker_url
    use_broker(redis_url)
    try:
        store_cycle_report.apply_async((report,), queue="compression-check")
    finally:
        use_broker(previous)
    raw = redis.Redis.from_url(redis_url).lpop("compression-check")
    message = json.loads(raw)
    assert message["headers"]["compression"] == "application/x-gzip"
    body = zlib.decompress(base64.b64decode(message["body"]))
    assert json.loads(body)[0] == [report]
    assert len(body) > 10 * len(message["body"])  # what Redis holds is a tenth or less
