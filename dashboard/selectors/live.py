"""The latest cycle's "now" figures, as stored by ``dashboard.tasks.history``, read back into
the report's own types (``scheduler.api.report``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from dashboard.models import LiveState
from scheduler.api.report import (
    COUNTED_STATES,
    ConfigInForce,
    InvalidObject,
    ObjectProblem,
    PodState,
    QueueReport,
    WaitingPod,
    WorkloadRisk,
)

CYCLE_KEY = "cycle"


def queue_key(name: str) -> str:
    return f"queue:{name}"


@dataclass(frozen=True)
class LiveSummary:
    """The latest cycle as the pages show it: its report, without the per-pod lists."""

    at: datetime
    duration_ms: float
    mode: str
    decisions: int
    errors: list[str]
    notices: list[str]
    gates: dict[str, int]
    queues: list[QueueReport]
    risks: list[WorkloadRisk]
    gated_by_namespace: dict[str, int]
    config: ConfigInForce | None  # as the scheduler reported it (None from older cycles)
    invalid: list[InvalidObject] = field(default_factory=list)  # objects Sluice cannot use
    cluster: str = ""  # the cluster it ran against (kube-system's UID; "" when unknown)
    # Queues whose spec is wrong, jobs naming a queue that does not exist (said with an event)
    problems: list[ObjectProblem] = field(default_factory=list)
    # Queues pods name that the cycle did not have (deleted, never created, unusable): their
    # pods by state only (``counts``), no figures.
    missing_queues: list[QueueReport] = field(default_factory=list)

    def queue(self, name: str) -> QueueReport | None:
        return next((q for q in self.queues if q.name == name), None)

    def counts(self) -> dict[PodState, int]:
        totals = dict.fromkeys(COUNTED_STATES, 0)
        for queue in [*self.queues, *self.missing_queues]:
            for state, n in queue.counts.items():
                totals[state] = totals.get(state, 0) + n
        return totals


def live_summary() -> LiveSummary | None:
    """The latest cycle's summary (queues, risks, notices), or None before the first cycle."""
    data = LiveState.objects.filter(key=CYCLE_KEY).values_list("data", flat=True).first()
    if data is None:
        return None
    return LiveSummary(
        at=datetime.fromtimestamp(data["started_at"], tz=UTC),
        duration_ms=data["duration_ms"],
        mode=data["mode"],
        decisions=data["decisions"],
        errors=list(data.get("errors") or []),
        notices=list(data.get("notices") or []),
        gates=dict(data.get("gates") or {}),
        queues=[QueueReport.from_json(q) for q in data.get("queues") or []],
        risks=[WorkloadRisk.from_json(r) for r in data.get("risks") or []],
        gated_by_namespace=dict(data.get("gated_by_namespace") or {}),
        config=ConfigInForce.from_json(data["config"]) if data.get("config") else None,
        invalid=[InvalidObject.from_json(o) for o in data.get("invalid") or []],
        cluster=str(data.get("cluster") or ""),
        problems=[ObjectProblem.from_json(p) for p in data.get("problems") or []],
        missing_queues=[
            QueueReport(
                str(q["name"]), counts={PodState(k): int(n) for k, n in q["counts"].items()}
            )
            for q in data.get("missing_queues") or []
        ],
    )


def queue_names() -> frozenset[str] | None:
    """The queues the latest cycle saw (Queue objects, and the implicit ones it uses); None
    before the first cycle."""
    rows = LiveState.objects.filter(key=CYCLE_KEY).values_list("data__queues", flat=True)
    queues = rows.first()
    if queues is None and not rows.exists():
        return None
    return frozenset(q["name"] for q in queues or [] if isinstance(q, dict) and "name" in q)


def live_waiting(queue: str) -> list[WaitingPod] | None:
    """Pods waiting in ``queue`` at the latest cycle; None when the queue is unknown."""
    data = LiveState.objects.filter(key=queue_key(queue)).values_list("data", flat=True).first()
    if data is None:
        return None
    return [WaitingPod.from_json(pod) for pod in data.get("waiting") or []]


def live_waiting_everywhere() -> list[WaitingPod]:
    pods: list[WaitingPod] = []
    for data in LiveState.objects.filter(key__startswith="queue:").values_list("data", flat=True):
        pods += [WaitingPod.from_json(pod) for pod in data.get("waiting") or []]
    return pods
