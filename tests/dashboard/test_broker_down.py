"""Redis (the Celery broker) down: the web says so — ``/healthz/ready`` names it, every page's
banner says what waits for it — and the scheduler's leader does without it: a gate removal it
cannot send is made by its own pool, a report it cannot send is stored by itself. Redis up again,
the banner goes and the work goes through Redis again. (The whole stack through a Redis restart:
tests/e2e/test_redis_restart.py.)"""

from __future__ import annotations

import time

import pytest
import redis
from django.urls import reverse

from dashboard import health, kube
from dashboard.celery import app
from dashboard.models import Cycle
from dashboard.tasks import gates, scheduling, sending
from scheduler.api.report import CycleReport
from tests.builders import GATE, T0, body, cycle_report, pod
from tests.conftest import wait_until
from tests.dashboard.tasks.test_scheduling import point_at, use_broker
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture


@pytest.fixture
def broker_down(settings, free_port):
    url = f"redis://127.0.0.1:{free_port}/0"  # nothing listens: refused at once
    settings.CELERY_BROKER_URL = url
    previous = app.conf.broker_url
    use_broker(url)
    sending.reset()
    yield url
    sending.reset()
    use_broker(previous)


@pytest.mark.django_db
def test_ready_names_redis_where_it_is_expected(client, broker_down):
    response = client.get(reverse("healthz-ready"))

    body_ = response.json()
    assert response.status_code == 503
    port = broker_down.rsplit(":", 1)[1].split("/")[0]
    assert body_["message"].startswith(f"Redis (the Celery broker, 127.0.0.1:{port}) does not")
    assert "Connection refused" in body_["broker"]["message"]


@pytest.mark.django_db
def test_every_page_says_redis_is_down_while_it_is(client, settings, broker_down, redis_url):
    for name in ("overview", "pods", "history", "scheduler-banner"):
        page = client.get(reverse(name)).content.decode()
        assert 'id="broker-down"' in page and "Redis does not answer." in page, name

    settings.CELERY_BROKER_URL = redis_url
    page = client.get(reverse("overview")).content.decode()
    assert 'id="broker-down"' not in page


def test_the_pages_ask_redis_at_most_every_two_seconds(settings, broker_down, monkeypatch):
    asked = []
    monkeypatch.setattr(health, "broker_status", lambda: asked.append(1) or {"reachable": False})
    monkeypatch.setattr(health, "_page_broker_status", None)

    for _ in range(5):
        health.broker_status_for_pages()

    assert len(asked) == 1


def test_a_gate_removal_the_broker_refuses_is_made_in_this_process(
    settings,
    sim,  # noqa: F811
    tmp_path,
    broker_down,
):
    created = sim.core.create_namespaced_pod(
        "default", body(pod("gated", namespace="default", gates=[GATE], opt_in=True))
    )
    point_at(settings, sim, tmp_path)
    try:
        gates.queue_gate_removal("default", "gated", created.metadata.uid)

        wait_until(
            lambda: not sim.core.read_namespaced_pod("gated", "default").spec.scheduling_gates
        )
        # The next removals skip the broker for a while instead of waiting out its retries.
        started = time.monotonic()
        gates.queue_gate_removal("default", "gated", created.metadata.uid)
        assert time.monotonic() - started < 0.2
    finally:
        kube.api_client.cache_clear()


@pytest.mark.django_db
def test_a_report_the_broker_refuses_is_stored_by_the_scheduler_itself(broker_down):
    report = CycleReport.from_json(cycle_report(T0, cluster="uid-a"))

    scheduling._record(redis.Redis.from_url(broker_down), report)

    assert Cycle.objects.filter(cluster="uid-a").count() == 1


@pytest.mark.django_db
def test_once_the_broker_answers_again_the_work_goes_through_it(settings, redis_url):
    previous = app.conf.broker_url
    use_broker(redis_url)
    settings.CELERY_BROKER_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    client.delete("default")
    sending.reset()
    report = CycleReport.from_json(cycle_report(T0, cluster="uid-b"))

    scheduling._record(client, report)

    assert Cycle.objects.filter(cluster="uid-b").count() == 0  # sent: a worker stores it
    assert client.llen("default") == 1
    client.delete("default")
    use_broker(previous)
