"""The node-capacity check inside the enqueue action (PodGroup Pending -> Inqueue).

As in Kueue, the check runs after quota: only a job its queue accepted is evaluated. Ready
admits; Retry and Pending keep the PodGroup Pending with a ``NodeCapacityAvailable``
condition and, when the state or reason changes, an event that says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.admission.check import CONDITION_TYPE, CheckResult, CheckState
from scheduler.admission.context import AdmissionContext
from scheduler.admission.source import as_datetime
from scheduler.api.job_info import JobInfo
from scheduler.api.task_info import TaskStatus

_COMPARED = ("status", "reason", "message")


def workload_uid(job: JobInfo) -> str:
    """The PodGroup's uid; a pod without a PodGroup is tracked by its job id."""
    if job.podgroup is None:
        return job.uid
    return (job.podgroup.get("metadata") or {}).get("uid") or job.uid


def check_refusal(ssn, job: JobInfo) -> str | None:
    """None when the check admits ``job``; otherwise why it stays Pending, in words."""
    ctx: AdmissionContext = ssn.admission
    if not ctx.enabled:
        return None
    uid = workload_uid(job)
    result = ctx.checker.check(
        _identity(job, uid), _unbound_pods(job), ctx.snapshot, as_datetime(ssn.now)
    )
    ctx.results[uid] = result
    if result.state is CheckState.PENDING:
        ctx.request_snapshot()
    _record(ssn, job, result)
    if result.admit:
        ctx.checker.forget(uid)  # an admitted PodGroup is never checked again
        return None
    return f"node-capacity check {result.state.value}: {result.message}"


def forget_deleted(ssn) -> None:
    """Drop checker state for PodGroups that no longer exist."""
    invalid = (j for j, _, _ in ssn.invalid_jobs.values())
    jobs = [*ssn.jobs.values(), *invalid, *ssn.skipped_jobs.values()]
    ssn.admission.checker.retain({workload_uid(j) for j in jobs})


def note_queue_refusal(ssn, job: JobInfo) -> None:
    if getattr(ssn, "admission", None) is not None:
        ssn.admission.queue_refused.add(workload_uid(job))


def _identity(job: JobInfo, uid: str) -> Mapping[str, Any]:
    if job.podgroup is not None:
        return job.podgroup
    return {"metadata": {"uid": uid, "namespace": job.namespace, "name": job.name}}


def _unbound_pods(job: JobInfo) -> list[Mapping[str, Any]]:
    """The pods still to place; bound Guaranteed pods are already in the snapshot."""
    pending = job.index.get(TaskStatus.PENDING, {}).values()
    return [t.pod for t in sorted(pending, key=lambda t: (t.creation, t.uid))]


def _record(ssn, job: JobInfo, result: CheckResult) -> None:
    """Condition on the PodGroup (merged with the others) and an event when something changed.

    A workload admitted without evaluation (not Guaranteed) carries nothing, unless it had been
    held before: then its condition turns True.
    """
    target = job.podgroup
    current = _condition(target) if target is not None else None
    checked = result.evaluation is None or result.evaluation.checked
    if result.admit and not checked and current is None:
        return
    if target is None:  # a pod without a PodGroup: the event goes on the pod itself
        tasks = sorted(job.tasks.values(), key=lambda t: (t.creation, t.uid))
        target = tasks[0].pod if tasks else None
    elif _differs(current, result.condition()):
        _set_condition(ssn, job, result.condition())
    event = result.event()
    if event is not None and target is not None:
        ssn.writer.event(target, event["type"], event["reason"], event["message"])


def _condition(podgroup: Mapping[str, Any]) -> dict | None:
    for condition in (podgroup.get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION_TYPE:
            return condition
    return None


def _differs(current: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    return current is None or any(current.get(k) != new[k] for k in _COMPARED)


def _set_condition(ssn, job: JobInfo, condition: dict) -> None:
    """Patch the conditions list with ours replaced, keeping every other condition.

    The session's copy of the PodGroup is updated too, so the status written after the
    actions (``record_job_status``, which rebuilds the list from it) keeps our condition.
    """
    status = dict(job.podgroup.get("status") or {})
    others = [c for c in status.get("conditions") or [] if c.get("type") != CONDITION_TYPE]
    status["conditions"] = [*others, condition]
    job.podgroup = {**job.podgroup, "status": status}
    ssn.writer.podgroup_status(job.podgroup, {"conditions": status["conditions"]})
