"""Dashboard server time with 100 queues, 50,000 waiting pods and a week of history.

A fresh SQLite database (a temporary file) gets a week of cycles for 100 queues: one-second
cycles over the last hour and one-minute cycles over the six days and 23 hours before (a
week of one-second cycles would take longer to write than to read; what a page reads depends
on the chart level, not on how many cycles the week held). The latest cycle, stored through
``store_cycle_report``, has 50,000 pods waiting (500 per queue) and 100,000 transitions behind
it. Each page is requested through Django's full stack (middleware, views, templates) with the
test client; the figure is the server time per request. Target: p95 under 50 ms.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime

from kombu.compression import compress
from kombu.serialization import dumps

from scheduler.api.report import CycleReport, PodState, QueueReport, WaitingPod
from scheduler.api.status import Code, Status

# Django and the dashboard are imported inside the functions on purpose: the settings read
# DATABASE_URL when first imported, and it must name this run's temporary database first.

QUEUES, PODS_PER_QUEUE = 100, 500
WEEK, HOUR, MINUTE = 7 * 86400, 3600, 60
REQUESTS = 200
TARGET_P95_MS = 50.0
PAGES = {
    "overview": "/",
    "queue page (last hour)": "/queues/queue-042/",
    "queue page (last week)": "/queues/queue-042/?range=week",
    "queue charts only, htmx (last day)": "/queues/queue-042/?range=day",
}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="sluice-bench-") as folder:
        _run(folder)
        from django.db import connections

        connections.close_all()  # before the database file goes


def _run(folder: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    os.environ.setdefault("SLUICE_DEV_SECRET", "1")
    os.environ["SLUICE_KUBECONFIG"] = f"{folder}/no-cluster"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    now = time.time()
    started = time.perf_counter()
    cycles, samples = _write_history(now)
    report = _latest_report(now)
    transitions = _write_latest(report)
    print(
        f"history: {cycles:,} cycles, {samples:,} queue samples, {transitions:,} transitions, "
        f"{QUEUES * PODS_PER_QUEUE:,} waiting pods; written in {time.perf_counter() - started:.1f} s"
    )
    _print_message_figures(report)
    del report  # a web server does not hold a 50,000-pod report: keep it out of the GC's walk
    for label, url in PAGES.items():
        htmx = "htmx" in label
        timings = _time_requests(url, htmx=htmx)
        p50, p95 = statistics.median(timings), _percentile(timings, 95)
        verdict = "ok" if p95 < TARGET_P95_MS else "OVER TARGET"
        print(
            f"{label:38s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  max {max(timings):6.1f} ms  "
            f"({len(timings)} requests; target p95 < {TARGET_P95_MS:.0f} ms: {verdict})"
        )


def _figures(q: int, t: float) -> dict:
    used = 20_000 + (int(t) // 60 + q) % 40 * 1000
    return {"cpu": used, "memory": used * 4 * 1024**2}


def _write_history(now: float) -> tuple[int, int]:
    """Cycles and samples straight through SQL: a week of them in seconds, not minutes."""

    from django.db import connection, transaction

    from dashboard.selectors.sampling import bucket_level

    times = list(range(int(now - WEEK), int(now - HOUR), MINUTE))
    times += list(range(int(now - HOUR), int(now) - 1))
    deserved = json.dumps({"cpu": 40_000, "memory": 160 * 1024**3})
    capability = json.dumps({"cpu": 80_000, "memory": 320 * 1024**3})
    counts = json.dumps({"running": 10_000, "gated": 45_000, "waiting": 0,
                         "pipelined": 0, "unschedulable": 5_000})  # fmt: skip
    previous = None
    with transaction.atomic(), connection.cursor() as cursor:
        for cycle_id, t in enumerate(times, start=1):
            at = datetime.fromtimestamp(t, tz=UTC)
            level = bucket_level(at, previous)
            previous = at
            stamp = connection.ops.adapt_datetimefield_value(at)  # as the ORM stores it
            cursor.execute(
                "INSERT INTO dashboard_cycle (id, started_at, duration_ms, mode, decisions, "
                "action_durations_ms, error, failed, level, counts, gates, notices) "
                "VALUES (%s, %s, %s, 'act', 10, %s, '', FALSE, %s, %s, '{}', '[]')",
                [cycle_id, stamp, 400 + t % 97, '{"allocate": 300.0}', level, counts],
            )
            rows = []
            for q in range(QUEUES):
                figures = json.dumps(_figures(q, t))
                rows.append([cycle_id, stamp, f"queue-{q:03d}", capability, deserved,
                             figures, "{}", "{}", 100, 0, 450, 0, 50, 0.5 + q / 1000, level])  # fmt: skip
            cursor.executemany(
                "INSERT INTO dashboard_queuesample (cycle_id, at, queue, capability, deserved, "
                "allocated, reserved, inqueue, running, waiting, gated, pipelined, "
                "unschedulable, share, level) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "%s, %s, %s, %s, %s)",
                rows,
            )
    return len(times), len(times) * QUEUES


def _latest_report(now: float) -> dict:
    """A CycleReport's JSON (``to_json()``): 100 queues, 50,000 waiting pods."""

    full = Status(
        Code.QUEUE_FULL, "capacity", "queue resource quota insufficient: insufficient cpu"
    )
    short = Status(
        Code.UNSCHEDULABLE, "predicates", "0/1000 nodes are available: 1000 Insufficient cpu"
    )
    queues, waiting = [], []
    for q in range(QUEUES):
        name = f"queue-{q:03d}"
        counts = {PodState.RUNNING: 100, PodState.GATED: 450, PodState.UNSCHEDULABLE: 50}
        queues.append(QueueReport(name, capability={"cpu": 80_000}, deserved={"cpu": 40_000},
                                  allocated=_figures(q, now), reserved={"cpu": 4000},
                                  share=0.5, counts=counts))  # fmt: skip
        for i in range(PODS_PER_QUEUE):
            gated = i < 450
            waiting.append(WaitingPod(
                f"team-{q % 20}", f"{name}-pod-{i:04d}", f"uid-{q}-{i}", name,
                f"team/{name}-{i}", PodState.GATED if gated else PodState.UNSCHEDULABLE,
                full if gated else short,
            ))  # fmt: skip
    report = CycleReport(now, 0.4, "act", {"enqueue": 0.01, "allocate": 0.3}, queues,
                         waiting=waiting)  # fmt: skip
    return report.to_json()


def _print_message_figures(report: dict) -> None:
    """What sending the report costs the scheduler worker: kombu's JSON, then its zlib."""

    from dashboard.tasks.history import store_cycle_report

    started = time.perf_counter()
    _, _, body = dumps(((report,), {}, {}), serializer="json")  # Celery's protocol-2 body
    serialized = time.perf_counter()
    packed, _ = compress(body, store_cycle_report.compression)
    done = time.perf_counter()
    print(
        f"cycle report message ({len(report['waiting']):,} waiting pods): JSON "
        f"{len(body) / 1e6:.1f} MB in {(serialized - started) * 1000:.0f} ms, "
        f"{store_cycle_report.compression} {len(packed) / 1e6:.2f} MB in "
        f"{(done - serialized) * 1000:.0f} ms more ({len(body) / len(packed):.0f}x smaller)"
    )


def _write_latest(report: dict) -> int:
    """The latest cycle through the real storage path, then 100,000 older transitions."""
    from dashboard.models import Cycle, PodTransition
    from dashboard.tasks.history import store_cycle_report

    store_cycle_report(report)
    cycle = Cycle.objects.order_by("-started_at").first()
    rows = [
        PodTransition(cycle=cycle, at=cycle.started_at, namespace=f"team-{q % 20}",
                      name=f"queue-{q:03d}-done-{i:04d}", uid=f"done-{q}-{i}-{step}",
                      queue=f"queue-{q:03d}", kind=kind, from_state=old, to_state=new,
                      node="node-1")
        for q in range(QUEUES) for i in range(500)
        for step, (kind, old, new) in enumerate((("gate_removed", "gated", "waiting"),
                                                 ("allocated", "waiting", "binding")))
    ]  # fmt: skip
    PodTransition.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def _time_requests(url: str, *, htmx: bool) -> list[float]:
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")  # an allowed host, as a browser would send
    headers = {"HX-Request": "true", "HX-Target": "charts"} if htmx else {}
    for _ in range(5):  # warm caches and connections
        assert client.get(url, headers=headers).status_code == 200, url
    timings = []
    for _ in range(REQUESTS):
        t0 = time.perf_counter()
        response = client.get(url, headers=headers)
        timings.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, url
    return timings


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


if __name__ == "__main__":
    main()
