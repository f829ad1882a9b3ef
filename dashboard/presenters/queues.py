"""Queue rows for the pages: the report's figures with their bars, risk counts and pods in
words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dashboard.presenters.amounts import format_resources
from dashboard.presenters.bars import Bar, capacity_bars
from dashboard.presenters.reasons import risks_by_pod, wait_reason
from scheduler.api.labels import ROOT_QUEUE
from scheduler.api.report import PodState, QueueReport, RiskClass, WaitingPod, WorkloadRisk

SHOWN_PER_STATE = 50  # pods listed per state on a queue's page


@dataclass(frozen=True)
class QueueRow:
    queue: QueueReport
    bars: list[Bar]
    risks: int  # workloads at risk (any class but fits_now)

    @property
    def name(self) -> str:
        return self.queue.name

    @property
    def counts(self) -> dict[str, int]:
        """Pods by state, keyed by the state's name (templates cannot use enum keys)."""
        return {state.value: n for state, n in self.queue.counts.items()}


def queue_rows(
    queues: Sequence[QueueReport], risks: Sequence[WorkloadRisk], only: str | None = None
) -> list[QueueRow]:
    """Every queue but the root (or just ``only``), with capacity bars and risk counts."""
    at_risk: dict[str, int] = {}
    for risk in risks:
        if risk.risk is not RiskClass.FITS_NOW:
            at_risk[risk.queue] = at_risk.get(risk.queue, 0) + 1
    return [
        QueueRow(q, capacity_bars(q), at_risk.get(q.name, 0))
        for q in queues
        if q.name != ROOT_QUEUE and (only is None or q.name == only)
    ]


@dataclass(frozen=True)
class ExplainedPod:
    pod: WaitingPod
    reason: str


@dataclass(frozen=True)
class StateGroup:
    state: PodState
    count: int
    pods: list[ExplainedPod] = field(default_factory=list)


def explained_groups(
    groups: Mapping[PodState, list[WaitingPod]],
    risks: Sequence[WorkloadRisk],
    gate_removed: set[str],
    shown: int = SHOWN_PER_STATE,
) -> list[StateGroup]:
    """Each state's count and its first ``shown`` pods with why they wait, in words (there
    may be thousands; only those shown are put into words)."""
    by_pod = risks_by_pod(risks)

    def explained(pod: WaitingPod) -> ExplainedPod:
        reason = wait_reason(pod, by_pod.get(pod.uid), gate_removed=pod.uid in gate_removed)
        return ExplainedPod(pod, reason)

    return [
        StateGroup(state, len(pods), [explained(p) for p in pods[:shown]])
        for state, pods in groups.items()
    ]


@dataclass(frozen=True)
class TreeRow:
    name: str
    depth: int
    allocated: str
    deserved: str
    capability: str
    guarantee: str
    share: float | None
    over_deserved: bool
    reclaimable: bool
    in_cycle: bool
    problem: str = ""  # a queue outside the tree: its parent is missing, or a cycle

    @property
    def indent(self) -> float:
        return self.depth * 1.5


def tree_rows(queues: Mapping[str, QueueReport], specs: Mapping[str, dict]) -> list[TreeRow]:
    """Depth-first rows, parents before children; without specs every queue is under root."""
    children: dict[str, list[str]] = {}
    for name in sorted(set(queues) | set(specs)):
        if name == ROOT_QUEUE:
            continue
        parent = (specs.get(name) or {}).get("parent") or ROOT_QUEUE
        children.setdefault(parent, []).append(name)
    out: list[TreeRow] = []

    def visit(name: str, depth: int, problem: str = "") -> None:
        report, spec = queues.get(name), specs.get(name) or {}
        seen.add(name)
        out.append(
            TreeRow(
                name=name,
                depth=depth,
                allocated=format_resources(report.allocated if report else None),
                deserved=format_resources(report.deserved if report else None),
                capability=format_resources(report.capability if report else None),
                guarantee=", ".join(f"{v} {k}" for k, v in spec.get("guarantee", {}).items()),
                share=report.share if report else None,
                over_deserved=report.over_deserved if report else False,
                reclaimable=spec.get("reclaimable", True),
                in_cycle=report is not None,
                problem=problem,
            )
        )
        for child in children.get(name, []):
            if child not in seen:
                visit(child, depth + 1)

    seen: set[str] = set()
    visit(ROOT_QUEUE, 0)
    # Queues the walk from root never reaches — a missing parent, or a cycle — are listed
    # after the tree with what is wrong: the page is where one looks for them.
    for name in sorted((set(queues) | set(specs)) - seen - {ROOT_QUEUE}):
        if name in seen:
            continue
        parent = (specs.get(name) or {}).get("parent") or ROOT_QUEUE
        if parent not in queues and parent not in specs:
            problem = f"its parent {parent} does not exist"
        else:
            problem = f"spec.parent forms a cycle through {parent}"
        visit(name, 0, problem)
    return out
