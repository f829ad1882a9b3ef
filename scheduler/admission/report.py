"""False-admission risk for the cycle report: every Pending, or Inqueue but not yet running,
workload gets a risk class and the evaluator's explanation.

Workloads are assessed against the snapshot minus what was admitted since it was taken (the
ledger), their own pods left out. Evaluations are cached per (PodGroup uid, its pods'
resourceVersions, snapshot time, ledger revision, queue verdict): an unchanged workload is not
evaluated again every cycle. A cycle spends at most ``budget_s`` on new evaluations; a
workload not reached keeps its previous figure, if any, and is assessed in a later cycle.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.admission.awaited import awaited_of
from scheduler.admission.check import CONDITION_TYPE
from scheduler.admission.context import AdmissionContext
from scheduler.admission.risk import assess_risk
from scheduler.api.job_info import PG_INQUEUE, PG_PENDING, JobInfo
from scheduler.api.report import CheckState, WorkloadRisk
from scheduler.api.task_info import TaskStatus

DEFAULT_REPORT_BUDGET_S = 0.5
_CONDITION_STATE = {
    "True": CheckState.READY,
    "False": CheckState.RETRY,
    "Unknown": CheckState.PENDING,
}


def workload_uid(job: JobInfo) -> str:
    """The PodGroup's uid; a pod without a PodGroup is tracked by its job id."""
    if job.podgroup is None:
        return job.uid
    return (job.podgroup.get("metadata") or {}).get("uid") or job.uid


def workload_risks(
    jobs: Iterable[JobInfo], ctx: AdmissionContext, *, budget_s: float = DEFAULT_REPORT_BUDGET_S
) -> list[WorkloadRisk]:
    """Risks for the session's workloads; empty without a snapshot."""
    if ctx.snapshot is None:
        return []
    deadline = time.perf_counter() + budget_s
    out, seen = [], set()
    for job in sorted(jobs, key=lambda j: (j.namespace, j.name)):
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
    if job.phase != PG_INQUEUE:
        return False
    # Admitted, and some of its pods are not running yet, or not even created.
    return job.count(TaskStatus.RUNNING) < max(len(job.tasks), job.min_available)


def _cached_or_assessed(
    ctx: AdmissionContext, job: JobInfo, uid: str, may_evaluate: bool
) -> WorkloadRisk | None:
    # The queue refused it this cycle: it waits for its queue, whatever the nodes hold.
    queue_has_room = not (job.job_fit_error is not None and job.job_fit_error.queue_limited)
    if ctx.snapshot is None:
        return None
    versions = tuple(sorted((t.uid, _version(t.pod)) for t in job.tasks.values()))
    group = _version(job.podgroup or {})  # its minMember and minResources
    key = (versions, group, ctx.snapshot.last_check, ctx.ledger.revision, queue_has_room)
    cached = ctx.risk_cache.get(uid)
    if cached is not None and (cached[0] == key or not may_evaluate):
        return _with_current_state(cached[1], ctx, job, uid)
    if not may_evaluate:
        return None
    snapshot = ctx.available(without=job.tasks.keys(), workload=uid)
    if snapshot is None:
        return None
    pods = [t.pod for t in job.tasks.values()]
    risk = assess_risk(
        pods, snapshot, node_groups=ctx.node_groups, queue_has_room=queue_has_room,
        awaited=awaited_of(job),
    )  # fmt: skip
    entry = WorkloadRisk(
        job.namespace, job.name, uid, job.queue, job.phase, risk.risk,
        risk.explanation, None, risk.certain, sorted(job.tasks),
    )  # fmt: skip
    ctx.risk_cache[uid] = (key, entry)
    return _with_current_state(entry, ctx, job, uid)


def _with_current_state(
    entry: WorkloadRisk, ctx: AdmissionContext, job: JobInfo, uid: str
) -> WorkloadRisk:
    """The cached figure with this cycle's phase and check state (they change without pods)."""
    return WorkloadRisk(
        entry.namespace, entry.name, entry.uid, entry.queue, job.phase, entry.risk,
        entry.explanation, _check_state(ctx, job, uid), entry.certain, entry.pod_uids,
    )  # fmt: skip


def _check_state(ctx: AdmissionContext, job: JobInfo, uid: str) -> CheckState | None:
    """This cycle's check, else the one remembered, else the PodGroup's condition."""
    result = ctx.results.get(uid) or ctx.checker.state_of(uid)
    if result is not None:
        return result.state
    for condition in ((job.podgroup or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION_TYPE:
            return _CONDITION_STATE.get(condition.get("status"))
    return None


def _version(pod: Mapping[str, Any]) -> str:
    return (pod.get("metadata") or {}).get("resourceVersion") or ""
