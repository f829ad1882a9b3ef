"""Scheduling history: store each CycleReport, prune what is older than the retention.

A cycle becomes one ``Cycle`` row, one ``QueueSample`` per queue and one ``PodTransition`` per
decision; pods that merely keep waiting cost nothing in history. The "now" figures (queues,
waiting pods and their reasons, admission risks) replace the previous cycle's ``LiveState``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from dashboard.models import Cycle, LiveState, PodState, PodTransition, QueueSample
from dashboard.selectors.live import CYCLE_KEY, queue_key
from dashboard.selectors.sampling import bucket_level

log = logging.getLogger(__name__)

STATES = ("running", "pending", "gated", "pipelined", "unschedulable")


@shared_task(
    name="dashboard.tasks.store_cycle_report",
    ignore_result=True,
    soft_time_limit=30,
    time_limit=60,
    # SQLite may be busy with a page's read: storing is idempotent per cycle, so try again.
    autoretry_for=(OperationalError,),
    retry_backoff=0.2,
    max_retries=5,
    # A report lists every waiting pod (10.4 MB of JSON at 50,000 in `make bench`): zlib
    # makes it 22x smaller in Redis for 70-90 ms more of the sender's time.
    compression="zlib",
)
def store_cycle_report(report: dict) -> int | None:
    """Store ``report`` (``CycleReport.to_dict()``); the cycle's id, None when already stored."""
    try:
        with transaction.atomic():
            return _store(report)
    except IntegrityError:
        # Another worker stored the same cycle between our check and our insert.
        log.info("cycle already stored", extra={"object": f"cycle {report['started_at']}"})
        return None


@shared_task(
    name="dashboard.tasks.prune_history",
    ignore_result=True,
    soft_time_limit=300,
    time_limit=600,
)
def prune_history(now: float | None = None) -> dict[str, int]:
    """Delete history older than ``SLUICE_HISTORY_RETENTION_DAYS``; the counts deleted."""
    current = datetime.fromtimestamp(now, tz=UTC) if now is not None else timezone.now()
    cutoff = current - timedelta(days=settings.SLUICE_HISTORY_RETENTION_DAYS)
    # Children first: each of these deletes is one statement, with nothing to cascade.
    deleted = {
        "samples": QueueSample.objects.filter(at__lt=cutoff).delete()[0],
        "transitions": PodTransition.objects.filter(at__lt=cutoff).delete()[0],
        "pods": PodState.objects.filter(since__lt=cutoff).delete()[0],
    }
    old_cycles = Cycle.objects.filter(started_at__lt=cutoff)
    deleted["cycles"] = old_cycles.count()
    old_cycles.delete()
    log.info("history pruned", extra={"object": "history", **deleted})
    return deleted


def _store(report: dict) -> int | None:
    started = datetime.fromtimestamp(report["started_at"], tz=UTC)
    if Cycle.objects.filter(started_at=started).exists():
        return None
    previous = (
        Cycle.objects.filter(started_at__lt=started).values_list("started_at", flat=True).first()
    )
    queues = [_queue_figures(q) for q in report.get("queues", [])]
    cycle = Cycle.objects.create(
        started_at=started,
        duration_ms=report["duration_s"] * 1000,
        mode=report.get("mode", ""),
        decisions=len(report.get("transitions", [])),
        action_durations_ms={k: v * 1000 for k, v in report["action_durations_s"].items()},
        error="\n".join(report.get("errors", [])),
        level=bucket_level(started, previous),
        counts=_total_counts(queues),
        gates=report.get("gates", {}),
        notices=report.get("notices", []),
    )
    _store_samples(cycle, queues)
    _store_transitions(cycle, report.get("transitions", []))
    if not Cycle.objects.filter(started_at__gt=started).exists():  # a late report is history
        _replace_live_state(cycle, report, queues)
    return cycle.id


def _queue_figures(queue: dict) -> dict:
    """A queue's report with its share (Volcano: the largest allocated/deserved ratio)."""
    deserved, allocated = queue.get("deserved") or {}, queue.get("allocated") or {}
    ratios = [allocated.get(r, 0) / v for r, v in deserved.items() if v]
    share = max(ratios, default=0.0)
    over = any(allocated.get(r, 0) > v for r, v in deserved.items() if v)
    return {**queue, "share": share, "over_deserved": over}


def _total_counts(queues: list[dict]) -> dict[str, int]:
    totals = dict.fromkeys(STATES, 0)
    for queue in queues:
        for state in STATES:
            totals[state] += (queue.get("counts") or {}).get(state, 0)
    return totals


def _store_samples(cycle: Cycle, queues: list[dict]) -> None:
    QueueSample.objects.bulk_create(
        QueueSample(
            cycle=cycle,
            at=cycle.started_at,
            queue=q["name"],
            capability=q.get("capability") or {},
            deserved=q.get("deserved") or {},
            allocated=q.get("allocated") or {},
            reserved=q.get("reserved") or {},
            inqueue=q.get("inqueue") or {},
            share=q["share"],
            level=cycle.level,
            **{state: (q.get("counts") or {}).get(state, 0) for state in STATES},
        )
        for q in queues
    )


def _store_transitions(cycle: Cycle, transitions: list[dict]) -> None:
    rows = [
        PodTransition(
            cycle=cycle,
            at=cycle.started_at,
            namespace=t["namespace"],
            name=t["name"],
            uid=t["uid"],
            queue=t.get("queue") or "",
            from_state=t["from_status"],
            to_state=t["to_status"],
            node=t.get("node") or "",
            reason=t.get("reason") or "",
        )
        for t in transitions
    ]
    PodTransition.objects.bulk_create(rows)
    latest = {row.uid: row for row in rows}  # a pod's last transition in the cycle wins
    PodState.objects.bulk_create(
        [
            PodState(
                uid=r.uid,
                namespace=r.namespace,
                name=r.name,
                queue=r.queue,
                state=r.to_state,
                node=r.node,
                reason=r.reason,
                since=r.at,
            )
            for r in latest.values()
        ],
        update_conflicts=True,
        unique_fields=["uid"],
        update_fields=["namespace", "name", "queue", "state", "node", "reason", "since"],
    )


def _replace_live_state(cycle: Cycle, report: dict, queues: list[dict]) -> None:
    waiting: dict[str, list[dict]] = {q["name"]: [] for q in queues}
    gated_by_namespace: dict[str, int] = {}
    for pod in report.get("waiting", []):
        waiting.setdefault(pod["queue"], []).append(pod)
        if pod.get("gated"):
            ns = pod["namespace"]
            gated_by_namespace[ns] = gated_by_namespace.get(ns, 0) + 1
    summary = {
        "started_at": report["started_at"],
        "duration_ms": cycle.duration_ms,
        "mode": cycle.mode,
        "decisions": cycle.decisions,
        "errors": report.get("errors", []),
        "notices": cycle.notices,
        "gates": cycle.gates,
        "queues": queues,
        "risks": report.get("risks", []),
        "gated_by_namespace": gated_by_namespace,
    }
    rows = [LiveState(key=CYCLE_KEY, cycle=cycle, data=summary)]
    rows += [
        LiveState(key=queue_key(name), cycle=cycle, data={"waiting": pods})
        for name, pods in waiting.items()
    ]
    LiveState.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["key"], update_fields=["cycle", "data"]
    )
    LiveState.objects.exclude(cycle=cycle).delete()  # queues that no longer exist
