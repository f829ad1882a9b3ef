"""The node-capacity check (Kueue KEP-3211, "Check node capacity before workload admission")
as a plugin of the enqueue action: PodGroup Pending -> Inqueue.

The scheduler attaches it in its own tier after the configured ones, so its ``job_enqueueable``
runs after the queue plugin's: as in Kueue, only a job its queue accepted is evaluated. Ready
admits; Retry and Pending keep the PodGroup Pending with a ``NodeCapacityAvailable`` condition
and, when the state or reason changes, an event that says why. A workload is evaluated against
the snapshot minus what was admitted since it was taken (the context's ledger, which every
admission adds to and which is brought up to date at the session's start and end, taking up
the Inqueue workloads another process admitted). A PodGroup with fewer pods than its
minMember is judged on its minResources as well (``scheduler.admission.awaited``). At the
session's end it forgets the PodGroups that are gone and works out every pending workload's
false-admission risk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.admission.awaited import awaited_of, evaluate_with_awaited
from scheduler.admission.check import CONDITION_TYPE, CheckResult
from scheduler.admission.context import AdmissionContext
from scheduler.admission.evaluator import evaluate
from scheduler.admission.ledger import AdmittedNow, LivePod
from scheduler.admission.monitor import CapacitySnapshot, counted_demand, extended_demand
from scheduler.admission.report import workload_risks, workload_uid
from scheduler.admission.source import as_datetime
from scheduler.api.job_info import PG_INQUEUE, PG_PENDING, JobInfo
from scheduler.api.report import CheckState, WorkloadRisk
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session

_COMPARED = ("status", "reason", "message")
_FINISHED = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
_PLACEMENT_BUDGET_S = 0.005  # placing an unchecked workload for the ledger: a quick look


class NodeCapacityPlugin(Plugin):
    name = "nodecapacity"

    def __init__(self, context: AdmissionContext) -> None:
        super().__init__()
        self.context = context
        self.risks: list[WorkloadRisk] = []

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        _reconcile(ssn, self.context)
        if self.context.enabled:
            ssn.add_admission_check_fn(self, self.job_enqueueable)

    def on_session_close(self, ssn: Session) -> None:
        """Forget PodGroups that no longer exist; the risks of those still waiting."""
        jobs = [*ssn.jobs.values(), *ssn.skipped_jobs.values()]
        self.context.checker.retain({workload_uid(j) for j in jobs})
        _reconcile(ssn, self.context)  # the pods allocate bound count on their nodes
        self.risks = workload_risks(ssn.jobs.values(), self.context)

    def job_enqueueable(self, job: JobInfo) -> Status:
        """Admit ``job`` if the check says Ready; otherwise why it stays Pending."""
        ctx = self.context
        uid = workload_uid(job)
        pending = _pending(job)
        pods = [t.pod for t in pending]  # bound pods are in the snapshot or the ledger
        awaited = awaited_of(job)
        available = ctx.available(without=[t.uid for t in pending], workload=uid)
        now = as_datetime(self.ssn.now)
        result = ctx.checker.check(_identity(job, uid), pods, available, now, awaited)
        ctx.results[uid] = result
        if result.state is CheckState.PENDING:
            ctx.request_snapshot()
        _record(self.ssn, job, result)
        if result.admit:
            ctx.checker.forget(uid)  # an admitted PodGroup is never checked again
            # Used from now on, until a snapshot shows its pods on their nodes.
            slots = awaited.slots() if awaited is not None else ()
            ctx.ledger.record(uid, pods, _placement(result, pods, available), now, slots)
            return SUCCESS
        message = f"node-capacity check {result.state.value}: {result.message}"
        return Status(Code.ADMISSION_HELD, self.name, message)


def _reconcile(ssn: Session, ctx: AdmissionContext) -> None:
    """Bring the ledger up to date with the session: the admitted workloads still there (not
    back to Pending) with their live pods, the nodes they are bound to, and whether they
    still wait to run (Inqueue: a slot whose pod is gone waits for its replacement). Then take
    up the Inqueue workloads it does not hold: admitted by another scheduler worker, or by
    this one before it restarted (the PodGroup's phase is the cluster's record of it)."""
    admitted, missing = {}, []
    for job in [*ssn.jobs.values(), *ssn.skipped_jobs.values()]:
        if job.phase == PG_PENDING:
            continue
        uid = workload_uid(job)
        if uid in ctx.ledger:
            tasks = job.tasks.values()
            live = [
                LivePod(t.uid, f"{t.namespace}/{t.name}", t.node_name, t.pod)
                for t in tasks
                if t.status not in _FINISHED
            ]
            finished = {t.uid for t in tasks if t.status in _FINISHED}
            admitted[uid] = AdmittedNow(live, job.phase == PG_INQUEUE, finished)
        elif job.phase == PG_INQUEUE and job.uid in ssn.jobs:
            missing.append((uid, job))
    if ctx.ledger.workloads:
        ctx.ledger.reconcile(ctx.snapshot, admitted)
    if ctx.enabled and ctx.snapshot is not None:
        for uid, job in missing:
            _take_up(ssn, ctx, uid, job)


def _take_up(ssn: Session, ctx: AdmissionContext, uid: str, job: JobInfo) -> None:
    """Record an Inqueue workload the ledger does not hold, as if admitted now: its live pods
    the snapshot does not list, on the nodes they are bound to or else where they fit now,
    and the pods it still awaits. The placement the admitting process worked out is lost with
    its memory; one worked out now holds the same room whenever the nodes can still hold it
    (else its unbound pods count once bound)."""
    shown = ctx.snapshot.pod_uids() if ctx.snapshot is not None else frozenset()
    tasks = [
        t
        for t in job.tasks.values()
        if t.status not in _FINISHED and t.uid not in shown and _counts(t.pod)
    ]
    awaited = awaited_of(job)
    if not tasks and awaited is None:
        return  # nothing the snapshot would count: no evaluation spent on it every cycle
    unbound = [t.pod for t in tasks if not t.node_name]
    available = ctx.available(workload=uid)
    placement: dict[str, str] = {}
    if available is not None:
        evaluation = evaluate_with_awaited(
            unbound, awaited, available, basis="requests", budget_s=_PLACEMENT_BUDGET_S
        )
        placement.update(evaluation.placement or {})
    placement.update({f"{t.namespace}/{t.name}": t.node_name for t in tasks if t.node_name})
    slots = awaited.slots() if awaited is not None else ()
    now = as_datetime(ssn.now)
    ctx.ledger.record(uid, [t.pod for t in tasks], placement, now, slots)


def _counts(pod: Mapping[str, Any]) -> bool:
    """The snapshot would count something for this pod on a node."""
    try:
        return bool(counted_demand(pod))
    except ValueError:  # unreadable: reported on the object, counts nothing
        return False


def _placement(
    result: CheckResult, pods: list[Mapping[str, Any]], available: CapacitySnapshot | None
) -> dict[str, str] | None:
    """Where the ledger counts the admitted pods until they are bound: the evaluator's
    placement. A workload admitted unchecked (not Guaranteed) has none; when it holds
    extended resources, which the snapshot counts, it is placed here for the ledger alone."""
    evaluation = result.evaluation
    if evaluation is None or evaluation.placement is not None:
        return None if evaluation is None else evaluation.placement
    if evaluation.checked or available is None or not any(extended_demand(p) for p in pods):
        return None  # e.g. admitted undecided (admitUnknown): counted once bound
    return evaluate(pods, available, basis="requests", budget_s=_PLACEMENT_BUDGET_S).placement


def _identity(job: JobInfo, uid: str) -> Mapping[str, Any]:
    if job.podgroup is not None:
        return job.podgroup
    return {"metadata": {"uid": uid, "namespace": job.namespace, "name": job.name}}


def _pending(job: JobInfo) -> list[TaskInfo]:
    """The pods still to place, in creation order."""
    pending = job.index.get(TaskStatus.PENDING, {}).values()
    return sorted(pending, key=lambda t: (t.creation, t.uid))


def _record(ssn: Session, job: JobInfo, result: CheckResult) -> None:
    """Condition on the PodGroup (merged with the others) and an event when something changed.

    A workload admitted without evaluation (not Guaranteed) carries nothing, unless it had been
    held before: then its condition turns True. "Changed" is the PodGroup's word as much as
    the checker's: a restarted scheduler, or another worker, whose checker meets the workload
    for the first time does not say again what its condition already says.
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
    said = current is not None and all(
        current.get(k) == result.condition()[k] for k in ("status", "reason")
    )
    if event is not None and target is not None and not said:
        ssn.writer.event(target, event["type"], event["reason"], event["message"])


def _condition(podgroup: Mapping[str, Any]) -> dict | None:
    for condition in (podgroup.get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION_TYPE:
            return condition
    return None


def _differs(current: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    return current is None or any(current.get(k) != new[k] for k in _COMPARED)


def _set_condition(ssn: Session, job: JobInfo, condition: dict) -> None:
    """Patch the conditions list with ours replaced, keeping every other condition.

    The session's copy of the PodGroup is updated too, so the status written after the
    actions (``record_job_status``, which rebuilds the list from it) keeps our condition.
    """
    podgroup = job.podgroup
    if podgroup is None:
        return
    status = dict(podgroup.get("status") or {})
    others = [c for c in status.get("conditions") or [] if c.get("type") != CONDITION_TYPE]
    status["conditions"] = [*others, condition]
    job.podgroup = {**podgroup, "status": status}
    ssn.writer.podgroup_status(job.podgroup, {"conditions": status["conditions"]})
