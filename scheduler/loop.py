"""One scheduling cycle: snapshot, session, actions, status reporting -> a CycleReport."""

from __future__ import annotations

import gc
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from scheduler.admission.context import AdmissionContext
from scheduler.admission.report import WorkloadRisk, workload_risks
from scheduler.api.resource import Resource
from scheduler.api.task_info import TaskStatus
from scheduler.cache.cache import SchedulerCache
from scheduler.cache.client import ClusterClient
from scheduler.config import SchedulerConfig, default_config
from scheduler.framework.job_status import record_job_status
from scheduler.framework.registry import ACTIONS
from scheduler.framework.session import Session
from scheduler.framework.writer import GateRemover, Transition, Writer


@dataclass
class QueueReport:
    name: str
    capability: dict[str, float]  # realCapability
    deserved: dict[str, float]
    allocated: dict[str, float]
    inqueue: dict[str, float]
    reserved: dict[str, float]
    counts: dict[str, int]  # pending, gated, pipelined, unschedulable, running
    resources: dict[str, dict[str, float]]  # the same groups, summed requests
    # The part of inqueue that gate reservations already hold (counted in both figures).
    inqueue_reserved: dict[str, float] = field(default_factory=dict)


@dataclass
class WaitingPod:
    namespace: str
    name: str
    uid: str
    queue: str
    job: str
    gated: bool
    reason: str
    state: str = "unschedulable"  # gated | unschedulable | pipelined
    node: str = ""  # the nominated node of a pipelined pod


@dataclass
class CycleReport:
    started_at: float
    duration_s: float
    mode: str
    action_durations_s: dict[str, float]
    queues: list[QueueReport]
    transitions: list[Transition]
    waiting: list[WaitingPod]
    errors: list[str] = field(default_factory=list)
    gates: dict[str, int] = field(default_factory=dict)  # gate removals queued / at bind
    notices: list[str] = field(default_factory=list)  # e.g. queue reservations released
    risks: list[WorkloadRisk] = field(default_factory=list)  # when a capacity snapshot exists

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_cycle(
    cache: SchedulerCache,
    config: SchedulerConfig | None = None,
    client: ClusterClient | None = None,
    *,
    now: float | None = None,
    act: bool = True,
    gate_remover: GateRemover | None = None,
    admission: AdmissionContext | None = None,
) -> CycleReport:
    """Run the configured actions once. ``act=False`` (observe) writes nothing to the cluster.

    ``admission`` brings the node-capacity check (seed 004) to enqueue and the false-admission
    risks to the report; None runs without either.

    The cyclic garbage collector is paused for the cycle: a cycle allocates tens of thousands
    of short-lived objects, and collections over the cache's large heap cost more than the
    scheduling itself. Nothing a cycle creates relies on cycle collection to be freed.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(cache, config or default_config(), client, now, act, gate_remover, admission)
    finally:
        if collecting:
            gc.enable()


def _run(cache, config, client, now, act, gate_remover, admission) -> CycleReport:
    started = time.perf_counter()
    now = time.time() if now is None else now
    writer = Writer(cache, client, act=act, gate_remover=gate_remover)
    bind_removals = cache.gates_removed_at_bind
    ssn = Session(cache.snapshot(), config, writer, now)
    ssn.admission = admission  # read by enqueue; the Session itself does not know it
    ssn.open()
    durations: dict[str, float] = {}
    for name in config.actions:
        t0 = time.perf_counter()
        ACTIONS[name](ssn)
        durations[name] = time.perf_counter() - t0
    record_job_status(ssn)
    ssn.close()
    queues, waiting = _queue_reports(ssn), _waiting(ssn)
    risks = workload_risks(ssn, admission) if admission is not None else []
    return CycleReport(
        started_at=now,
        duration_s=time.perf_counter() - started,
        mode="act" if writer.act else "observe",
        action_durations_s=durations,
        queues=queues,
        transitions=writer.transitions,
        waiting=waiting,
        errors=writer.errors,
        notices=ssn.notices,
        risks=risks,
        gates={
            "queued": writer.gates_queued,
            "at_bind": cache.gates_removed_at_bind - bind_removals,
        },
    )


def _waiting(ssn: Session) -> list[WaitingPod]:
    """Every pod still waiting after the cycle — pending (gated or not) or pipelined — with
    why, in words."""
    out = []
    invalid = (j for j, _, _ in ssn.invalid_jobs.values())
    for job in [*ssn.jobs.values(), *invalid, *ssn.skipped_jobs.values()]:
        for task in sorted(job.pending_tasks(), key=lambda t: (t.namespace, t.name)):
            reason = ssn.waiting.get(task.uid) or ssn.skipped.get(job.uid) or "not considered"
            if task.sch_gated and task.uid not in ssn.waiting:
                reason = "waiting for scheduling gates to be removed"
            state = "gated" if task.sch_gated else "unschedulable"
            out.append(
                WaitingPod(task.namespace, task.name, task.uid, job.queue, job.uid,
                           task.sch_gated, reason, state)
            )  # fmt: skip
        pipelined = job.index.get(TaskStatus.PIPELINED, {}).values()
        for task in sorted(pipelined, key=lambda t: (t.namespace, t.name)):
            out.append(
                WaitingPod(task.namespace, task.name, task.uid, job.queue, job.uid, False,
                           _pipelined_reason(ssn, task.node_name), "pipelined", task.node_name)
            )  # fmt: skip
    return out


def _pipelined_reason(ssn: Session, node_name: str) -> str:
    node = ssn.nodes.get(node_name)
    releasing = (
        sum(1 for t in node.tasks.values() if t.status == TaskStatus.RELEASING) if node else 0
    )
    if releasing:
        pods = "1 pod finishes" if releasing == 1 else f"{releasing} pods finish"
        return f"pipelined on {node_name} until {pods} there"
    return f"pipelined on {node_name} until resources are released there"


_GROUPS = ("pending", "gated", "pipelined", "unschedulable", "running")


def _queue_reports(ssn: Session) -> list[QueueReport]:
    attrs = getattr(ssn, "queue_attrs", {})
    reports = []
    jobs_by_queue: dict[str, list] = {}
    for job in ssn.jobs.values():
        jobs_by_queue.setdefault(job.queue, []).append(job)
    for name in sorted(ssn.queues):
        counts = dict.fromkeys(_GROUPS, 0)
        sums = {g: Resource() for g in _GROUPS}
        for job in jobs_by_queue.get(name, ()):
            _count_job(ssn, job, counts, sums)
        attr = attrs.get(name)
        capability, deserved, allocated, inqueue, reserved, inqueue_reserved = (
            getattr(attr, a).to_dict() if attr else {}
            for a in ("real_capability", "deserved", "allocated", "inqueue", "reserved",
                      "inqueue_reserved")
        )  # fmt: skip
        reports.append(QueueReport(
            name, capability, deserved, allocated, inqueue, reserved, counts,
            {g: r.to_dict() for g, r in sums.items()}, inqueue_reserved,
        ))  # fmt: skip
    return reports


def _count_job(ssn: Session, job, counts: dict, sums: dict) -> None:
    for task in job.tasks.values():
        if task.status == TaskStatus.PENDING:
            groups = ["pending", "gated" if task.sch_gated else "unschedulable"]
        elif task.status == TaskStatus.PIPELINED:
            groups = ["pipelined"]
        elif task.status == TaskStatus.RUNNING:
            groups = ["running"]
        else:
            continue
        for g in groups:
            counts[g] += 1
            sums[g].add(task.resreq)
