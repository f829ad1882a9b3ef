"""After the actions: PodGroup phases and conditions (gang's OnSessionClose and Volcano's job
updater) and pod conditions (Volcano's RecordJobStatusEvent), written through the Writer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

from scheduler.api.helpers import scheduling_gates
from scheduler.api.job_info import (
    PG_COMPLETED,
    PG_INQUEUE,
    PG_PENDING,
    PG_RUNNING,
    PG_UNKNOWN,
    JobInfo,
)
from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskStatus
from scheduler.framework.session import Session

UNSCHEDULABLE, SCHEDULED = "Unschedulable", "Scheduled"
NOT_ENOUGH_RESOURCES, SCHEDULING_GATED = "NotEnoughResources", "SchedulingGated"
NOT_ENOUGH_TASKS = "NotEnoughTasks"  # the gang plugin's job_valid reason
# The PodScheduled reason of a pod that waits for something other than nodes — its queue, the
# admission check, an object it cannot use. Cluster Autoscaler and Karpenter act on
# "Unschedulable" only, so they leave it alone (YuniKorn uses this reason for the same case).
SCHEDULING_SKIPPED = "SchedulingSkipped"
GANG_READY = "tasks in gang are ready to be scheduled"
_WAITING = (TaskStatus.ALLOCATED, TaskStatus.PENDING, TaskStatus.PIPELINED)


def record_job_status(ssn: Session) -> None:
    stamp = datetime.fromtimestamp(ssn.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for job in ssn.skipped_jobs.values():
        # Not scheduled at all (its queue or PodGroup is missing): its waiting pods say why,
        # and never look Unschedulable — nodes are not what they lack.
        why = ssn.skipped.get(job.uid)
        if why is not None:
            for task in job.pending_tasks():
                if not task.sch_gated and not scheduling_gates(task.pod):
                    ssn.writer.pod_condition(task, _pod_condition(SCHEDULING_SKIPPED, why.message))
    for job in ssn.jobs.values():
        verdict = ssn.invalid.get(job.uid)
        if not ssn.job_ready(job) and _releasing_holds_the_gang(job):
            _update_podgroup(ssn, job, None)
            continue
        if verdict is None:
            condition = _gang_condition(ssn, job, stamp)
        else:
            reason = NOT_ENOUGH_TASKS if verdict.code is Code.GANG else verdict.code.value
            condition = _condition(UNSCHEDULABLE, reason, verdict.message, stamp)
            for task in job.pending_tasks():
                ssn.wait(task, verdict)
        _update_podgroup(ssn, job, condition)
        _record_tasks(ssn, job, condition["message"])


def _releasing_holds_the_gang(job: JobInfo) -> bool:
    """Volcano's gang shouldSkipUnschedulableForReleasing: a job short of ready only because
    members are terminating on their nodes (they still hold their slots), with nothing pending
    or pipelined, is not Unschedulable: no condition is written."""
    releasing = sum(1 for t in job.index.get(TaskStatus.RELEASING, {}).values() if t.node_name)
    if not releasing or job.count(TaskStatus.PENDING) or job.count(TaskStatus.PIPELINED):
        return False
    return sum(job.count(s) for s in SCHEDULED_STATUSES) + releasing >= job.min_available


def _condition(kind: str, reason: str, message: str, stamp: str) -> dict:
    return {"type": kind, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": stamp}  # fmt: skip


def _gang_condition(ssn: Session, job: JobInfo, stamp: str) -> dict:
    if ssn.job_ready(job):
        return _condition(SCHEDULED, GANG_READY, "", stamp)
    unready = max(job.min_available - job.ready_task_num(), 0)
    gated = [t for t in job.pending_tasks() if t.sch_gated]
    if gated and not job.nodes_fit_errors and not job.job_fit_error:
        gates = sorted({g for t in gated for g in scheduling_gates(t.pod)})
        message = (
            f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {len(gated)} task(s) "
            f"waiting for scheduling gates to be removed: {', '.join(gates)}"
        )
        return _condition(UNSCHEDULABLE, SCHEDULING_GATED, message, stamp)
    message = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {fit_error(job)}"
    return _condition(UNSCHEDULABLE, NOT_ENOUGH_RESOURCES, message, stamp)


def fit_error(job: JobInfo) -> str:
    """Volcano's JobInfo.FitError: task counts by status, then the tasks' reasons."""
    counts = [f"{len(ts)} {status.value}" for status, ts in job.index.items() if ts]
    counts.append(f"{job.min_available} minAvailable")
    head = f"pod group is not ready, {', '.join(sorted(counts))}"
    reasons = Counter(status.message for status in job.nodes_fit_errors.values())
    detail = "; ".join(f"{n} task(s): {msg}" for msg, n in sorted(reasons.items()))
    if job.job_fit_error:  # the enqueue refusal comes first: it is why nothing was tried
        refusal = job.job_fit_error.message
        detail = f"{refusal}; {detail}" if detail else refusal
    return f"{head}; {detail}" if detail else head


SCHEDULED_STATUSES = (
    TaskStatus.RUNNING,
    TaskStatus.BOUND,
    TaskStatus.FAILED,
    TaskStatus.SUCCEEDED,
)


def _phase(job: JobInfo, unschedulable: bool) -> str:
    """Volcano's getPodGroupPhase: Running once minMember tasks are scheduled — bound,
    running or finished, not merely sent to bind in this cycle (so a PodGroup turns Running
    when its pods are, the cycle after the binds) — or still terminating on their node;
    Completed when every scheduled task finished."""
    if job.count(TaskStatus.RUNNING) and unschedulable:
        return PG_UNKNOWN
    index = job.index
    scheduled = sum(len(index[s]) for s in SCHEDULED_STATUSES if s in index)
    completed = len(index.get(TaskStatus.SUCCEEDED, ())) + len(index.get(TaskStatus.FAILED, ()))
    releasing = index.get(TaskStatus.RELEASING)
    if releasing:
        scheduled += sum(1 for task in releasing.values() if task.node_name)
    if scheduled >= job.min_available:
        return PG_COMPLETED if scheduled == completed else PG_RUNNING
    return job.phase if job.phase == PG_INQUEUE else PG_PENDING


def _update_podgroup(ssn: Session, job: JobInfo, condition: dict | None) -> None:
    phase = _phase(job, condition is not None and condition["type"] == UNSCHEDULABLE)
    job.phase = phase
    if job.podgroup is None:
        return
    old = job.podgroup.get("status") or {}
    counts = {
        "running": job.count(TaskStatus.RUNNING),
        "succeeded": job.count(TaskStatus.SUCCEEDED),
        "failed": job.count(TaskStatus.FAILED),
    }
    if condition is None:  # the phase and counts only
        if old.get("phase") != phase or any(old.get(k, 0) != v for k, v in counts.items()):
            ssn.writer.podgroup_status(job.podgroup, {**old, "phase": phase, **counts})
        return
    conditions = [c for c in old.get("conditions") or [] if c.get("type") != condition["type"]]
    same = any(
        all(c.get(k) == condition[k] for k in ("type", "status", "reason", "message"))
        for c in old.get("conditions") or []
    )
    status = {
        "phase": phase,
        "conditions": conditions if same else [*conditions, condition],
        **counts,
    }
    if same:
        status["conditions"] = old.get("conditions") or []
    counts_same = all(old.get(k, 0) == status[k] for k in ("running", "succeeded", "failed"))
    if same and old.get("phase") == phase and counts_same:
        return  # nothing changed: no write, no event (Volcano compares the whole status)
    ssn.writer.podgroup_status(job.podgroup, status)
    if same and old.get("phase") == phase:
        return  # only the counts moved: no event for that
    if condition["reason"] == NOT_ENOUGH_RESOURCES and phase in (PG_PENDING, PG_INQUEUE):
        pending = job.count(TaskStatus.PENDING)
        message = f"{pending}/{len(job.tasks)} tasks in gang unschedulable: {fit_error(job)}"
        ssn.writer.event(job.podgroup, "Warning", UNSCHEDULABLE, message)
    elif condition["type"] == SCHEDULED:
        ssn.writer.event(job.podgroup, "Normal", SCHEDULED, "pod group is ready")


def _record_tasks(ssn: Session, job: JobInfo, job_message: str) -> None:
    """Ungated waiting tasks get PodScheduled=False; gated ones keep Kubernetes' own. The
    reason is ``Unschedulable`` only for what nodes lack (and, as in Volcano, for a pipelined
    pod, whose nomination autoscalers respect); a pod that waits for its queue, the admission
    check or a fix of its own object gets ``SchedulingSkipped``: no autoscaler buys a node for
    it (Volcano's gate-controlled scheduling design). Decided from the status code."""
    for status in _WAITING:
        for task in sorted(job.index.get(status, {}).values(), key=lambda t: (t.creation, t.uid)):
            if task.sch_gated or scheduling_gates(task.pod):
                # Gated, or its gate removal is queued but not yet seen: it keeps Kubernetes'
                # SchedulingGated condition; only an ungated pod can be Unschedulable (gate-controlled scheduling design).
                continue
            if status == TaskStatus.ALLOCATED and task.uid not in ssn.waiting:
                continue  # allocated and committed: it is binding
            why = ssn.waiting.get(task.uid)
            if status == TaskStatus.PIPELINED:
                node = task.transaction.nominated_node_name
                message = f"Pod {task.namespace}/{task.name} can possibly be assigned to {node}, once resource is released"
                why = Status(Code.PIPELINED, "allocate", message)
            elif why is None:
                why = Status(_gang_code(job), "gang", job_message)
            ssn.waiting[task.uid] = why
            reason = (
                UNSCHEDULABLE
                if why.node_shortfall or status == TaskStatus.PIPELINED
                else SCHEDULING_SKIPPED
            )
            ssn.writer.pod_condition(task, _pod_condition(reason, why.message or job_message))


def _pod_condition(reason: str, message: str) -> dict[str, str]:
    return {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}


def _gang_code(job: JobInfo) -> Code:
    """Why a gang's member waits when nothing was said of the member itself: for nodes if any
    member lacked a node, for its queue if the queue refused it, else for its gang."""
    return gang_cause(job.nodes_fit_errors.values(), job.job_fit_error)


def gang_cause(errors: Iterable[Status], job_error: Status | None = None) -> Code:
    statuses = [*errors, *([job_error] if job_error is not None else [])]
    if any(s.node_shortfall for s in statuses):
        return Code.UNSCHEDULABLE
    queue = next((s.code for s in statuses if s.queue_limited), None)
    if queue is not None:
        return queue
    if any(s.code is Code.ADMISSION_HELD for s in statuses):
        return Code.ADMISSION_HELD
    return Code.GANG
