"""The scheduling loop under Celery: beat sends ``run_cycle`` to queue ``scheduler``.

The scheduler worker (solo pool) keeps one SchedulerService — its cache fed by informers —
for its whole life. A Redis lock lets exactly one worker run each cycle; beat's messages
expire after one period, so a slow cycle never leaves a backlog behind it.
"""

from __future__ import annotations

import logging
import threading
import time

from celery import current_task, shared_task
from django.conf import settings
from kubernetes.config import ConfigException

from dashboard import kube, metrics
from dashboard.health import broker_client
from dashboard.services import gate_stats
from dashboard.services.heartbeat import LeaderHeartbeat, worker_identity
from dashboard.services.locking import run_exclusively
from dashboard.tasks.admission import (
    scheduler_admission,
    scheduler_config,
    scheduler_config_source,
)
from dashboard.tasks.gates import queue_gate_removal
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import ConfigInForce, CycleReport
from scheduler.config import ConfigError
from scheduler.service import SchedulerService

log = logging.getLogger(__name__)

_service: SchedulerService | None = None
_service_lock = threading.Lock()


def scheduler_service() -> SchedulerService:
    """This worker's SchedulerService, started (informers synced) on first use."""
    global _service
    with _service_lock:
        if _service is None:
            api = kube.api_client()
            config = scheduler_config()
            service = SchedulerService(
                api,
                config=config,
                config_source=scheduler_config_source(api),
                scheduler_name=settings.SLUICE_SCHEDULER_NAMES,
                act=settings.SLUICE_MODE == "act",
                clock=kube.cluster_clock(),
                gate_remover=queue_gate_removal,
                admission=scheduler_admission(config),
                period=settings.SLUICE_CYCLE_PERIOD,
                kube_api_qps=settings.SLUICE_KUBE_API_QPS,
                kube_api_burst=settings.SLUICE_KUBE_API_BURST,
                bind_workers=settings.SLUICE_BIND_WORKERS,
            )
            _service = service.start(sync_timeout=settings.SLUICE_KUBE_TIMEOUT * 6)
        return _service


def reset_scheduler_service() -> None:
    """Stop and forget the service (tests, and after the cluster configuration changes)."""
    global _service
    with _service_lock:
        if _service is not None:
            _service.stop()
        _service = None


@shared_task(
    name="dashboard.tasks.run_cycle",
    ignore_result=True,
    soft_time_limit=60,
    time_limit=90,
)
def run_cycle() -> dict | None:
    """One cycle if no other worker is running one; the report is stored asynchronously and
    its summary returned (None when no cycle ran). The worker that runs it beats as the
    scheduler leader (``dashboard.services.heartbeat``: what /healthz/scheduler reads)."""
    client = broker_client()
    hostname = current_task.request.hostname if current_task else None  # the worker's node
    leader = LeaderHeartbeat(client, worker_identity(hostname), settings.SLUICE_CYCLE_PERIOD)
    try:
        service = scheduler_service()
    except ConfigError as exc:
        # A first configuration that does not load: there is none to keep in force, so no
        # cycle runs — a failed one, then, so the pages and /healthz say why.
        log.error("no cycle: %s", exc, extra={"object": "configuration"})
        mode = "act" if settings.SLUICE_MODE == "act" else "observe"
        report = CycleReport.failed(time.time(), 0.0, mode, exc)
        report.config = ConfigInForce(source="", actions=[], tiers=[], text="", error=str(exc))
        store_cycle_report(report.to_json())  # here: the broker may be what is missing too
        leader.failed(report.failure)
        return None
    except (RuntimeError, TimeoutError, OSError, ConfigException) as exc:
        # No cluster yet (the simulation is still starting) or unreachable: try next period.
        log.warning("no cycle: %s", exc, extra={"object": "cluster"})
        leader.failed(f"no cycle: {exc}")
        return None

    def leading_cycle() -> CycleReport:
        with leader.cycle() as outcome:
            report = service.run_once()
            outcome.error = report.failure
        return report

    ran, report = run_exclusively(client, leading_cycle, ttl=settings.SLUICE_CYCLE_LOCK_TTL)
    if not ran or report is None:
        return None
    gate_stats.add(report.gates)
    metrics.record_cycle(client, report)  # /metrics (dashboard.metrics)
    # History and the pages' live state; a failed cycle too, so the pages and /healthz say so.
    store_cycle_report.delay(report.to_json())
    summary = {
        "duration_ms": round(report.duration_s * 1000, 2),
        "decisions": len(report.transitions),
        "waiting": len(report.waiting),
    }
    if report.failure:
        # The service logged the traceback; this line is the worker's summary.
        log.error("cycle failed: %s", report.failure, extra={"object": "scheduler", **summary})
        return {**summary, "failed": True}
    level = logging.INFO if report.transitions or report.errors else logging.DEBUG
    log.log(level, "cycle done", extra={"object": "scheduler", **summary})
    return summary  # small: Celery logs a task's return value every cycle
