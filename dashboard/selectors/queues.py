"""Queues now (from the live state) and over time (downsampled samples)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from dashboard.models import QueueSample, TrackedPod
from dashboard.selectors.live import live_waiting
from dashboard.selectors.sampling import ChartRange, levels_from, pick_level
from scheduler.api.report import PENDING_STATES, PodState, WaitingPod

SERIES_FIELDS = ("allocated", "deserved", "capability", "reserved")
COUNT_FIELDS = ("running", "gated", "waiting", "pipelined", "unschedulable")


def queue_waiting(name: str) -> dict[PodState, list[WaitingPod]]:
    """The queue's waiting pods at the latest cycle, by state."""
    groups: dict[PodState, list[WaitingPod]] = {state: [] for state in PENDING_STATES}
    for pod in live_waiting(name) or []:
        groups.setdefault(pod.state, []).append(pod)
    return groups


def gate_removed_uids(*, queue: str | None = None) -> set[str]:
    """Pods whose queue-allocation gate Sluice lifted (a gate_removed transition was stored)."""
    rows = TrackedPod.objects.filter(gate_removed=True)
    if queue is not None:
        rows = rows.filter(queue=queue)
    return set(rows.values_list("uid", flat=True))


def queue_series(
    name: str, chart_range: ChartRange, now: datetime | None = None, *, cluster: str | None = None
) -> list[dict]:
    """The queue's samples over the range, one per bucket of the range's level; ``cluster``
    (a kube-system UID) keeps that cluster's samples only — a queue of the same name in an
    earlier cluster is another queue, on another clock.

    Each resource field comes back as ``{"cpu": millicores}``: the charts draw CPU only, and
    the database pulls that one key out of the JSON far faster than Python decodes it whole.
    """
    since = (now or timezone.now()) - chart_range.span
    in_range = QueueSample.objects.filter(queue=name, at__gte=since)
    if cluster is not None:
        in_range = in_range.filter(cluster=cluster)
    level = pick_level(chart_range, lambda lv: in_range.filter(level__in=levels_from(lv)).count())
    # Sorted here, not in SQL: ORDER BY at makes SQLite walk the (queue, at) index through
    # every sample of the range instead of the (queue, level, at) one through a few hundred.
    rows = in_range.filter(level__in=levels_from(level)).order_by()
    cpu = {f"{field}_cpu": Cast(KT(f"{field}__cpu"), FloatField()) for field in SERIES_FIELDS}
    series = []
    for row in rows.values("at", "share", *COUNT_FIELDS, **cpu):
        for field in SERIES_FIELDS:
            row[field] = {"cpu": row.pop(f"{field}_cpu") or 0}
        series.append(row)
    return sorted(series, key=_at)


def _at(row: dict) -> datetime:
    return row["at"]
