"""The CycleReport: what one scheduling cycle decided and saw, as typed plain data.

This module is the one schema on both sides of Celery: the scheduler builds a CycleReport,
``to_json`` turns it into the message, and the dashboard's ``CycleReport.from_json`` reads it
back (and reads stored live state the same way). The dashboard never recomputes a figure the
engine reports: queue share, pod states and risk classes come from here.

Resources are engine units by name (``scheduler.api.quantity``): CPU in millicores, memory in
bytes, every other dimension as a count (GPUs in milli-units).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.status import Status

Resources = dict[str, float]


class PodState(enum.StrEnum):
    """One vocabulary for a pod's state, from the engine to the dashboard's pages."""

    GATED = "gated"  # Pending, still carrying a scheduling gate
    UNSCHEDULABLE = "unschedulable"  # Pending, no node can take it now (a node shortfall)
    WAITING = "waiting"  # Pending for another reason: its queue, its gang, a held admission
    PIPELINED = "pipelined"  # Pending, nominated to a node where resources are being released
    BINDING = "binding"  # allocated by Sluice, not yet seen bound
    RUNNING = "running"  # bound to a node
    TERMINATING = "terminating"  # evicted or deleted, still on its node
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DELETED = "deleted"

    @property
    def label(self) -> str:
        return self.value.capitalize()

    @property
    def pending(self) -> bool:
        return self in PENDING_STATES


PENDING_STATES = (PodState.GATED, PodState.UNSCHEDULABLE, PodState.WAITING, PodState.PIPELINED)
# The states a queue's figures count, in the order pages show them.
COUNTED_STATES = (PodState.RUNNING, *PENDING_STATES)


class TransitionKind(enum.StrEnum):
    # What the scheduler decided (the cycle's Writer records these).
    GATE_REMOVED = "gate_removed"
    ALLOCATED = "allocated"
    BIND_FAILED = "bind_failed"
    PIPELINED = "pipelined"
    UNPIPELINED = "unpipelined"
    EVICTED = "evicted"
    # What the cluster's own pods show (the dashboard records these from each report's pods):
    # a pod created (gated, when it carried a gate), seen in a new state (bound, running,
    # terminating, finished), gone from the cluster.
    CREATED = "created"
    OBSERVED = "observed"
    DELETED = "deleted"


class RiskClass(enum.StrEnum):
    """False-admission risk of a workload, worst first in ``RISK_ORDER``."""

    FITS_NOW = "fits_now"
    FITS_AFTER_SCALE_UP = "fits_after_scale_up"
    FITS_NO_NODE_SHAPE = "fits_no_node_shape"
    WAITING_FOR_QUEUE = "waiting_for_queue"


RISK_ORDER = (
    RiskClass.FITS_NO_NODE_SHAPE,
    RiskClass.FITS_AFTER_SCALE_UP,
    RiskClass.WAITING_FOR_QUEUE,
    RiskClass.FITS_NOW,
)


class CheckState(enum.StrEnum):
    """Kueue's admission-check states, as the node-capacity check uses them."""

    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"


@dataclass
class Transition:
    namespace: str
    name: str
    uid: str
    kind: TransitionKind
    from_state: PodState
    to_state: PodState
    node: str = ""
    message: str = ""
    queue: str = ""  # the queue of the pod's job, so history needs no lookup

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "kind": self.kind.value,
            "from_state": self.from_state.value,
            "to_state": self.to_state.value,
            "node": self.node,
            "message": self.message,
            "queue": self.queue,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Transition:
        return cls(
            data["namespace"],
            data["name"],
            data["uid"],
            TransitionKind(data["kind"]),
            PodState(data["from_state"]),
            PodState(data["to_state"]),
            data.get("node") or "",
            data.get("message") or "",
            data.get("queue") or "",
        )


@dataclass
class QueueReport:
    """A queue's figures after the cycle, each summed up the hierarchy like ``allocated``.

    ``capability`` is the queue's real capability (``spec.capability`` capped by its parent's
    and the cluster's) and ``deserved`` its deserved share after the queue plugin's
    computation; ``inqueue_reserved`` is the part of ``inqueue`` that gate reservations
    already hold (counted in both figures by the engine, to be drawn once).

    The ``spec_*`` fields are the Queue object's own figures as written (quantity strings, not
    engine units), so a page can show what the object says next to what was derived from it;
    ``figures`` names the computation that derived ``capability`` and ``deserved``
    (``FIGURES``). ``implicit`` marks a queue the scheduler uses that is no Queue object in the
    cluster (``root``, or ``default`` for pods that name no queue). ``unlimited`` lists the
    CPU or memory capabilities the spec sets at or below zero, as written: Volcano reads them as
    no limit. ``problem`` says why no job can use the queue (a missing parent, a cycle).
    """

    name: str
    parent: str = ""
    capability: Resources = field(default_factory=dict)
    deserved: Resources = field(default_factory=dict)
    allocated: Resources = field(default_factory=dict)
    inqueue: Resources = field(default_factory=dict)
    reserved: Resources = field(default_factory=dict)
    inqueue_reserved: Resources = field(default_factory=dict)
    request: Resources = field(default_factory=dict)  # its jobs' placed and pending tasks
    weight: int = 1  # spec.weight
    share: float = 0.0
    over_deserved: bool = False
    counts: dict[PodState, int] = field(default_factory=dict)  # its own jobs' pods only
    # Its own jobs by PodGroup phase after the cycle (Pending, Inqueue, Running, …): what
    # Volcano's queue status counts.
    podgroups: dict[str, int] = field(default_factory=dict)
    implicit: bool = False
    spec_capability: dict[str, str] = field(default_factory=dict)
    spec_deserved: dict[str, str] = field(default_factory=dict)
    spec_guarantee: dict[str, str] = field(default_factory=dict)
    unlimited: dict[str, str] = field(default_factory=dict)
    figures: str = ""  # a key of FIGURES; "" when no queue plugin ran
    problem: str = ""

    def count(self, state: PodState) -> int:
        return self.counts.get(state, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parent": self.parent,
            "capability": self.capability,
            "deserved": self.deserved,
            "allocated": self.allocated,
            "inqueue": self.inqueue,
            "reserved": self.reserved,
            "inqueue_reserved": self.inqueue_reserved,
            "request": self.request,
            "weight": self.weight,
            "share": self.share,
            "over_deserved": self.over_deserved,
            "counts": {state.value: n for state, n in self.counts.items()},
            "podgroups": dict(self.podgroups),
            "implicit": self.implicit,
            "spec_capability": dict(self.spec_capability),
            "spec_deserved": dict(self.spec_deserved),
            "spec_guarantee": dict(self.spec_guarantee),
            "unlimited": dict(self.unlimited),
            "figures": self.figures,
            "problem": self.problem,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueueReport:
        return cls(
            name=data["name"],
            parent=data.get("parent") or "",
            capability=dict(data.get("capability") or {}),
            deserved=dict(data.get("deserved") or {}),
            allocated=dict(data.get("allocated") or {}),
            inqueue=dict(data.get("inqueue") or {}),
            reserved=dict(data.get("reserved") or {}),
            inqueue_reserved=dict(data.get("inqueue_reserved") or {}),
            request=dict(data.get("request") or {}),
            weight=int(data.get("weight") or 1),
            share=float(data.get("share") or 0.0),
            over_deserved=bool(data.get("over_deserved")),
            counts={PodState(k): int(v) for k, v in (data.get("counts") or {}).items()},
            podgroups={str(k): int(v) for k, v in (data.get("podgroups") or {}).items()},
            implicit=bool(data.get("implicit")),
            spec_capability=_strings(data.get("spec_capability")),
            spec_deserved=_strings(data.get("spec_deserved")),
            spec_guarantee=_strings(data.get("spec_guarantee")),
            unlimited=_strings(data.get("unlimited")),
            figures=str(data.get("figures") or ""),
            problem=str(data.get("problem") or ""),
        )


def _strings(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


# How a queue's derived figures were computed, by the plugin that computed them (the key is
# ``QueueReport.figures``).
FIGURES_CAPACITY = "capacity"  # Volcano's capacity plugin, flat (its default)
FIGURES_HIERARCHY = "capacity-hierarchy"  # the capacity plugin with enableHierarchy
FIGURES_PROPORTION = "proportion"  # Volcano's proportion plugin (weights, water-filled)
FIGURES = (FIGURES_CAPACITY, FIGURES_HIERARCHY, FIGURES_PROPORTION)


@dataclass
class WaitingPod:
    """A pod still waiting after the cycle, and why (its state and the deciding Status)."""

    namespace: str
    name: str
    uid: str
    queue: str
    job: str
    state: PodState
    status: Status
    node: str = ""  # the nominated node of a pipelined pod
    created: int = 0  # metadata.creationTimestamp, seconds since the epoch (0: unknown)

    @property
    def gated(self) -> bool:
        return self.state is PodState.GATED

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "queue": self.queue,
            "job": self.job,
            "state": self.state.value,
            "status": self.status.to_json(),
            "node": self.node,
            "created": self.created,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WaitingPod:
        return cls(
            data["namespace"],
            data["name"],
            data["uid"],
            data.get("queue") or "",
            data.get("job") or "",
            PodState(data["state"]),
            Status.from_json(data.get("status")),
            data.get("node") or "",
            int(data.get("created") or 0),
        )


@dataclass
class PodRecord:
    """A pod of ours that is not waiting (bound, running, terminating, finished — or pending
    but outside the cycle's session), as the scheduler's cache holds it after the cycle: with
    ``CycleReport.waiting`` it lists every pod of ours in the cluster once, so the dashboard
    keeps one current state per pod and knows which pods are gone.

    Sent as a row, not an object: a report carries tens of thousands of them.
    """

    namespace: str
    name: str
    uid: str
    queue: str
    state: PodState
    node: str = ""
    created: int = 0  # metadata.creationTimestamp, seconds since the epoch (0: unknown)

    def to_json(self) -> list[Any]:
        return [self.namespace, self.name, self.uid, self.queue, self.state.value, self.node,
                self.created]  # fmt: skip

    @classmethod
    def from_json(cls, row: list[Any]) -> PodRecord:
        namespace, name, uid, queue, state, node, created = row
        return cls(
            namespace, name, uid, queue or "", PodState(state), node or "", int(created or 0)
        )


@dataclass
class WorkloadRisk:
    namespace: str
    name: str
    uid: str
    queue: str
    phase: str
    risk: RiskClass
    explanation: str
    check_state: CheckState | None  # None when the check did not run
    certain: bool
    pod_uids: list[str] = field(default_factory=list)  # to find a waiting pod's workload

    @property
    def held(self) -> bool:
        """The check keeps the workload Pending (Retry, or Pending for a snapshot)."""
        return self.check_state in (CheckState.RETRY, CheckState.PENDING)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "queue": self.queue,
            "phase": self.phase,
            "risk": self.risk.value,
            "explanation": self.explanation,
            "check_state": self.check_state.value if self.check_state else None,
            "certain": self.certain,
            "pod_uids": list(self.pod_uids),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkloadRisk:
        state = data.get("check_state")
        return cls(
            data["namespace"],
            data["name"],
            data["uid"],
            data.get("queue") or "",
            data.get("phase") or "",
            RiskClass(data["risk"]),
            data.get("explanation") or "",
            CheckState(state) if state else None,
            bool(data.get("certain", True)),
            list(data.get("pod_uids") or []),
        )


@dataclass
class InvalidObject:
    """An object Sluice cannot use (a pod, podgroup, queue, node or PriorityClass), left out
    of scheduling until it is fixed: which field, and why."""

    kind: str  # pod | podgroup | queue | node | priorityclass
    namespace: str
    name: str
    uid: str
    field: str  # the path of the value Sluice cannot use, when the error names one
    message: str  # field first: "spec.containers[0].resources.requests.cpu: invalid quantity …"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "field": self.field,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InvalidObject:
        return cls(
            data.get("kind") or "",
            data.get("namespace") or "",
            data.get("name") or "",
            data.get("uid") or "",
            data.get("field") or "",
            data.get("message") or "",
        )


@dataclass
class ObjectProblem:
    """Something wrong with a Queue, or with the queue a PodGroup or pod names, that the
    scheduler said on the object with a Warning event (``reason``, ``message``): Volcano emits
    no event for it (``scheduler.framework.queue_problems``)."""

    kind: str  # queue | podgroup | pod
    namespace: str
    name: str
    field: str  # the path of the value that is wrong: spec.capability.cpu, spec.queue, …
    reason: str  # the event's reason: QueueNotFound, QueueInvalid, CapabilityUnlimited, …
    message: str  # the event's message
    queue: str = ""  # for a PodGroup or pod: the queue it names

    @property
    def key(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where} {self.field}"

    @property
    def description(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name}"
            if self.namespace
            else (f"{self.kind} {self.name}")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "field": self.field,
            "reason": self.reason,
            "message": self.message,
            "queue": self.queue,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ObjectProblem:
        return cls(
            str(data.get("kind") or ""),
            str(data.get("namespace") or ""),
            str(data.get("name") or ""),
            str(data.get("field") or ""),
            str(data.get("reason") or ""),
            str(data.get("message") or ""),
            str(data.get("queue") or ""),
        )


@dataclass
class ConfigInForce:
    """The scheduler configuration a cycle ran with, where it came from, and its trouble."""

    source: str  # "default", "file /etc/…", "configmap ns/name key …"
    actions: list[str]
    tiers: list[list[str]]  # plugin names, tier by tier
    text: str  # the configuration as YAML (Volcano's format)
    error: str = ""  # a newer configuration that did not load
    warnings: list[str] = field(default_factory=list)  # e.g. Volcano-only arguments ignored
    # The process's own settings, as the scheduler reports them (0 / empty: not reported).
    period_s: float = 0.0  # seconds between cycles
    scheduler_names: list[str] = field(default_factory=list)  # spec.schedulerName values

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "actions": list(self.actions),
            "tiers": [list(t) for t in self.tiers],
            "text": self.text,
            "error": self.error,
            "warnings": list(self.warnings),
            "period_s": self.period_s,
            "scheduler_names": list(self.scheduler_names),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigInForce:
        return cls(
            data.get("source") or "",
            list(data.get("actions") or []),
            [list(t) for t in data.get("tiers") or []],
            data.get("text") or "",
            data.get("error") or "",
            list(data.get("warnings") or []),
            float(data.get("period_s") or 0.0),
            [str(n) for n in data.get("scheduler_names") or []],
        )


@dataclass
class CycleReport:
    started_at: float
    duration_s: float
    mode: str  # "act" or "observe"
    action_durations_s: dict[str, float] = field(default_factory=dict)
    queues: list[QueueReport] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    waiting: list[WaitingPod] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    gates: dict[str, int] = field(default_factory=dict)  # gate removals queued / at bind
    notices: list[str] = field(default_factory=list)  # e.g. queue reservations released
    risks: list[WorkloadRisk] = field(default_factory=list)  # when a capacity snapshot exists
    # The configuration in force, as the scheduler itself reports it (for the Scheduler page).
    config: ConfigInForce | None = None
    # Objects left out because Sluice cannot use them (their pods are also in ``waiting``).
    invalid: list[InvalidObject] = field(default_factory=list)
    # Queues whose spec is wrong and jobs naming a queue that does not exist, each said on its
    # object with a Warning event.
    problems: list[ObjectProblem] = field(default_factory=list)
    # Set when the cycle failed (the exception, in a line): nothing else in the report holds.
    failure: str = ""
    # Which cluster the cycle ran against: its kube-system namespace's UID ("" if unknown).
    cluster: str = ""
    # Every pod of ours not in ``waiting``; None from a scheduler that sends no inventory
    # (then the dashboard cannot tell which pods are gone).
    pods: list[PodRecord] | None = None
    # What a workload needs to be played again (the what-if lab's recorded workload), for the
    # pods this scheduler had not reported before, by UID: ``requests`` (engine units), the
    # PodGroup (``group``, "" for a pod without one), its ``minMember`` and
    # ``groupPriorityClassName``/``groupPriority``, the pod's ``priorityClassName`` and
    # ``priority``. Sent once per pod per scheduler process (``SchedulerCache.new_pod_facts``).
    pod_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Nodes on which the preempt action tried victims (Volcano's preemption attempts).
    preemption_attempts: int = 0

    @classmethod
    def failed(
        cls,
        started_at: float,
        duration_s: float,
        mode: str,
        error: BaseException,
        transitions: list[Transition] | None = None,
        errors: list[str] | None = None,
    ) -> CycleReport:
        """The report of a cycle that raised ``error``: it decided nothing more than the
        ``transitions`` it had sent by then (a bind leaves when its statement commits), which
        were awaited, each as it ended (a refused bind is BIND_FAILED), with their ``errors``."""
        text = f"{type(error).__name__}: {error}"
        return cls(started_at, duration_s, mode, transitions=list(transitions or []),
                   errors=list(errors or []), failure=text[:2000])  # fmt: skip

    def counts(self) -> dict[PodState, int]:
        """Pods by state over every queue (a queue counts its own jobs' pods only)."""
        totals = dict.fromkeys(COUNTED_STATES, 0)
        for queue in self.queues:
            for state, n in queue.counts.items():
                totals[state] = totals.get(state, 0) + n
        return totals

    def to_json(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "mode": self.mode,
            "action_durations_s": dict(self.action_durations_s),
            "queues": [q.to_json() for q in self.queues],
            "transitions": [t.to_json() for t in self.transitions],
            "waiting": [w.to_json() for w in self.waiting],
            "errors": list(self.errors),
            "gates": dict(self.gates),
            "notices": list(self.notices),
            "risks": [r.to_json() for r in self.risks],
            "config": self.config.to_json() if self.config else None,
            "invalid": [o.to_json() for o in self.invalid],
            "problems": [p.to_json() for p in self.problems],
            "failure": self.failure,
            "cluster": self.cluster,
            "pods": None if self.pods is None else [p.to_json() for p in self.pods],
            "pod_facts": dict(self.pod_facts),
            "preemption_attempts": self.preemption_attempts,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CycleReport:
        return cls(
            started_at=float(data["started_at"]),
            duration_s=float(data.get("duration_s") or 0.0),
            mode=data.get("mode") or "",
            action_durations_s=dict(data.get("action_durations_s") or {}),
            queues=[QueueReport.from_json(q) for q in data.get("queues") or []],
            transitions=[Transition.from_json(t) for t in data.get("transitions") or []],
            waiting=[WaitingPod.from_json(w) for w in data.get("waiting") or []],
            errors=list(data.get("errors") or []),
            gates=dict(data.get("gates") or {}),
            notices=list(data.get("notices") or []),
            risks=[WorkloadRisk.from_json(r) for r in data.get("risks") or []],
            config=ConfigInForce.from_json(data["config"]) if data.get("config") else None,
            invalid=[InvalidObject.from_json(o) for o in data.get("invalid") or []],
            problems=[ObjectProblem.from_json(p) for p in data.get("problems") or []],
            failure=str(data.get("failure") or ""),
            cluster=str(data.get("cluster") or ""),
            pods=None
            if data.get("pods") is None
            else [PodRecord.from_json(p) for p in data["pods"]],
            pod_facts=dict(data.get("pod_facts") or {}),
            preemption_attempts=int(data.get("preemption_attempts") or 0),
        )
