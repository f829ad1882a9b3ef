"""False-admission risk for the cycle report: every Pending, or Inqueue but not yet running,
workload gets a risk class and the evaluator's explanation.

Evaluations are cached per (PodGroup uid, its pods' resourceVersions, snapshot time, queue
verdict): an unchanged workload is not evaluated again every cycle. A cycle spends at most
``budget_s`` on new evaluations; a workload not reached keeps its previous figure, if any,
and is assessed in a later cycle.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from scheduler.admission.check import CONDITION_TYPE, CheckState
from scheduler.admission.context import AdmissionContext
from scheduler.admission.enqueue_check import workload_uid
from scheduler.admission.risk import assess_risk
from scheduler.api.job_info import PG_INQUEUE, PG_PENDING, JobInfo
from scheduler.api.task_info import TaskStatus

DEFAULT_REPORT_BUDGET_S = 0.5
_CONDITION_STATE = {
    "True": CheckState.READY,
    "False": CheckState.RETRY,
    "Unknown": CheckState.PENDING,
}


@dataclass
class WorkloadRisk:
    namespace: str
    name: str
    uid: str
    queue: str
    phase: str
    risk: str  # a RiskClass value
    explanation: str
    check_state: str  # "Pending" / "Ready" / "Retry", or "" when the check did not run
    certain: bool
    pod_uids: list[str] = field(default_factory=list)  # to find a waiting pod's workload


def workload_risks(
    ssn, ctx: AdmissionContext, *, budget_s: float = DEFAULT_REPORT_BUDGET_S
) -> list[WorkloadRisk]:
    """Risks for the session's workloads; empty without a snapshot."""
    if ctx.snapshot is None:
        return []
    deadline = time.perf_counter() + budget_s
    out, seen = [], set()
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.namespace, j.name)):
        if not _at_risk(job):
            continue
        uid = workload_uid(job)
        seen.add(uid)
        risk = _cached_or_assessed(ctx, job, uid, time.perf_counter() < deadline)
        if risk is not None:
            out.append(risk)
    for uid in [u for u in ctx.risk_cache if u not in seen]:
        del ctx.risk_cache[uid]
    return out


def _at_risk(job: JobInfo) -> bool:
    if job.phase == PG_PENDING:
        return True
    return job.phase == PG_INQUEUE and job.count(TaskStatus.RUNNING) < len(job.tasks)


def _cached_or_assessed(ctx: AdmissionContext, job: JobInfo, uid: str, may_evaluate: bool):
    queue_has_room = uid not in ctx.queue_refused
    versions = tuple(sorted((t.uid, _version(t.pod)) for t in job.tasks.values()))
    key = (versions, ctx.snapshot.last_check, queue_has_room)
    cached = ctx.risk_cache.get(uid)
    if cached is not None and (cached[0] == key or not may_evaluate):
        return _with_current_state(cached[1], ctx, job, uid)
    if not may_evaluate:
        return None
    pods = [t.pod for t in job.tasks.values()]
    risk = assess_risk(
        pods, ctx.snapshot, node_groups=ctx.node_groups, queue_has_room=queue_has_room
    )
    entry = WorkloadRisk(
        job.namespace, job.name, uid, job.queue, job.phase, risk.risk.value,
        risk.explanation, "", risk.certain, sorted(job.tasks),
    )  # fmt: skip
    ctx.risk_cache[uid] = (key, entry)
    return _with_current_state(entry, ctx, job, uid)


def _with_current_state(entry: WorkloadRisk, ctx: AdmissionContext, job: JobInfo, uid: str):
    """The cached figure with this cycle's phase and check state (they change without pods)."""
    return WorkloadRisk(
        entry.namespace, entry.name, entry.uid, entry.queue, job.phase, entry.risk,
        entry.explanation, _check_state(ctx, job, uid), entry.certain, entry.pod_uids,
    )  # fmt: skip


def _check_state(ctx: AdmissionContext, job: JobInfo, uid: str) -> str:
    """This cycle's check, else the one remembered, else the PodGroup's condition."""
    result = ctx.results.get(uid) or ctx.checker.state_of(uid)
    if result is not None:
        return result.state.value
    for condition in ((job.podgroup or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION_TYPE:
            return str(_CONDITION_STATE.get(condition.get("status"), ""))
    return ""


def _version(pod) -> str:
    return (pod.get("metadata") or {}).get("resourceVersion") or ""
