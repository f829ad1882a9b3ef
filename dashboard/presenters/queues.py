"""Queue rows for the pages: the report's figures with their bars, risk counts and pods in
words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dashboard.presenters.amounts import format_amount, format_resources
from dashboard.presenters.bars import Bar, capacity_bars
from dashboard.presenters.reasons import risks_by_pod, wait_reason
from scheduler.api.labels import DEFAULT_QUEUE, ROOT_QUEUE
from scheduler.api.report import (
    FIGURES_CAPACITY,
    FIGURES_HIERARCHY,
    FIGURES_PROPORTION,
    InvalidObject,
    ObjectProblem,
    PodState,
    QueueReport,
    RiskClass,
    WaitingPod,
    WorkloadRisk,
)

SHOWN_PER_STATE = 50  # pods listed per state on a queue's page


IMPLICIT = "implicit (not a Queue object)"

# How the scheduler derived a queue's figures from the Queue objects, by the plugin that did
# (``QueueReport.figures``): (real capability, deserved), for a tooltip.
DERIVATIONS = {
    FIGURES_HIERARCHY: (
        "Derived by the capacity plugin with enableHierarchy: the parent's real capability "
        "(root's is unlimited unless its spec sets one), less the guarantees of the parent's "
        "children, plus this queue's own guarantee, then capped by this queue's "
        "spec.capability; a resource the spec leaves unset, or sets to 0 or less for CPU or "
        "memory, is the parent's.",
        "Derived by the capacity plugin with enableHierarchy: spec.deserved, raised to "
        "spec.guarantee where the guarantee is larger.",
    ),
    FIGURES_CAPACITY: (
        "Derived by the capacity plugin without hierarchy (Volcano's default): the cluster's "
        "allocatable total now, less every queue's guarantee, plus this queue's own guarantee, "
        "then capped by spec.capability (CPU or memory at 0 or less: no cap). It follows the "
        "cluster's size.",
        "Derived by the capacity plugin without hierarchy: spec.deserved capped by the real "
        "capability, then raised to spec.guarantee where the guarantee is larger.",
    ),
    FIGURES_PROPORTION: (
        "Derived by the proportion plugin: the cluster's allocatable total now, less every "
        "queue's guarantee, plus this queue's own guarantee, then capped by spec.capability. "
        "It follows the cluster's size.",
        "Derived by the proportion plugin's water-fill, not read from spec.deserved: round "
        "after round the cluster's remaining resources are divided among the queues with jobs "
        "in proportion to spec.weight, each share capped by the queue's real capability and "
        "by what its jobs request, and raised to spec.guarantee.",
    ),
}
NOT_DERIVED = (
    "No queue plugin (capacity or proportion) ran: the queue has no derived capability.",
    "No queue plugin (capacity or proportion) ran: the queue has no derived deserved share.",
)

# What Volcano does where Sluice says a queue problem with an event (ObjectProblem.reason).
VOLCANO_SAYS = {
    "QueueNotFound": "Volcano emits no event for this: its admission webhook refuses a "
    "PodGroup or Job whose queue does not exist (“unable to find queue”), and its scheduler "
    "ignores such a job with a log line only. Sluice emits this Warning event instead.",
    "QueueInvalid": "Volcano emits no event for this: its scheduler logs it and leaves the "
    "queue's jobs (with a broken hierarchy, every queue's) unscheduled. Sluice emits this "
    "Warning event instead.",
    "ParentQueueNotFound": "Volcano emits no event for this: its admission webhook refuses a "
    "Queue whose parent does not exist, and its capacity plugin, handed one anyway, logs an "
    "error and schedules no queue that cycle. Sluice emits this Warning event instead, and "
    "refuses only this queue's jobs.",
    "CapabilityUnlimited": "Volcano emits no event for this: its capacity plugin reads a CPU or "
    "memory capability at or below zero as unlimited (with enableHierarchy, as the parent's) in "
    "silence (its admission webhook refuses a negative one: it must be greater than or equal "
    "to 0; zero passes). Sluice emits this Warning event instead.",
    "InvalidObject": "Volcano's admission webhook or the API server would refuse such a Queue; "
    "Sluice leaves it out of scheduling and emits this Warning event.",
}


@dataclass(frozen=True)
class QueueError:
    """Something wrong with a queue, shown on it: the problem, and the event said on the
    object (reason and message) with what Volcano does instead."""

    field: str
    reason: str
    message: str
    volcano: str


@dataclass(frozen=True)
class QueueSpec:
    """A queue's figures as written and as derived, in words."""

    capability: str  # spec.capability as written ("" when unset)
    deserved: str
    guarantee: str
    real_capability: str  # derived
    derived_deserved: str
    capability_how: str  # tooltips: how each derived figure was derived
    deserved_how: str


def written(
    values: Mapping[str, str], unlimited: Mapping[str, str] | None = None, parent: str = ""
) -> str:
    """A resource list as written: ``cpu: 48, memory: 256Gi``; a CPU or memory capability at
    or below zero is ``cpu: unlimited (spec says -5)`` — or, when the capacity plugin's
    hierarchy gives the queue its ``parent``'s capability instead, ``cpu: parent org's (spec
    says -5)``."""
    unlimited = unlimited or {}
    instead = f"parent {parent}'s" if parent else "unlimited"
    return ", ".join(
        f"{k}: {instead} (spec says {v})" if k in unlimited else f"{k}: {v}"
        for k, v in values.items()
    )


def capability_words(resources: Mapping[str, float]) -> str:
    """A derived capability: CPU and memory always named (absent means unlimited), then
    whatever else limits (pods are never a queue limit)."""
    parts = [
        format_amount(k, resources[k]) if k in resources else f"unlimited {label}"
        for k, label in (("cpu", "CPU"), ("memory", "memory"))
    ]
    parts += [
        format_amount(k, v) for k, v in resources.items() if k not in ("cpu", "memory", "pods")
    ]
    return ", ".join(parts)


def queue_spec(report: QueueReport | None, live: Mapping | None = None) -> QueueSpec:
    """``live``: the Queue object's spec as the cluster has it now (``queue_specs``), which
    wins over the copy in the report (the latest cycle's)."""
    if live is not None:
        capability = dict(live.get("capability") or {})
        deserved, guarantee = live.get("deserved") or {}, live.get("guarantee") or {}
        unlimited = dict(live.get("unlimited") or {})
    elif report is not None:
        capability, deserved = report.spec_capability, report.spec_deserved
        guarantee, unlimited = report.spec_guarantee, report.unlimited
    else:
        capability, deserved, guarantee, unlimited = {}, {}, {}, {}
    how = DERIVATIONS.get(report.figures if report else "", NOT_DERIVED)
    derived = report is not None and bool(report.figures)
    parent = (live or {}).get("parent") or (report.parent if report else "")
    # capacity.go with enableHierarchy: a capability <= 0 is the parent's (root's: none).
    hierarchy = report is not None and report.figures == FIGURES_HIERARCHY
    inherited = parent if hierarchy and parent and parent != ROOT_QUEUE else ""
    return QueueSpec(
        capability=written(capability, unlimited, inherited),
        deserved=written(deserved),
        guarantee=written(guarantee),
        real_capability=capability_words(report.capability) if report and derived else "",
        derived_deserved=format_resources(report.deserved) if report and derived else "",
        capability_how=how[0],
        deserved_how=how[1],
    )


def queue_errors(
    name: str, problems: Sequence[ObjectProblem], invalid: Sequence[InvalidObject]
) -> list[QueueError]:
    """What the latest cycle found wrong with Queue ``name``, each with the event said on it."""
    errors = [
        QueueError(o.field, "InvalidObject", f"Sluice cannot use this queue: {o.message}",
                   VOLCANO_SAYS["InvalidObject"])
        for o in invalid
        if o.kind == "queue" and o.name == name
    ]  # fmt: skip
    errors += [
        QueueError(p.field, p.reason, p.message, VOLCANO_SAYS.get(p.reason, ""))
        for p in problems
        if p.kind == "queue" and p.name == name
    ]
    return errors


def missing_words(name: str, invalid: Sequence[InvalidObject]) -> str:
    """A queue pods name that the cycle did not have, in two words: a Queue object Sluice
    refused "cannot be used"; else it "does not exist"."""
    refused = any(o.kind == "queue" and o.name == name for o in invalid)
    return "cannot be used" if refused else "does not exist"


def missing_queue_errors(
    name: str, problems: Sequence[ObjectProblem], invalid: Sequence[InvalidObject]
) -> list[QueueError]:
    """What is said about queue ``name``, which the cycle did not have: the Queue object's own
    errors (when it exists and Sluice refused it), then the events said on the PodGroups and
    pods naming it, one line per reason (there is one event per object: thousands, maybe)."""
    errors = queue_errors(name, problems, invalid)
    by_reason: dict[str, list[ObjectProblem]] = {}
    for p in problems:
        if p.kind != "queue" and p.queue == name:
            by_reason.setdefault(p.reason, []).append(p)
    for reason, said in by_reason.items():
        first = said[0]
        others = f" and {len(said) - 1} other object(s) naming it" if len(said) > 1 else ""
        message = f"said on {first.description}{others}: {first.message}"
        errors.append(QueueError(first.field, reason, message, VOLCANO_SAYS.get(reason, "")))
    return errors


def used_by_pods(queue: QueueReport) -> bool:
    """Pods of the queue exist: counted in a state, or holding resources (a pod binding is in
    no count yet, but allocated)."""
    held = (queue.allocated, queue.inqueue, queue.reserved)
    return any(queue.counts.values()) or any(v for figures in held for v in figures.values())


def listed(queue: QueueReport) -> bool:
    """Pages list the Queue objects, and an implicit queue only while pods use it (``root`` is
    the tree's anchor, never a row of the Overview)."""
    return queue.name != ROOT_QUEUE and (not queue.implicit or used_by_pods(queue))


@dataclass(frozen=True)
class QueueRow:
    queue: QueueReport
    bars: list[Bar]
    risks: int  # workloads at risk (any class but fits_now)
    spec: QueueSpec | None = None
    errors: list[QueueError] = field(default_factory=list)
    # Pods name this queue and the cycle did not have it: "does not exist" or "cannot be used"
    missing: str = ""

    @property
    def implicit(self) -> bool:
        return self.queue.implicit

    @property
    def name(self) -> str:
        return self.queue.name

    @property
    def counts(self) -> dict[str, int]:
        """Pods by state, keyed by the state's name (templates cannot use enum keys)."""
        return {state.value: n for state, n in self.queue.counts.items()}


def queue_rows(
    queues: Sequence[QueueReport],
    risks: Sequence[WorkloadRisk],
    only: str | None = None,
    problems: Sequence[ObjectProblem] = (),
    invalid: Sequence[InvalidObject] = (),
    missing: Sequence[QueueReport] = (),
) -> list[QueueRow]:
    """Every listed queue (``listed``), or just ``only`` (any queue the cycle saw), with
    capacity bars, risk counts, spec and derived figures and what is wrong with it; then the
    ``missing`` queues (``LiveSummary.missing_queues``: pods name them, the cycle did not have
    them), with their pods' counts and the events said on the objects naming them."""
    at_risk: dict[str, int] = {}
    for risk in risks:
        if risk.risk is not RiskClass.FITS_NOW:
            at_risk[risk.queue] = at_risk.get(risk.queue, 0) + 1
    return [
        QueueRow(
            q,
            capacity_bars(q),
            at_risk.get(q.name, 0),
            queue_spec(q),
            queue_errors(q.name, problems, invalid),
        )
        for q in queues
        if (listed(q) if only is None else q.name == only and q.name != ROOT_QUEUE)
    ] + [
        QueueRow(
            q,
            [],
            at_risk.get(q.name, 0),
            None,
            missing_queue_errors(q.name, problems, invalid),
            missing_words(q.name, invalid),
        )
        for q in missing
        if only is None or q.name == only
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
    share: float | None
    over_deserved: bool
    reclaimable: bool
    in_cycle: bool
    spec: QueueSpec
    implicit: bool = False  # not a Queue object: the scheduler's own root or default
    problem: str = ""  # a queue outside the tree: its parent is missing, or a cycle
    errors: list[QueueError] = field(default_factory=list)
    missing: str = ""  # pods name it, the cycle did not have it: "does not exist", …

    @property
    def indent(self) -> float:
        return self.depth * 1.5


def tree_rows(
    queues: Mapping[str, QueueReport],
    specs: Mapping[str, dict] | None,
    problems: Sequence[ObjectProblem] = (),
    invalid: Sequence[InvalidObject] = (),
    missing: Sequence[str] = (),
) -> list[TreeRow]:
    """Depth-first rows, parents before children, of the Queue objects the cluster has now
    (``specs``; None when it cannot be read: those of the latest cycle, every queue under
    root), of an implicit queue while pods use it and of the ``missing`` queues (pods name
    them, the cycle did not have them: deleted, never created, unusable), each marked so and
    with the events said on the objects naming it; ``root`` heads the tree either way."""
    if specs is None:
        names = {n for n, q in queues.items() if not q.implicit}
        specs = {}
    else:
        names = set(specs)
    names |= {n for n, q in queues.items() if q.implicit and used_by_pods(q)}
    absent = frozenset(missing)
    names |= absent
    names.discard(ROOT_QUEUE)
    children: dict[str, list[str]] = {}
    for name in sorted(names):
        parent = (specs.get(name) or {}).get("parent") or ROOT_QUEUE
        children.setdefault(parent, []).append(name)
    out: list[TreeRow] = []

    def visit(name: str, depth: int, problem: str = "") -> None:
        report, spec = queues.get(name), specs.get(name)
        seen.add(name)
        object_exists = spec is not None or (report is not None and not report.implicit)
        out.append(
            TreeRow(
                name=name,
                depth=depth,
                allocated=format_resources(report.allocated if report else None),
                share=report.share if report else None,
                over_deserved=report.over_deserved if report else False,
                reclaimable=(spec or {}).get("reclaimable", True) is not False,
                in_cycle=report is not None,
                spec=queue_spec(report, spec),
                implicit=not object_exists and name not in absent,
                problem=problem or (report.problem if report else ""),
                errors=missing_queue_errors(name, problems, invalid)
                if name in absent
                else queue_errors(name, problems, invalid),
                missing=missing_words(name, invalid) if name in absent else "",
            )
        )
        for child in children.get(name, []):
            if child not in seen:
                visit(child, depth + 1)

    seen: set[str] = set()
    visit(ROOT_QUEUE, 0)
    # Queues the walk from root never reaches — a missing parent, or a cycle — are listed
    # after the tree with what is wrong: the page is where one looks for them.
    for name in sorted(names - seen):
        if name in seen:
            continue
        parent = (specs.get(name) or {}).get("parent") or ROOT_QUEUE
        if parent not in names and parent != ROOT_QUEUE:
            problem = f"its parent {parent} does not exist"
        else:
            problem = f"spec.parent forms a cycle through {parent}"
        visit(name, 0, problem)
    return out


def implicit_default_note(name: str) -> str:
    if name == DEFAULT_QUEUE:
        return (
            "Pods that name no queue go to the queue “default”. The cluster has no Queue object "
            "of that name: the scheduler uses one of its own, without limits."
        )
    return "The cluster has no Queue object of that name: the scheduler uses one of its own."
