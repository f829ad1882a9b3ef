"""Scheduling history: store each CycleReport, prune what is older than the retention.

A cycle becomes one ``Cycle`` row, one ``QueueSample`` per queue and one ``PodTransition`` per
decision; pods that merely keep waiting cost nothing in history. The report's pods reconcile
one current state per pod of its cluster (``dashboard.services.pod_states``: created, seen
bound or finished, gone). The "now" figures (queues, waiting pods and their reasons,
admission risks, objects Sluice cannot use) replace the previous cycle's ``LiveState``. A
cycle that failed is one ``Cycle`` row with ``failed`` set and its error: it decided nothing,
so the live state stays the last good cycle's, and the pages and ``/healthz`` say that cycles
fail (``dashboard.selectors.cycles.cycle_failure``).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

from dashboard.models import Cycle, LiveState, PodTransition, QueueSample
from dashboard.selectors.live import CYCLE_KEY, queue_key
from dashboard.selectors.sampling import bucket_level
from dashboard.services.pod_states import prunable_pods, reconcile_pods
from scheduler.api.report import (
    COUNTED_STATES,
    CycleReport,
    PodState,
    QueueReport,
    Transition,
    TransitionKind,
)

log = logging.getLogger(__name__)


@shared_task(
    name="dashboard.tasks.store_cycle_report",
    ignore_result=True,
    soft_time_limit=30,
    time_limit=60,
    # SQLite may be busy with a page's read: storing is idempotent per cycle, so try again.
    autoretry_for=(OperationalError,),
    # One transaction per report, acknowledged once committed: a worker killed while storing
    # (SIGKILL, out of memory) leaves nothing (the transaction rolls back) and the report goes
    # back to the queue (at once when its pool process died, within the broker's visibility
    # timeout when the whole worker did: settings.py); the unique (cluster, started_at) makes
    # a report stored twice one cycle.
    acks_late=True,
    reject_on_worker_lost=True,
    retry_backoff=0.2,
    max_retries=5,
    # A report lists every waiting pod (10.4 MB of JSON at 50,000 in `make bench`): zlib
    # makes it 22x smaller in Redis for 70-90 ms more of the sender's time.
    compression="zlib",
)
def store_cycle_report(report: dict) -> int | None:
    """Store ``report`` (``CycleReport.to_json()``); the cycle's id, None when already stored."""
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
        "pods": prunable_pods(cutoff, cluster=_inventoried_cluster()).delete()[0],
    }
    old_cycles = Cycle.objects.filter(started_at__lt=cutoff)
    deleted["cycles"] = old_cycles.count()
    old_cycles.delete()
    log.info("history pruned", extra={"object": "history", **deleted})
    return deleted


def _store(data: dict) -> int | None:
    report = CycleReport.from_json(data)
    _one_report_at_a_time()
    started = datetime.fromtimestamp(report.started_at, tz=UTC)
    # A cycle is its cluster's start (unique in the database): stored already, nothing to do.
    if Cycle.objects.filter(cluster=report.cluster, started_at=started).exists():
        return None
    if report.failure:
        failed = Cycle.objects.create(
            started_at=started,
            duration_ms=report.duration_s * 1000,
            mode=report.mode,
            decisions=len(report.transitions),
            error="\n".join([report.failure, *report.errors]),
            failed=True,
            cluster=report.cluster,
            stored_at=timezone.now(),
            level=0,  # no chart reads it: it has no figures
        )
        # What it had sent before it raised (binds from committed statements) is history;
        # the pods' current state is the next report's to say.
        PodTransition.objects.bulk_create(_decisions(failed, report.transitions), batch_size=1000)
        return failed.id
    # Its own cluster's cycles only: each cluster's times are its own clock's.
    own = Cycle.objects.filter(cluster=report.cluster)
    previous = (
        own.filter(started_at__lt=started, failed=False)
        .order_by("-started_at")
        .values_list("started_at", flat=True)
        .first()
    )
    cycle = Cycle.objects.create(
        started_at=started,
        duration_ms=report.duration_s * 1000,
        mode=report.mode,
        decisions=len(report.transitions),
        action_durations_ms={k: v * 1000 for k, v in report.action_durations_s.items()},
        error="\n".join(report.errors),
        level=bucket_level(started, previous),
        counts={state.value: n for state, n in _counts(report).items()},
        gates=report.gates,
        notices=report.notices,
        cluster=report.cluster,
        stored_at=timezone.now(),
    )
    _store_samples(cycle, report.queues)
    # The latest of its cluster, by that cluster's clock, is current (else history only) —
    # whatever the other clusters' times: a new cluster (a new kube-system) replaces the one
    # before it, whose clock may be ahead (a simulated cluster run sped up).
    latest = not own.filter(started_at__gt=started).exists()
    # One current state per pod of the cluster; its decisions between its creation and what
    # the cluster showed after them.
    reconcile_pods(cycle, report, _decisions(cycle, report.transitions), latest=latest)
    if latest:
        _replace_live_state(cycle, report, data)
    return cycle.id


def missing_queues(report: CycleReport) -> dict[str, dict[PodState, int]]:
    """Queues that pods, PodGroups or pods' problems name and the cycle did not have (deleted
    under their pods, never created, or refused as invalid), each with its pods by state as
    the report lists them: no queue of the report counts them (a queue counts its own jobs'
    pods), and the Pods page lists them all the same."""
    known = {q.name for q in report.queues}
    missing: dict[str, dict[PodState, int]] = {}
    for p in report.problems:
        if p.queue and p.queue not in known:
            missing.setdefault(p.queue, dict.fromkeys(COUNTED_STATES, 0))
    for pod in [*report.waiting, *(report.pods or ())]:
        if pod.queue in known or pod.state not in COUNTED_STATES:
            continue
        counts = missing.setdefault(pod.queue, dict.fromkeys(COUNTED_STATES, 0))
        counts[pod.state] += 1
    return missing


def _counts(report: CycleReport) -> dict[PodState, int]:
    """Pods by state over every queue, and over the queues that do not exist."""
    totals = report.counts()
    for counts in missing_queues(report).values():
        for state, n in counts.items():
            totals[state] = totals.get(state, 0) + n
    return totals


# Any 64-bit number, the same in every process: the key of the advisory lock below.
STORE_LOCK = 0x51_1CE_0001


def _one_report_at_a_time() -> None:
    """Hold, until the transaction ends, the lock that serializes storing reports.

    Several Celery workers store reports (`docker-compose.yml` runs four on the default
    queue): two reports stored at once would reconcile the same pods from the same rows, each
    creating the same pod (a unique-UID conflict that loses a whole cycle) or marking the same
    pod gone twice. PostgreSQL: a transaction-level advisory lock (`pg_advisory_xact_lock`),
    after which READ COMMITTED shows each statement what the previous report committed. SQLite
    allows one writer at a time; a transaction that read before another's commit fails to
    write (busy) and the task is retried."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK])


def _store_samples(cycle: Cycle, queues: list[QueueReport]) -> None:
    QueueSample.objects.bulk_create(
        QueueSample(
            cycle=cycle,
            at=cycle.started_at,
            queue=q.name,
            capability=q.capability,
            deserved=q.deserved,
            allocated=q.allocated,
            reserved=q.reserved,
            inqueue=q.inqueue,
            share=q.share,
            level=cycle.level,
            cluster=cycle.cluster,
            **{state.value: q.count(state) for state in COUNTED_STATES},
        )
        for q in queues
    )


def _decisions(cycle: Cycle, transitions: list[Transition]) -> list[PodTransition]:
    """The cycle's decisions; one that changed nothing (a failed bind aside) is no history."""
    return [
        PodTransition(
            cycle=cycle,
            at=cycle.started_at,
            namespace=t.namespace,
            name=t.name,
            uid=t.uid,
            queue=t.queue,
            kind=t.kind.value,
            from_state=t.from_state.value,
            to_state=t.to_state.value,
            node=t.node,
            message=t.message,
        )
        for t in transitions
        if t.from_state != t.to_state or t.kind is TransitionKind.BIND_FAILED
    ]


def _inventoried_cluster() -> str | None:
    """The latest report's cluster when that report listed all its pods, else None."""
    data = LiveState.objects.filter(key=CYCLE_KEY).values_list("data", flat=True).first() or {}
    return str(data.get("cluster") or "") if data.get("inventory") else None


def _replace_live_state(cycle: Cycle, report: CycleReport, data: dict) -> None:
    """The "now" figures: the report's JSON without its per-pod lists, and each queue's
    waiting pods under a key of its own (so a queue page parses only its own pods)."""
    waiting: dict[str, list[dict]] = {q.name: [] for q in report.queues}
    gated_by_namespace: dict[str, int] = {}
    for pod, raw in zip(report.waiting, data.get("waiting") or [], strict=True):
        waiting.setdefault(pod.queue, []).append(raw)
        if pod.gated:
            gated_by_namespace[pod.namespace] = gated_by_namespace.get(pod.namespace, 0) + 1
    summary = {
        "started_at": report.started_at,
        "duration_ms": cycle.duration_ms,
        "mode": report.mode,
        "decisions": cycle.decisions,
        "errors": report.errors,
        "notices": report.notices,
        "gates": report.gates,
        "queues": data.get("queues") or [],
        "risks": data.get("risks") or [],
        "gated_by_namespace": gated_by_namespace,
        "config": data.get("config"),
        "invalid": data.get("invalid") or [],
        "problems": data.get("problems") or [],  # queue problems said with an event
        "missing_queues": [  # queues pods name that the cycle did not have, and their pods
            {"name": name, "counts": {state.value: n for state, n in counts.items()}}
            for name, counts in sorted(missing_queues(report).items())
        ],
        "cluster": report.cluster,  # the pages show this cluster's pods only
        "inventory": report.pods is not None,  # it listed every pod: the others are gone
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
