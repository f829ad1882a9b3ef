"""TaskStatus and TaskInfo: one pod as the scheduler sees it."""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from scheduler.api.helpers import (
    annotations_of,
    as_int,
    describe,
    meta,
    require_name,
    scheduling_gates,
    uid_of,
)
from scheduler.api.labels import GROUP_NAME_ANNOTATION, PREEMPTABLE
from scheduler.api.node_matching import PodConstraints, pod_constraints
from scheduler.api.quantity import PODS
from scheduler.api.report import PodState
from scheduler.api.requests import pod_requests as effective_requests
from scheduler.api.resource import Resource


class TaskStatus(enum.Enum):
    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


_ALLOCATED = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)


def allocated_status(status: TaskStatus) -> bool:
    """Volcano's ``AllocatedStatus``: the task holds node resources."""
    return status in _ALLOCATED


@dataclass
class TransactionContext:
    """Where a statement placed the task; saved as ``last_transaction`` when undone (issue #5044)."""

    node_name: str = ""
    nominated_node_name: str = ""
    status: TaskStatus = TaskStatus.PENDING

    def clone(self) -> TransactionContext:
        return TransactionContext(self.node_name, self.nominated_node_name, self.status)


_POD_STATES = {
    TaskStatus.PIPELINED: PodState.PIPELINED,
    TaskStatus.ALLOCATED: PodState.BINDING,
    TaskStatus.BINDING: PodState.BINDING,
    TaskStatus.BOUND: PodState.RUNNING,
    TaskStatus.RUNNING: PodState.RUNNING,
    TaskStatus.RELEASING: PodState.TERMINATING,
    TaskStatus.SUCCEEDED: PodState.SUCCEEDED,
    TaskStatus.FAILED: PodState.FAILED,
}


def pod_state_of(task: TaskInfo) -> PodState:
    """The pod's state in the report's vocabulary; a pending pod is gated or waiting (whether
    it is unschedulable is decided by why it waits, after the cycle)."""
    if task.status == TaskStatus.PENDING or task.status == TaskStatus.UNKNOWN:
        return PodState.GATED if task.sch_gated else PodState.WAITING
    return _POD_STATES[task.status]


def pod_status(pod: Mapping[str, Any]) -> TaskStatus:
    """Volcano's ``getTaskStatus``."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool(meta(pod).get("deletionTimestamp"))
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        if (pod.get("spec") or {}).get("nodeName"):
            return TaskStatus.BOUND
        # A decision some scheduler instance persisted (issue #5044, problem 4): continue it.
        return TaskStatus.PIPELINED if nominated_node(pod) else TaskStatus.PENDING
    return {"Succeeded": TaskStatus.SUCCEEDED, "Failed": TaskStatus.FAILED}.get(
        phase, TaskStatus.UNKNOWN
    )


@functools.lru_cache(maxsize=65536)
def epoch_seconds(timestamp: str) -> int:
    """An RFC 3339 timestamp (``metadata.creationTimestamp``) in seconds since the epoch; 0
    when it does not read. Cached: a cluster's pods share far fewer creation seconds."""
    try:
        return int(datetime.fromisoformat(timestamp).timestamp()) if timestamp else 0
    except (TypeError, ValueError):
        return 0


def nominated_node(pod: Mapping[str, Any]) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


def pod_requests(pod: Mapping[str, Any], obj: str) -> tuple[Resource, Resource]:
    """(Resreq, InitResreq), both the pod's effective request (``scheduler.api.requests``),
    as in Volcano's NewTaskInfo: what it takes from its node and from its queue."""
    effective = Resource(effective_requests(pod, obj))
    # The node-capacity check sizes a pod by its limits: a pod whose limits Sluice cannot
    # count (their sum past an int64) is refused here, once, not in every cycle's check.
    effective_requests(pod, obj, "limits")
    return effective, effective.clone()


# The fields of a pod's spec that its requests (``scheduler.api.requests``) and its node
# constraints (``pod_constraints``, all but nodeName) are read from.
_REQUEST_FIELDS = ("containers", "initContainers", "overhead")
_CONSTRAINT_FIELDS = ("nodeSelector", "affinity", "tolerations")


def _same(before: Mapping[str, Any] | None, after: Mapping[str, Any], fields: tuple) -> bool:
    return before is not None and all(_identical(before.get(f), after.get(f)) for f in fields)


def _identical(old: object, new: object) -> bool:
    """Equal as JSON values, not only as Python ones: ``1 == True == 1.0``, while a quantity
    ``true`` is invalid (about 1.5 us for a pod's containers)."""
    return old is new or repr(old) == repr(new)


class TaskInfo:
    """A pod. Cloned per session; the pod dict itself is shared, as in Volcano."""

    __slots__ = (
        "uid", "name", "namespace", "job_id", "pod", "status", "resreq", "init_resreq",
        "node_name", "priority", "creation", "sch_gated", "transaction", "last_transaction",
        "best_effort", "node_req", "fit_req", "signature", "preemptable", "spec_read",
    )  # fmt: skip
    resreq: Resource
    init_resreq: Resource
    node_req: Resource
    fit_req: Resource
    signature: PodConstraints

    def __init__(
        self,
        pod: Mapping[str, Any],
        priority_classes: Mapping[str, int] | None = None,
        previous: TaskInfo | None = None,
    ):
        """``previous``: the same pod's task before this update; what it read from fields the
        update left alone is taken from it rather than parsed again (a pod's watch updates
        change its status and nodeName, seldom its containers or its constraints)."""
        obj = describe(pod, "pod")
        self.name = require_name(pod, "pod")
        self.namespace = meta(pod).get("namespace") or "default"
        self.uid = uid_of(pod, "pod")
        self.pod = pod
        group = annotations_of(pod).get(GROUP_NAME_ANNOTATION)
        self.job_id = f"{self.namespace}/{group}" if group else f"{self.namespace}/pod:{self.uid}"
        self.status = pod_status(pod)
        spec = pod.get("spec") or {}
        # The spec the requests and constraints were read from (``pod`` may be replaced by a
        # fresher copy while the task keeps its decision: SchedulerCache._keep_decision).
        self.spec_read = spec
        before = previous.spec_read if previous is not None else None
        if previous is not None and _same(before, spec, _REQUEST_FIELDS):
            self.resreq, self.init_resreq = previous.resreq, previous.init_resreq
            self.node_req, self.fit_req = previous.node_req, previous.fit_req
        else:
            self.resreq, self.init_resreq = pod_requests(pod, obj)
            # What the task takes from a node: its request plus one pod slot.
            self.node_req = self.resreq.clone().add(Resource({PODS: 1}))
            self.fit_req = self.init_resreq.clone().add(Resource({PODS: 1}))
        self.best_effort = self.init_resreq.is_empty()
        nominated = nominated_node(pod)
        # A Pipelined task sits on its nominated node, holding its reservation there.
        pipelined = self.status == TaskStatus.PIPELINED
        self.node_name = nominated if pipelined else spec.get("nodeName") or ""
        self.priority = _pod_priority(spec, priority_classes or {}, obj)
        self.creation = meta(pod).get("creationTimestamp") or ""
        self.sch_gated = bool(scheduling_gates(pod))
        self.transaction = TransactionContext(self.node_name, nominated, self.status)
        self.last_transaction: TransactionContext | None = None
        # Hashable node constraints: pods that share it share one predicate mask per session.
        node_name = spec.get("nodeName") or ""
        if (
            previous is not None
            and isinstance(node_name, str)
            and _same(before, spec, _CONSTRAINT_FIELDS)
        ):
            signature = previous.signature
            if signature.node_name != node_name:
                signature = replace(signature, node_name=node_name)
            self.signature = signature
        else:
            self.signature = pod_constraints(pod, obj=obj)
        # Read once: preempt and reclaim ask it of every task on every node they try.
        self.preemptable = pod_preemptable(pod)

    def clone(self) -> TaskInfo:
        t = TaskInfo.__new__(TaskInfo)
        for slot in TaskInfo.__slots__:
            setattr(t, slot, getattr(self, slot))
        t.transaction = self.transaction.clone()
        return t

    @property
    def nominated_node_name(self) -> str:
        """Set synchronously with the pipeline decision, not when the watch brings the pod's
        ``status.nominatedNodeName`` back (issue #5044, problem 3)."""
        return self.transaction.nominated_node_name

    def order_key(self) -> tuple:
        """Priority first (higher first), then creation time, then UID — deterministic."""
        return (-self.priority, self.creation, self.uid)

    def __repr__(self) -> str:
        return f"Task({self.namespace}/{self.name} {self.status.value} {self.node_name})"


def pod_preemptable(pod: Mapping[str, Any]) -> bool:
    """``volcano.sh/preemptable`` (annotation, then label); a pod is preemptable by default,
    and an unreadable value is false, as Volcano's GetPodPreemptable."""
    metadata = meta(pod)
    for source in (metadata.get("annotations") or {}, metadata.get("labels") or {}):
        if PREEMPTABLE in source:
            return str(source[PREEMPTABLE]).strip().lower() in {"true", "1", "t"}
    return True


def _pod_priority(spec: Mapping[str, Any], classes: Mapping[str, int], obj: str) -> int:
    """``spec.priority`` (the API server's Priority admission sets it from the class); a pod
    created without that admission falls back to its class's value."""
    if spec.get("priority") is not None:
        return as_int(spec["priority"], obj=obj, field="spec.priority")
    # An unknown class would have been rejected at admission; treat it as the default.
    return classes.get(spec.get("priorityClassName") or "", 0)
