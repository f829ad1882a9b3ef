"""``GET /metrics``: Prometheus text format, open like ``/healthz`` (``dashboard.metrics``)."""

from __future__ import annotations

import logging
from pathlib import Path

import redis
import yaml
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from dashboard import kube, metrics
from dashboard.health import broker_client
from dashboard.services import gate_stats
from scheduler.api.labels import CLOCK_EXTENSION
from simcluster.metrics import PREFIX as SIM_PREFIX

log = logging.getLogger(__name__)
# generate_latest writes Prometheus' text format 0.0.4, which every Prometheus version reads.
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """The scheduler's figures as its cycles left them in Redis, the gate removal counters,
    and, against the simulated cluster, its autoscaler's. 503 when Redis does not answer:
    Prometheus then records the target as down rather than every series as gone."""
    try:
        # inside the try: a counter read as 0 while Redis is slow is a reset to Prometheus
        extra = [_gate_removals(), *_simulated_cluster()]
        body = metrics.exposition(broker_client(), extra)
    except redis.RedisError as exc:
        return HttpResponse(f"broker unreachable: {exc}\n", status=503, content_type="text/plain")
    return HttpResponse(body, content_type=TEXT_FORMAT)


def _gate_removals() -> Metric:
    family = CounterMetricFamily(
        "sluice_gate_removals_total",
        "Queue-allocation gate removals by outcome: queued by a cycle, removed at bind, and "
        "what the gates workers met (removed, conflicts, gave_up, failed…)",
        labels=["outcome"],
    )
    counts = gate_stats.read()
    for outcome in gate_stats.COUNTERS:
        family.add_metric([outcome], float(counts.get(outcome, 0)))
    return family


def _simulated_cluster() -> list[Metric]:
    """The simulated cluster's ``sluice_sim_*`` families (its ``GET /metrics``), when the
    kubeconfig is the simulated cluster's (it carries the simulation's clock). A real
    kube-apiserver is never asked."""
    path = settings.SLUICE_KUBECONFIG
    if not path or not _is_simulated(Path(path)):
        return []
    try:
        api = kube.api_client()
        method, url, headers, body, _ = api.param_serialize(
            "GET", "/metrics", auth_settings=["BearerToken"]
        )
        response = api.call_api(
            method, url, headers, body, _request_timeout=settings.SLUICE_KUBE_TIMEOUT
        )
        response.read()
        if response.status != 200:
            raise OSError(f"GET /metrics answered {response.status}")
        text = response.data.decode()
    except Exception as exc:  # the pages say when the cluster is down; so does this log
        log.warning("no simulated cluster metrics: %s", exc, extra={"object": "cluster"})
        return []
    return [m for m in text_string_to_metric_families(text) if m.name.startswith(SIM_PREFIX)]


def _is_simulated(path: Path) -> bool:
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return False
    return any(
        extension.get("name") == CLOCK_EXTENSION
        for entry in document.get("clusters") or []
        for extension in (entry.get("cluster") or {}).get("extensions") or []
    )
