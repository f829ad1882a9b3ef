"""Health, for probes and alerts, without waiting on anything slow.

- ``/healthz``: liveness. The web process serves requests; it reads nothing (no database, no
  broker, no cluster), so it answers in about a millisecond whatever else is down.
- ``/healthz/ready``: readiness. The database and the broker (Redis) answer, each within
  ``HEALTH_TIMEOUT_S``; 503 otherwise, saying which and why (``message``). The pages' banner
  says so too while Redis does not answer (``broker_status_for_pages``).
- ``/healthz/scheduler``: for alerts. The scheduler leader beats and its cycles succeed (503
  otherwise, saying which and since when), with the Celery workers and beat for context.

Every figure is read in one round trip: the database's ``SELECT 1``, or one pipeline of Redis
reads. The workers record themselves (``dashboard.services.heartbeat``) instead of being asked
to answer a broadcast, which used to cost a second per request.
"""

from __future__ import annotations

import functools
import json
import queue
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import Error as DatabaseError

from dashboard.services.heartbeat import (
    ALIVE_KEY,
    ALIVE_PERIODS,
    LEADER_KEY,
    PRESENCE_TTL_S,
    SUCCESS_KEY,
    WORKERS_KEY,
)

HEARTBEAT_KEY = "sluice:beat:heartbeat"
BEAT_INTERVAL_S = 10.0  # CELERY_BEAT_SCHEDULE["heartbeat"]
BEAT_ALIVE_S = 30.0  # three of beat's heartbeats missed
# Seconds a health check waits for Redis or the database: a probe must get its answer within
# its own timeout (1 s by default in Kubernetes) even when they do not answer.
HEALTH_TIMEOUT_S = 0.5
SCHEDULER_QUEUE = "scheduler"  # CELERY_TASK_ROUTES["dashboard.tasks.run_cycle"]
_REDIS_ERRORS = (redis.RedisError, OSError)


def broker_client(timeout: float = 1.0) -> redis.Redis:
    return redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_timeout=timeout, socket_connect_timeout=timeout
    )


@functools.lru_cache(maxsize=4)
def _health_client(url: str) -> redis.Redis:
    """One client (and connection pool) per broker URL for health reads: no new connection
    per request, and no retry with backoff when Redis is down — that is the answer."""
    return redis.Redis.from_url(
        url,
        socket_timeout=HEALTH_TIMEOUT_S,
        socket_connect_timeout=HEALTH_TIMEOUT_S,
        retry=None,
    )


def health_client() -> redis.Redis:
    return _health_client(settings.CELERY_BROKER_URL)


# -- the database -----------------------------------------------------------------------------


def _select_one() -> str:
    """``SELECT 1`` on this thread's connection; the database's vendor."""
    connection = connections[DEFAULT_DB_ALIAS]
    connection.close_if_unusable_or_obsolete()  # after an error, or CONN_MAX_AGE
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return str(connection.vendor)


class _DatabaseProbe:
    """Runs the database check on a thread of its own and waits for it ``HEALTH_TIMEOUT_S``
    at most: a database that does not answer (a server stuck, packets dropped on the way) is
    reported within the probe's time instead of holding the request for the TCP timeout. One
    check at a time: while one is stuck, the next requests wait on it (saying how long it has
    waited) instead of queueing more. The thread keeps its connection between checks (as a
    request thread does, up to ``CONN_MAX_AGE``) and is a daemon: a check stuck at exit does not
    hold the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checks: queue.SimpleQueue[Future[str]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending: Future[str] | None = None
        self._started = 0.0

    def _serve(self) -> None:
        while True:
            check = self._checks.get()
            if check.set_running_or_notify_cancel():
                try:
                    check.set_result(_select_one())
                except BaseException as exc:  # the waiting request reports it
                    check.set_exception(exc)

    def start(self) -> tuple[Future[str], float]:
        """The check under way (a new one unless one still waits), and when it started."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():  # first, or after a fork
                self._checks = queue.SimpleQueue()
                self._pending = None  # a check the parent process was running, if any
                self._thread = threading.Thread(
                    target=self._serve, name="sluice-db-health", daemon=True
                )
                self._thread.start()
            if self._pending is None or self._pending.done():
                self._pending = Future()
                self._started = time.monotonic()
                self._checks.put(self._pending)
            return self._pending, self._started

    @staticmethod
    def result(check: tuple[Future[str], float], deadline: float) -> dict[str, Any]:
        """The check's answer, waited for until ``deadline`` (``time.monotonic()``)."""
        pending, started = check
        try:
            vendor = pending.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            waited = time.monotonic() - started
            return {"reachable": False, "error": f"no answer to SELECT 1 for {waited:.1f} s"}
        except DatabaseError as exc:
            return {"reachable": False, "error": str(exc)}
        except Exception as exc:  # a misconfigured backend, say: still an answer, not a 500
            return {"reachable": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"reachable": True, "vendor": vendor}


_database_probe = _DatabaseProbe()


def broker_where() -> str:
    """The broker's host and port (never its password)."""
    url = urlsplit(settings.CELERY_BROKER_URL)
    return f"{url.hostname or 'localhost'}:{url.port or 6379}"


def broker_status() -> dict[str, Any]:
    """``reachable``; when not, ``error`` and ``message`` (naming Redis, where it is expected,
    and what waits for it)."""
    try:
        health_client().ping()
        return {"reachable": True}
    except _REDIS_ERRORS as exc:
        return {
            "reachable": False,
            "error": str(exc),
            "message": f"Redis (the Celery broker, {broker_where()}) does not answer: {exc}",
        }


# The pages' banner asks at most this often per process: a page, or the banner's refresh, costs
# no round trip to Redis most of the time, and at most HEALTH_TIMEOUT_S when it does not answer.
BROKER_STATUS_CACHE_S = 2.0
_page_broker_status: tuple[float, str, dict[str, Any]] | None = None


def broker_status_for_pages() -> dict[str, Any]:
    """``broker_status()``, as read less than ``BROKER_STATUS_CACHE_S`` ago by this process."""
    global _page_broker_status
    now, url = time.monotonic(), settings.CELERY_BROKER_URL
    cached = _page_broker_status
    if cached is not None and cached[1] == url and now - cached[0] < BROKER_STATUS_CACHE_S:
        return cached[2]
    status = broker_status()
    _page_broker_status = (now, url, status)
    return status


def readiness() -> tuple[dict[str, Any], bool]:
    """``/healthz/ready``: the database and the broker, what the pages and the workers need.
    Both are asked at once (the database on its thread), so the answer comes within
    ``HEALTH_TIMEOUT_S`` and a little even when neither answers."""
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    database = _database_probe.start()
    broker = broker_status()
    report: dict[str, Any] = {"database": _database_probe.result(database, deadline)}
    report["broker"] = broker
    ready = report["database"]["reachable"] and report["broker"]["reachable"]
    report["status"] = "ready" if ready else "unavailable"
    if not ready:
        down = [report["broker"]["message"]] if not report["broker"]["reachable"] else []
        if not report["database"]["reachable"]:
            down.insert(0, f"the database does not answer: {report['database']['error']}")
        report["message"] = "; ".join(down)
    return report, ready


# -- the scheduler ----------------------------------------------------------------------------


def record_heartbeat() -> None:
    """Beat sends ``heartbeat`` every ``BEAT_INTERVAL_S``; a worker runs it (queue default)."""
    broker_client().set(HEARTBEAT_KEY, str(time.time()), ex=300)


def _read_scheduler_keys() -> tuple[dict[str, str], bool, bool, dict[bytes, bytes], Any]:
    """The leader's hash, whether its beat and a success are recent, the workers' entries and
    beat's heartbeat: one round trip."""
    pipe = health_client().pipeline(transaction=False)
    pipe.hgetall(LEADER_KEY)
    pipe.exists(ALIVE_KEY)
    pipe.exists(SUCCESS_KEY)
    pipe.hgetall(WORKERS_KEY)
    pipe.get(HEARTBEAT_KEY)
    raw, alive, recent_success, workers, beat = pipe.execute()
    fields = {k.decode(): v.decode() for k, v in raw.items()}
    return fields, bool(alive), bool(recent_success), workers, beat


def _workers(entries: dict[bytes, bytes], now: float) -> dict[str, Any]:
    live: dict[str, list[str]] = {}
    for name, raw in entries.items():
        try:
            entry = json.loads(raw)
            if now - float(entry["at"]) <= PRESENCE_TTL_S:
                live[name.decode()] = list(entry.get("queues") or [])
        except (ValueError, KeyError, TypeError):
            continue
    return {
        "connected": sorted(live),
        "queues": sorted({q for queues in live.values() for q in queues}),
    }


def _beat(value: bytes | None, now: float) -> dict[str, Any]:
    if value is None:
        return {"alive": False, "last_heartbeat_age_s": None}
    age = now - float(value)
    return {"alive": age < BEAT_ALIVE_S, "last_heartbeat_age_s": round(age, 1)}


def _iso(value: float | None) -> str | None:
    return datetime.fromtimestamp(value, tz=UTC).isoformat() if value is not None else None


def _number(fields: dict[str, str], name: str) -> float | None:
    try:
        return float(fields[name]) if fields.get(name) else None
    except ValueError:
        return None


def leader_status(now: float | None = None) -> dict[str, Any]:
    """Whether the scheduler is up (``scheduler_health`` without the workers and beat)."""
    now = time.time() if now is None else now
    try:
        fields, alive, recent_success, _, _ = _read_scheduler_keys()
    except _REDIS_ERRORS as exc:
        return _down("broker_unreachable", None, f"the heartbeat cannot be read: {exc}")
    return _leader(fields, alive, recent_success, now)


def _leader(
    fields: dict[str, str], alive: bool, recent_success: bool, now: float
) -> dict[str, Any]:
    """The leader's heartbeat is fresh and its last successful cycle recent, both younger than
    ``ALIVE_PERIODS`` (1.8) cycle periods (the time to live of ``ALIVE_KEY`` and
    ``SUCCESS_KEY``, which the leader sets): down within two periods.

    ``up`` is False with ``reason`` (``broker_unreachable``, ``no_heartbeat``,
    ``heartbeat_stale``, ``cycles_failing``, ``cycle_stuck`` or ``no_successful_cycle``),
    ``since`` (an ISO time, None when unknown) and ``message`` saying it in words. A cycle
    longer than that is not "down" while the leader beats, the cycle before it succeeded and
    it has run for less than the cycle lock's time to live.
    """
    if not fields:
        return _down("no_heartbeat", None, "no scheduler worker has run a cycle yet")
    period = _number(fields, "period_s") or settings.SLUICE_CYCLE_PERIOD
    down_after = round(ALIVE_PERIODS * period, 3)
    heartbeat_at = _number(fields, "heartbeat_at")
    last_success = _number(fields, "last_success_at")
    running_since = _number(fields, "cycle_started_at")
    failing_since = _number(fields, "failing_since")
    details = {
        "worker": fields.get("worker"),
        "period_s": period,
        "down_after_s": down_after,
        "heartbeat_at": _iso(heartbeat_at),
        "heartbeat_age_s": round(now - heartbeat_at, 3) if heartbeat_at is not None else None,
        "last_success_at": _iso(last_success),
        "cycle_running_since": _iso(running_since),
        "failing_since": _iso(failing_since),
        "failed_cycles_in_a_row": int(_number(fields, "failed_cycles_in_a_row") or 0),
        "last_error": fields.get("last_error") or None,
        "last_error_at": _iso(_number(fields, "last_error_at")),
    }
    worker = details["worker"] or "the scheduler leader"
    if not alive:
        return _down(
            "heartbeat_stale",
            heartbeat_at,
            f"{worker} has not beaten for {down_after:g} s ({ALIVE_PERIODS:g} periods)",
            details,
        )
    if recent_success:
        return {"up": True, **details}
    lock_ttl = settings.SLUICE_CYCLE_LOCK_TTL
    if running_since is not None and now - running_since > lock_ttl:
        return _down(
            "cycle_stuck",
            running_since,
            f"{worker} has run one cycle for more than {lock_ttl:g} s (the cycle lock's TTL)",
            details,
        )
    if running_since is not None and failing_since is None and last_success is not None:
        return {"up": True, **details}  # a long cycle after a good one
    if failing_since is not None:
        return _down(
            "cycles_failing",
            failing_since,
            f"no successful cycle for {down_after:g} s; cycles fail: {details['last_error']}",
            details,
        )
    return _down(
        "no_successful_cycle",
        last_success,
        "no successful cycle yet"
        if last_success is None
        else f"no successful cycle for {down_after:g} s ({ALIVE_PERIODS:g} periods)",
        details,
    )


def _down(
    reason: str, since: float | None, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "up": False,
        "reason": reason,
        "since": _iso(since),
        "message": message,
        **(details or {}),
    }


def _why_no_beat(workers: dict[str, Any], beat: dict[str, Any]) -> list[str]:
    """What the workers' and beat's own records say about a leader that does not beat."""
    hints = []
    if SCHEDULER_QUEUE not in workers["queues"]:
        hints.append(
            f"no Celery worker consuming queue {SCHEDULER_QUEUE!r} has recorded itself in "
            f"the last {PRESENCE_TTL_S:g} s"
        )
    if not beat["alive"]:
        age = beat["last_heartbeat_age_s"]
        hints.append(
            "Celery beat's heartbeat (sent every "
            f"{BEAT_INTERVAL_S:g} s, run by a worker of queue 'default') "
            + ("was never recorded" if age is None else f"is {age:g} s old")
        )
    return hints


def scheduler_health(now: float | None = None) -> tuple[dict[str, Any], bool]:
    """``/healthz/scheduler``: ``status`` ``up`` or ``down`` with the leader's figures (see
    ``_leader``), and the workers and beat as they recorded themselves. When the leader does
    not beat, ``message`` also says which of them is missing."""
    now = time.time() if now is None else now
    try:
        fields, alive, recent_success, entries, beat_value = _read_scheduler_keys()
    except _REDIS_ERRORS as exc:
        leader = _down("broker_unreachable", None, f"the heartbeat cannot be read: {exc}")
        return {"status": "down", **leader}, False
    leader = _leader(fields, alive, recent_success, now)
    workers, beat = _workers(entries, now), _beat(beat_value, now)
    if not leader["up"] and leader["reason"] in ("no_heartbeat", "heartbeat_stale"):
        hints = _why_no_beat(workers, beat)
        if hints:
            leader["message"] += "; " + "; ".join(hints)
    status = "up" if leader["up"] else "down"
    return {"status": status, **leader, "workers": workers, "beat": beat}, leader["up"]
