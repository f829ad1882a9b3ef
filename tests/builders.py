"""Every object the tests build, one builder per kind.

Kubernetes objects (``pod``, ``node``, ``podgroup``, ``queue``, ``namespace``, ``binding``) are
plain JSON dicts shaped as the API server returns them: ``apiVersion`` and ``kind``, the
server's ``metadata.uid`` and ``creationTimestamp`` (derived from the name and ``created``,
so a test can name them; ``None`` leaves them out, for a store that stamps its own), and a
``status``. Empty maps are left out, as the API server leaves them out. ``body(obj)`` is what a
client sends to create one through the API.

The CycleReport builders (``queue_report``, ``waiting_pod``, ``pod_record``, ``transition``,
``risk``, ``cycle_report``) make the engine's report as the scheduler worker sends it to the dashboard.

Annotation, label and gate names are spelled out here rather than imported from the engine, so
that a misspelt constant in the engine fails the tests instead of agreeing with them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.api.report import (
    CheckState,
    CycleReport,
    PodRecord,
    PodState,
    QueueReport,
    RiskClass,
    Transition,
    TransitionKind,
    WaitingPod,
    WorkloadRisk,
)
from scheduler.api.status import Code, Status

GATE = "scheduling.volcano.sh/queue-allocation-gate"
GROUP_NAME = "scheduling.k8s.io/group-name"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
VOLCANO = "scheduling.volcano.sh/v1beta1"
GPU = "nvidia.com/gpu"

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def timestamp(created: int | str) -> str:
    """``created`` seconds after 2024-01-01T00:00:00Z, or a timestamp given as it is."""
    if isinstance(created, str):
        return created
    return (EPOCH + timedelta(seconds=created)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metadata(
    name: str,
    namespace: str | None,
    uid: str | None,
    created: int | str | None,
    labels: dict | None = None,
    annotations: dict | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    if created is not None:
        meta["creationTimestamp"] = timestamp(created)
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


# --- Kubernetes objects ----------------------------------------------------------------------


def pod(
    name: str,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    *,
    namespace: str = "ns",
    gpu: str | None = None,
    requests: dict | None = None,
    limits: dict | None = None,
    guaranteed: bool = False,
    containers: list[dict] | None = None,
    init_containers: list[dict] | None = None,
    image: str = "busybox",
    group: str | None = None,
    queue: str | None = None,
    gates: Iterable[str] = (),
    opt_in: bool = False,
    node_name: str | None = None,
    nominated: str | None = None,
    phase: str | None = None,
    conditions: list[dict] | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    grace: int | None = None,
    selector: Any = None,
    affinity: dict | None = None,
    tolerations: list | None = None,
    labels: dict | None = None,
    annotations: dict | None = None,
    owner: str | None = None,
    scheduler: str | None = "volcano",
    deletion: str | None = None,
    uid: str | None = "",
    created: int | str | None = 0,
    spec: dict | None = None,
) -> dict[str, Any]:
    """A pod whose container ``main`` requests ``cpu``, ``memory`` and ``gpu``.

    Resources: ``requests`` adds to (or, with ``cpu=None, memory=None``, makes up) the
    requests; ``limits`` are the limits; ``guaranteed`` makes the limits equal the requests.
    ``containers`` and ``init_containers`` are further containers, as given.

    Volcano: ``group`` (PodGroup annotation), ``queue`` (queue annotation), ``gates`` (scheduling
    gate names; a gated pod is PodScheduled=False SchedulingGated), ``opt_in`` (the
    queue-allocation-gate annotation).

    Placement and state: ``node_name``; ``phase`` (default Running on a node, else Pending);
    ``nominated`` (status.nominatedNodeName); ``conditions`` (status.conditions, instead of the
    gated one); ``deletion`` (metadata.deletionTimestamp: terminating).

    Spec: ``priority``, ``priority_class``, ``grace`` (terminationGracePeriodSeconds),
    ``selector`` (nodeSelector), ``affinity``, ``tolerations``, ``scheduler`` (schedulerName;
    ``None``: none), ``spec`` (any other fields, merged last).

    Metadata: ``labels``, ``annotations``, ``owner`` (the kind of its controller), ``uid``
    (default ``uid-<namespace>-<name>``; ``None``: none), ``created`` (seconds after
    2024-01-01, or a timestamp; ``None``: none).
    """
    gates = list(gates)
    notes = dict(annotations or {})
    if group:
        notes[GROUP_NAME] = group
    if queue:
        notes[QUEUE_NAME] = queue
    if opt_in:
        notes[GATE] = "true"
    meta = _metadata(
        name,
        namespace,
        f"uid-{namespace}-{name}" if uid == "" else uid,
        created,
        labels,
        notes,
    )
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1" if owner == "Node" else "apps/v1",
                "kind": owner,
                "name": "o",
                "uid": "owner-uid",
                "controller": True,
            }
        ]
    if deletion:
        meta["deletionTimestamp"] = deletion

    wanted = {k: v for k, v in (("cpu", cpu), ("memory", memory), (GPU, gpu)) if v is not None}
    wanted.update(requests or {})
    limited = {**wanted, **(limits or {})} if guaranteed else dict(limits or {})
    resources: dict[str, Any] = {}
    if wanted:
        resources["requests"] = wanted
    if limited:
        resources["limits"] = limited
    pod_spec: dict[str, Any] = {}
    if scheduler is not None:
        pod_spec["schedulerName"] = scheduler
    pod_spec["containers"] = [
        {"name": "main", "image": image, "resources": resources},
        *(containers or []),
    ]
    if init_containers is not None:
        pod_spec["initContainers"] = list(init_containers)
    if gates:
        pod_spec["schedulingGates"] = [{"name": g} for g in gates]
    for key, value in (
        ("nodeName", node_name),
        ("priority", priority),
        ("priorityClassName", priority_class),
        ("terminationGracePeriodSeconds", grace),
        ("nodeSelector", selector),
        ("affinity", affinity),
        ("tolerations", tolerations),
    ):
        if value is not None:
            pod_spec[key] = value
    pod_spec.update(spec or {})

    status: dict[str, Any] = {"phase": phase or ("Running" if node_name else "Pending")}
    if conditions is not None:
        status["conditions"] = conditions
    elif gates:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
        ]
    if nominated:
        status["nominatedNodeName"] = nominated
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec, "status": status}


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    *,
    gpu: str | None = None,
    allocatable: dict | None = None,
    labels: dict | None = None,
    annotations: dict | None = None,
    taints: list | None = None,
    unschedulable: bool = False,
    ready: bool | None = None,
    uid: str | None = "",
    created: int | str | None = 0,
) -> dict[str, Any]:
    """A node that can hold ``cpu``, ``memory``, ``pods`` and ``gpu`` (capacity = allocatable).

    ``allocatable`` adds resources; ``taints`` and ``unschedulable`` (cordoned) go to the
    spec; ``ready`` gives a Ready condition (True or False; ``None``: no condition, as a node
    the kubelet has not reported on yet). ``uid`` defaults to ``uid-<name>``.
    """
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu is not None:
        resources[GPU] = gpu
    resources.update(allocatable or {})
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": dict(resources), "allocatable": dict(resources)}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _metadata(
            name, None, f"uid-{name}" if uid == "" else uid, created, labels, annotations
        ),
        "spec": spec,
        "status": status,
    }


def podgroup(
    name: str,
    min_member: int = 1,
    *,
    namespace: str = "ns",
    queue: str = "default",
    min_resources: dict | None = None,
    priority_class: str | None = None,
    phase: str = "Pending",
    conditions: list[dict] | None = None,
    uid: str | None = "",
    created: int | str | None = 0,
) -> dict[str, Any]:
    """A Volcano PodGroup of at least ``min_member`` pods in ``queue``; ``uid`` defaults to
    ``pg-<namespace>-<name>``."""
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    status: dict[str, Any] = {"phase": phase}
    if conditions is not None:
        status["conditions"] = conditions
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": _metadata(
            name, namespace, f"pg-{namespace}-{name}" if uid == "" else uid, created
        ),
        "spec": spec,
        "status": status,
    }


def queue(
    name: str,
    *,
    weight: int = 1,
    capability: dict | None = None,
    guarantee: dict | None = None,
    deserved: dict | None = None,
    parent: str | None = None,
    priority: int | None = None,
    reclaimable: bool | None = None,
    state: str = "Open",
    uid: str | None = "",
    created: int | str | None = 0,
) -> dict[str, Any]:
    """A Volcano Queue; ``guarantee`` is the guaranteed resource list (spec.guarantee.resource)."""
    spec: dict[str, Any] = {"weight": weight}
    for key, value in (
        ("capability", capability),
        ("deserved", deserved),
        ("parent", parent),
        ("priority", priority),
        ("reclaimable", reclaimable),
    ):
        if value is not None:
            spec[key] = value
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": _metadata(name, None, f"uid-queue-{name}" if uid == "" else uid, created),
        "spec": spec,
        "status": {"state": state},
    }


def namespace(
    name: str,
    *,
    labels: dict | None = None,
    uid: str | None = "",
    created: int | str | None = 0,
) -> dict[str, Any]:
    """A namespace; ``labels`` are where it opts in to the queue-allocation gate."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _metadata(
            name, None, f"uid-namespace-{name}" if uid == "" else uid, created, labels
        ),
        "status": {"phase": "Active"},
    }


def binding(name: str, node_name: str) -> dict[str, Any]:
    """The Binding a scheduler posts to put pod ``name`` on ``node_name``."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def body(obj: dict[str, Any]) -> dict[str, Any]:
    """What a client sends to create ``obj`` through the API: without the fields the server
    sets (uid, creationTimestamp, resourceVersion, and the status — except a Node's, which the
    kubelet sends) and without metadata.namespace, which the request's path names."""
    sent = copy.deepcopy(obj)
    for field in ("uid", "creationTimestamp", "resourceVersion", "namespace"):
        sent["metadata"].pop(field, None)
    if sent.get("kind") != "Node":
        sent.pop("status", None)
    return sent


# --- CycleReports ----------------------------------------------------------------------------

CPU, GI = 1000, 1024**3
T0 = 1_700_000_000.0


def queue_report(
    name: str,
    *,
    allocated: float = 0,
    capability: float = 8,
    deserved: float = 4,
    share: float | None = None,
    reserved: float = 0,
    **counts: int,
) -> QueueReport:
    """A queue's report as the engine writes it (CPU figures in cores, 32 GiB memory
    capability); ``share`` defaults to the engine's formula, ``counts`` are pods per state."""
    deserved_cpu = {"cpu": deserved * CPU} if deserved else {}
    if share is None:
        share = allocated / deserved if deserved else 0.0
    return QueueReport(
        name,
        capability={"cpu": capability * CPU, "memory": 32 * GI},
        deserved=deserved_cpu,
        allocated={"cpu": allocated * CPU},
        reserved={"cpu": reserved * CPU},
        share=share,
        over_deserved=bool(deserved) and allocated > deserved,
        counts={PodState(s): n for s, n in counts.items()},
    )


def waiting_pod(
    name: str,
    queue: str,
    *,
    gated: bool = False,
    reason: str,
    namespace: str = "research",
    code: Code | None = None,
    state: PodState | None = None,
    node: str = "",
    uid: str | None = None,
    created: int = 0,
) -> WaitingPod:
    """A waiting pod; a gated one waits for its queue, an ungated one for a node, unless said."""
    if state is None:
        state = PodState.GATED if gated else PodState.UNSCHEDULABLE
    if code is None:
        code = {PodState.GATED: Code.QUEUE_FULL, PodState.PIPELINED: Code.PIPELINED}.get(
            state, Code.UNSCHEDULABLE
        )
    return WaitingPod(
        namespace,
        name,
        f"uid-{name}" if uid is None else uid,
        queue,
        f"{namespace}/{name}",
        state,
        Status(code, "test", reason),
        node,
        created,
    )


def pod_record(
    name: str,
    state: PodState = PodState.RUNNING,
    *,
    node: str = "",
    queue: str = "research",
    namespace: str = "research",
    uid: str | None = None,
    created: int = 0,
) -> PodRecord:
    """A pod of the report's inventory (not waiting); ``uid`` defaults to ``uid-<name>``."""
    return PodRecord(
        namespace, name, f"uid-{name}" if uid is None else uid, queue, state, node, created
    )


def transition(
    name: str,
    kind: TransitionKind = TransitionKind.ALLOCATED,
    node: str = "",
    reason: str = "",
    ns: str = "research",
    queue: str = "",
    old: PodState = PodState.WAITING,
    new: PodState | None = None,
) -> Transition:
    """A pod's transition; the new state follows from ``kind`` unless said."""
    new = new or {
        TransitionKind.ALLOCATED: PodState.BINDING,
        TransitionKind.PIPELINED: PodState.PIPELINED,
        TransitionKind.EVICTED: PodState.TERMINATING,
        TransitionKind.GATE_REMOVED: PodState.WAITING,
    }.get(kind, old)
    return Transition(ns, name, f"uid-{name}", kind, old, new, node, reason, queue or ns)


def risk(
    name: str,
    risk_class: RiskClass,
    explanation: str,
    *,
    namespace: str = "prod",
    queue: str = "prod",
    check: CheckState | None = None,
    pods: Iterable[str] = (),
    uid: str | None = None,
) -> WorkloadRisk:
    """A workload's risk (an Inqueue workload, certain); ``uid`` defaults to
    ``<namespace>/<name>``, ``pods`` are its pods' uids."""
    return WorkloadRisk(
        namespace,
        name,
        f"{namespace}/{name}" if uid is None else uid,
        queue,
        "Inqueue",
        risk_class,
        explanation,
        check,
        True,
        list(pods),
    )


def cycle_report(
    at: float = T0,
    *,
    queues: list[QueueReport] | None = None,
    waiting: Iterable[WaitingPod] = (),
    transitions: Iterable[Transition] = (),
    risks: Iterable[WorkloadRisk] = (),
    errors: Iterable[str] = (),
    notices: Iterable[str] = (),
    pods: Iterable[PodRecord] | None = None,
    cluster: str = "",
    mode: str = "act",
) -> dict[str, Any]:
    """The JSON the scheduler worker sends to ``store_cycle_report``; ``pods`` None: a
    report without the inventory of the cluster's pods (an older scheduler's)."""
    return CycleReport(
        started_at=at,
        duration_s=0.012,
        mode=mode,
        action_durations_s={"enqueue": 0.001, "allocate": 0.01},
        queues=queues if queues is not None else [queue_report("research", allocated=4, running=4)],
        transitions=list(transitions),
        waiting=list(waiting),
        errors=list(errors),
        gates={"queued": 1, "at_bind": 0},
        notices=list(notices),
        risks=list(risks),
        cluster=cluster,
        pods=None if pods is None else list(pods),
    ).to_json()
