"""The latest cycle's "now" figures, as stored by ``dashboard.tasks.history``."""

from __future__ import annotations

from datetime import UTC, datetime

from dashboard.models import LiveState

CYCLE_KEY = "cycle"


def queue_key(name: str) -> str:
    return f"queue:{name}"


def live_summary() -> dict | None:
    """The latest cycle's summary (queues, risks, notices), or None before the first cycle."""
    data = LiveState.objects.filter(key=CYCLE_KEY).values_list("data", flat=True).first()
    if data is None:
        return None
    return {**data, "at": datetime.fromtimestamp(data["started_at"], tz=UTC)}


def live_waiting(queue: str) -> list[dict] | None:
    """Pods waiting in ``queue`` at the latest cycle; None when the queue is unknown."""
    data = LiveState.objects.filter(key=queue_key(queue)).values_list("data", flat=True).first()
    return None if data is None else data.get("waiting", [])


def live_waiting_everywhere() -> list[dict]:
    pods: list[dict] = []
    for data in LiveState.objects.filter(key__startswith="queue:").values_list("data", flat=True):
        pods += data.get("waiting", [])
    return pods
