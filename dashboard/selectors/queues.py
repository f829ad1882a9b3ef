"""Queues now (from the live state) and over time (downsampled samples)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from dashboard.models import PodState, QueueSample
from dashboard.selectors.figures import capacity_bars
from dashboard.selectors.live import live_waiting
from dashboard.selectors.reasons import risks_by_pod, wait_reason, wait_state
from dashboard.selectors.sampling import ChartRange, levels_from, pick_level

ROOT = "root"
SERIES_FIELDS = ("allocated", "deserved", "capability", "reserved")
COUNT_FIELDS = ("running", "gated", "pipelined", "unschedulable")
SHOWN_PER_STATE = 50  # pods listed per state on a queue's page


def queue_rows(summary: dict, only: str | None = None) -> list[dict]:
    """Every queue but the root (or just ``only``), with capacity bars, counts and risks."""
    risky: dict[str, int] = {}
    for risk in summary.get("risks", []):
        if risk.get("risk") not in {"fits_now", None}:
            risky[risk.get("queue", "")] = risky.get(risk.get("queue", ""), 0) + 1
    return [
        {
            **q,
            "bars": capacity_bars(q),
            "risks": risky.get(q["name"], 0),
        }
        for q in summary.get("queues", [])
        if q["name"] != ROOT and (only is None or q["name"] == only)
    ]


def queue_in(summary: dict, name: str) -> dict | None:
    return next(iter(queue_rows(summary, only=name)), None)


def queue_pods(summary: dict, name: str, shown: int = SHOWN_PER_STATE) -> dict[str, dict]:
    """The queue's waiting pods by state: how many, and the first ``shown`` of them, each with
    why it waits in plain words (the Pods page lists them all)."""
    groups: dict[str, list[dict]] = {"Gated": [], "Unschedulable": [], "Pipelined": []}
    for pod in live_waiting(name) or []:
        groups[wait_state(pod)].append(pod)
    risks = risks_by_pod(summary.get("risks", []))
    lifted = PodState.objects.filter(queue=name, state="Pending")  # last move: gate removed
    gate_removed = set(lifted.values_list("uid", flat=True))

    def explained(pod: dict) -> dict:
        uid = pod["uid"]
        return {**pod, "reason": wait_reason(pod, risks.get(uid), gate_removed=uid in gate_removed)}

    return {
        state: {"count": len(pods), "pods": [explained(pod) for pod in pods[:shown]]}
        for state, pods in groups.items()
    }


def queue_series(name: str, chart_range: ChartRange, now: datetime | None = None) -> list[dict]:
    """The queue's samples over the range, one per bucket of the range's level.

    Each resource field comes back as ``{"cpu": millicores}``: the charts draw CPU only, and
    the database pulls that one key out of the JSON far faster than Python decodes it whole.
    """
    since = (now or timezone.now()) - chart_range.span
    in_range = QueueSample.objects.filter(queue=name, at__gte=since)
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
