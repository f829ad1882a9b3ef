"""Queues now (from the live state) and over time (downsampled samples)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from dashboard.models import PodState, QueueSample
from dashboard.selectors.figures import capacity_bars
from dashboard.selectors.live import live_waiting
from dashboard.selectors.reasons import risks_by_pod, wait_reason, wait_state
from dashboard.selectors.sampling import ChartRange, pick_level

ROOT = "root"
SERIES_FIELDS = ("allocated", "deserved", "capability", "reserved")
COUNT_FIELDS = ("running", "gated", "pipelined", "unschedulable")


def queue_rows(summary: dict) -> list[dict]:
    """Every queue but the root, with its capacity bars, counts and admission risks."""
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
        if q["name"] != ROOT
    ]


def queue_in(summary: dict, name: str) -> dict | None:
    return next((q for q in queue_rows(summary) if q["name"] == name), None)


def queue_pods(summary: dict, name: str) -> dict[str, list[dict]]:
    """The queue's waiting pods grouped by state, each with why it waits in plain words."""
    risks = risks_by_pod(summary.get("risks", []))
    waiting = live_waiting(name) or []
    lifted = PodState.objects.filter(queue=name, state="Pending")  # last move: gate removed
    gate_removed = set(lifted.values_list("uid", flat=True))
    groups: dict[str, list[dict]] = {"Gated": [], "Unschedulable": [], "Pipelined": []}
    for pod in waiting:
        reason = wait_reason(pod, risks.get(pod["uid"]), gate_removed=pod["uid"] in gate_removed)
        groups[wait_state(pod)].append({**pod, "reason": reason})
    return groups


def queue_series(name: str, chart_range: ChartRange, now: datetime | None = None) -> list[dict]:
    """The queue's samples over the range, one per bucket of the range's level."""
    since = (now or timezone.now()) - chart_range.span
    in_range = QueueSample.objects.filter(queue=name, at__gte=since)
    level = pick_level(chart_range, lambda lv: in_range.filter(level__gte=lv).count())
    # Sorted here, not in SQL: ORDER BY at makes SQLite walk the (queue, at) index through
    # every sample of the range instead of the (queue, level, at) one through a few hundred.
    rows = in_range.filter(level__gte=level).order_by()
    return sorted(rows.values("at", "share", *SERIES_FIELDS, *COUNT_FIELDS), key=_at)


def _at(row: dict) -> datetime:
    return row["at"]
