"""Reachability checks for ``/healthz``: the database, the broker, Celery workers and beat,
and whether the scheduler's cycles succeed."""

from __future__ import annotations

import time
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.db.utils import Error as DatabaseError

from dashboard.celery import app
from dashboard.selectors.cycles import cycle_failure, recent_cycles

HEARTBEAT_KEY = "sluice:beat:heartbeat"


def database_status() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"reachable": True, "vendor": connection.vendor}
    except DatabaseError as exc:
        return {"reachable": False, "error": str(exc)}


def broker_client(timeout: float = 1.0) -> redis.Redis:
    return redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_timeout=timeout, socket_connect_timeout=timeout
    )


def broker_status() -> dict[str, Any]:
    try:
        broker_client().ping()
        return {"reachable": True}
    except (redis.RedisError, OSError) as exc:
        return {"reachable": False, "error": str(exc)}


def workers_status(timeout: float = 0.5) -> dict[str, Any]:
    """Which Celery workers answer a ping, and which queues they consume."""
    try:
        with app.connection_for_write(url=settings.CELERY_BROKER_URL) as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
            inspect = app.control.inspect(timeout=timeout, connection=conn)
            replies = inspect.active_queues() or {}
    except (redis.RedisError, OSError, ConnectionError) as exc:
        return {"connected": [], "error": str(exc)}
    return {
        "connected": sorted(replies),
        "queues": sorted({q["name"] for queues in replies.values() for q in queues}),
    }


def beat_status() -> dict[str, Any]:
    """Celery beat sends ``heartbeat`` every 10 s; a worker stores the time it ran."""
    try:
        value = broker_client().get(HEARTBEAT_KEY)
    except (redis.RedisError, OSError) as exc:
        return {"alive": False, "error": str(exc)}
    if value is None:
        return {"alive": False, "last_heartbeat_age_s": None}
    age = time.time() - float(value)
    return {"alive": age < 30, "last_heartbeat_age_s": round(age, 1)}


def record_heartbeat() -> None:
    broker_client().set(HEARTBEAT_KEY, str(time.time()), ex=300)


def scheduler_status() -> dict[str, Any]:
    """The latest stored cycle: when, and whether cycles are failing (and with what error)."""
    try:
        failure = cycle_failure()
        if failure is not None:
            return failure.to_json()
        latest = recent_cycles(1)
    except DatabaseError as exc:
        return {"error": str(exc)}
    at = latest[0].started_at.isoformat() if latest else None
    return {"failing": False, "latest_cycle_at": at}


def health_report() -> tuple[dict[str, Any], bool]:
    """The report and whether the essentials (database and broker) are reachable.

    Status ``degraded`` (still HTTP 200: the pages and the webhook work) says the latest
    scheduling cycle failed; ``scheduler`` says since when and why.
    """
    report: dict[str, Any] = {"database": database_status(), "broker": broker_status()}
    if report["broker"]["reachable"]:
        report["workers"] = workers_status()
        report["beat"] = beat_status()
    if report["database"]["reachable"]:
        report["scheduler"] = scheduler_status()
    healthy = report["database"]["reachable"] and report["broker"]["reachable"]
    failing = bool(report.get("scheduler", {}).get("failing"))
    report["status"] = "unavailable" if not healthy else "degraded" if failing else "ok"
    return report, healthy
