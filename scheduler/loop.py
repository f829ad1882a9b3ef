"""One scheduling cycle: snapshot, session, actions, status reporting -> a CycleReport."""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping
from typing import Any

from scheduler import registry
from scheduler.admission.context import AdmissionContext
from scheduler.admission.plugin import NodeCapacityPlugin
from scheduler.api.job_info import JobInfo
from scheduler.api.labels import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION
from scheduler.api.report import (
    COUNTED_STATES,
    CycleReport,
    PodRecord,
    PodState,
    QueueReport,
    Transition,
    WaitingPod,
)
from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus, epoch_seconds, pod_state_of
from scheduler.cache.cache import SchedulerCache
from scheduler.cache.client import ClusterClient
from scheduler.config import SchedulerConfig, default_config
from scheduler.framework.invalid_objects import report_invalid_objects
from scheduler.framework.job_status import record_job_status
from scheduler.framework.queue_problems import report_queue_problems
from scheduler.framework.session import Session
from scheduler.framework.writer import GateRemover, Writer
from scheduler.plugins.base import Plugin

NOT_CONSIDERED = Status(Code.NOT_CONSIDERED, "", "not considered")


class CycleFailed(Exception):
    """A cycle raised (``error``) after it had decided something. The writes it had sent by
    then — a bind leaves when its statement commits — were awaited before this was raised,
    so they are done and the cache knows them when the next cycle starts; ``transitions``
    and ``errors`` say what they were, for the failed cycle's report."""

    def __init__(self, error: Exception, transitions: list[Transition], errors: list[str]) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error, self.transitions, self.errors = error, transitions, errors


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

    ``admission`` attaches the node-capacity check (Kueue KEP-3211) as a plugin in a tier of
    its own: it holds workloads in enqueue and reports false-admission risks; None runs
    without either.

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


def _run(
    cache: SchedulerCache,
    config: SchedulerConfig,
    client: ClusterClient | None,
    now: float | None,
    act: bool,
    gate_remover: GateRemover | None,
    admission: AdmissionContext | None,
) -> CycleReport:
    started = time.perf_counter()
    now = time.time() if now is None else now
    writer = Writer(cache, client, act=act, gate_remover=gate_remover)
    writer.errors.extend(cache.drain_write_errors())  # refused since the last cycle
    bind_removals = cache.gates_removed_at_bind
    tiers: list[list[Plugin]] = registry.plugin_tiers(config)
    check = NodeCapacityPlugin(admission) if admission is not None else None
    if check is not None:
        tiers.append([check])
    try:
        ssn = Session(cache.snapshot(now), config, writer, now, tiers)
        ssn.open()
        durations: dict[str, float] = {}
        for name, action in registry.actions(config):
            t0 = time.perf_counter()
            action(ssn)
            durations[name] = time.perf_counter() - t0
        record_job_status(ssn)
        invalid, invalid_pods = report_invalid_objects(
            cache.invalid, writer, ssn, cache.scheduler_name
        )
        refused_queues = frozenset(e.name for e in cache.invalid.entries() if e.kind == "queues")
        problems = report_queue_problems(ssn, writer, cache.queue_problems_said, refused_queues)
        ssn.close()
        writer.flush()
        waiting = waiting_pods(ssn) + invalid_pods
        return CycleReport(
            started_at=now,
            duration_s=time.perf_counter() - started,
            mode="act" if writer.act else "observe",
            action_durations_s=durations,
            queues=queue_reports(ssn),
            transitions=writer.transitions,
            waiting=waiting,
            errors=writer.errors,
            notices=ssn.notices,
            risks=check.risks if check is not None else [],
            gates={
                "queued": writer.gates_queued,
                "at_bind": cache.gates_removed_at_bind - bind_removals,
            },
            invalid=invalid,
            problems=problems,
            cluster=cache.cluster_id,
            pods=cache.pod_records(skip={p.uid for p in waiting}) + invalid_records(cache, waiting),
            pod_facts=cache.new_pod_facts(),
            preemption_attempts=ssn.preemption_attempts,
        )
    except Exception as exc:
        # Whatever already left (binds from committed statements) must land, and be known,
        # before anyone decides again: a next cycle that does not see a bind in flight
        # places another pod in its room, or binds the same pod twice.
        writer.flush()
        if not writer.transitions:
            raise  # it had decided nothing: the error as it was
        raise CycleFailed(exc, writer.transitions, writer.errors) from exc


def waiting_state(task: TaskInfo, why: Status) -> PodState:
    """A pending pod's state: gated while it carries a gate; unschedulable when nodes are what
    it lacks; otherwise waiting (for its queue, its gang, the admission check)."""
    if task.sch_gated:
        return PodState.GATED
    if task.status == TaskStatus.PIPELINED:
        return PodState.PIPELINED
    return PodState.UNSCHEDULABLE if why.node_shortfall else PodState.WAITING


def waiting_pods(ssn: Session) -> list[WaitingPod]:
    """Every pod still waiting after the cycle — pending (gated or not) or pipelined — with
    the Status that keeps it waiting."""
    out = []
    for job in [*ssn.jobs.values(), *ssn.skipped_jobs.values()]:
        for task in sorted(job.pending_tasks(), key=lambda t: (t.namespace, t.name)):
            skipped = ssn.skipped.get(job.uid)
            why = ssn.waiting.get(task.uid) or skipped or NOT_CONSIDERED
            if task.sch_gated and task.uid not in ssn.waiting and skipped is None:
                # A job left out (its queue or PodGroup is missing) says why even while
                # gated: no gate removal will come until that is fixed.
                why = Status(Code.GATED, "", "waiting for scheduling gates to be removed")
            out.append(_waiting(task, job, waiting_state(task, why), why))
        pipelined = job.index.get(TaskStatus.PIPELINED, {}).values()
        for task in sorted(pipelined, key=lambda t: (t.namespace, t.name)):
            why = Status(Code.PIPELINED, "allocate", _pipelined_reason(ssn, task.node_name))
            out.append(_waiting(task, job, PodState.PIPELINED, why, task.node_name))
    return out


def _waiting(
    task: TaskInfo, job: JobInfo, state: PodState, why: Status, node: str = ""
) -> WaitingPod:
    created = epoch_seconds(task.creation)
    return WaitingPod(
        task.namespace, task.name, task.uid, job.queue, job.uid, state, why, node, created
    )


def invalid_records(cache: SchedulerCache, waiting: list[WaitingPod]) -> list[PodRecord]:
    """Pods of ours the cache left out as unusable that are not waiting (bound or finished
    before their object stopped reading): still pods of the cluster, in the state their
    object shows, as far as it reads."""
    listed = {p.uid for p in waiting}
    records = []
    for entry in cache.invalid.entries():
        if entry.kind != "pods" or entry.uid in listed:
            continue
        spec, status, metadata = (
            _mapping(entry.obj.get(k)) for k in ("spec", "status", "metadata")
        )
        if (spec.get("schedulerName") or "default-scheduler") not in cache.scheduler_names:
            continue
        queue = _mapping(metadata.get("annotations")).get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
        node = spec.get("nodeName") or ""
        phase = status.get("phase")
        if phase in ("Succeeded", "Failed"):
            state = PodState(str(phase).lower())
        elif metadata.get("deletionTimestamp"):
            state = PodState.TERMINATING
        else:
            state = PodState.RUNNING if node else PodState.WAITING
        created = epoch_seconds(str(metadata.get("creationTimestamp") or ""))
        records.append(PodRecord(entry.namespace or "default", entry.name, entry.uid, str(queue),
                                 state, str(node), created))  # fmt: skip
    return records


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pipelined_reason(ssn: Session, node_name: str) -> str:
    node = ssn.nodes.get(node_name)
    releasing = (
        sum(1 for t in node.tasks.values() if t.status == TaskStatus.RELEASING) if node else 0
    )
    if releasing:
        pods = "1 pod finishes" if releasing == 1 else f"{releasing} pods finish"
        return f"pipelined on {node_name} until {pods} there"
    return f"pipelined on {node_name} until resources are released there"


def queue_reports(ssn: Session) -> list[QueueReport]:
    """Each queue's figures (from the queue plugin) and its own jobs' pods by state."""
    jobs_by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        jobs_by_queue.setdefault(job.queue, []).append(job)
    reports = []
    for name in sorted(ssn.queues):
        counts = dict.fromkeys(COUNTED_STATES, 0)
        podgroups: dict[str, int] = {}
        for job in jobs_by_queue.get(name, ()):
            podgroups[job.phase] = podgroups.get(job.phase, 0) + 1
            for task in job.tasks.values():
                state = _counted_state(ssn, task)
                if state is not None:
                    counts[state] += 1
        queue = ssn.queues[name]
        report = QueueReport(
            name,
            parent=queue.parent or "",
            counts=counts,
            podgroups=podgroups,
            implicit=queue.is_implicit,
            spec_capability=dict(queue.spec_capability),
            spec_deserved=dict(queue.spec_deserved),
            spec_guarantee=dict(queue.spec_guarantee),
            unlimited=dict(queue.unlimited),
            figures=ssn.queue_figures,
            problem=ssn.queue_problems.get(name, ""),
            weight=queue.weight,
        )
        attr = ssn.queue_attrs.get(name)
        if attr is not None:
            report.capability = attr.real_capability.to_dict()
            report.deserved = attr.deserved.to_dict()
            report.allocated = attr.allocated.to_dict()
            report.inqueue = attr.inqueue.to_dict()
            report.reserved = attr.reserved.to_dict()
            report.inqueue_reserved = attr.inqueue_reserved.to_dict()
            report.request = attr.request.to_dict()
            report.share = attr.share
            report.over_deserved = attr.over_deserved
        reports.append(report)
    return reports


def _counted_state(ssn: Session, task: TaskInfo) -> PodState | None:
    if task.status == TaskStatus.PENDING:
        return waiting_state(task, ssn.waiting.get(task.uid) or NOT_CONSIDERED)
    if task.status in (TaskStatus.PIPELINED, TaskStatus.RUNNING):
        return pod_state_of(task)
    return None
