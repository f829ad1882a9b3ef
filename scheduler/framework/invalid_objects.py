"""After the actions: the objects Sluice cannot use, in the report and on each object, once.

The cache refused them (``scheduler.cache.invalid``), so no action saw them. Every cycle lists
them in its report — a pod of ours also among the waiting pods, with the field that stops it —
and writes each new problem on its object: a Warning event with reason ``InvalidObject`` and,
on a pending pod of ours, ``PodScheduled=False`` with reason ``InvalidSpec``. Not
``Unschedulable``: no node will ever fit a pod that asks for ``cpu: 1e400``, so an autoscaler
must not buy one for it (Cluster Autoscaler and Karpenter act on ``Unschedulable`` only).

A problem is written once: the registry remembers it was said until the object changes in a way
that changes the problem, or is fixed, or is deleted. A pod whose condition already says it (a
scheduler that ran before this one said it) is not told again. In observe mode nothing is
written and the report still lists every object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.api.helpers import annotations_of, meta, pod_condition
from scheduler.api.labels import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler.api.report import InvalidObject, PodState, WaitingPod
from scheduler.api.status import Code, Status
from scheduler.cache.invalid import SINGULAR, InvalidObjects, RefusedObject

if TYPE_CHECKING:
    from scheduler.framework.session import Session
    from scheduler.framework.writer import Writer

EVENT_REASON = "InvalidObject"
CONDITION_REASON = "InvalidSpec"  # PodScheduled=False, and deliberately not "Unschedulable"
_TYPES = {  # what an event's involvedObject says (a listed object carries no kind)
    "pods": ("v1", "Pod"),
    "nodes": ("v1", "Node"),
    "queues": ("scheduling.volcano.sh/v1beta1", "Queue"),
    "podgroups": ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClass"),
}


def report_invalid_objects(
    invalid: InvalidObjects, writer: Writer, ssn: Session, scheduler_name: str
) -> tuple[list[InvalidObject], list[WaitingPod]]:
    """The refused objects for the report, and the pending pods of ours among them as
    waiting pods; writes the problems not yet written (act mode)."""
    objects: list[InvalidObject] = []
    waiting: list[WaitingPod] = []
    for entry in invalid.entries():
        pending = False
        if entry.kind == "pods":
            if not _ours(entry.obj, scheduler_name):
                continue  # another scheduler's pod: not ours to mark, nor to list
            pending = _pending(entry.obj)
            if pending:
                waiting.append(_waiting(entry, ssn))
        objects.append(
            InvalidObject(
                SINGULAR.get(entry.kind, entry.kind),
                entry.namespace,
                entry.name,
                entry.uid,
                entry.field,
                entry.message,
            )
        )
        if not entry.reported and writer.client is not None and _say(entry, writer, pending):
            invalid.mark_reported(entry)
    return objects, waiting


def message_of(entry: RefusedObject) -> str:
    """What the event and the condition say."""
    return f"Sluice cannot use this {SINGULAR.get(entry.kind, entry.kind)}: {entry.message}"


def _say(entry: RefusedObject, writer: Writer, pending: bool) -> bool:
    """Write the problem on the object; False (and an error in the report) if the API refused."""
    client = writer.client
    if client is None:
        return False
    api_version, kind = _TYPES.get(entry.kind, ("v1", entry.kind))
    obj = {**entry.obj, "apiVersion": api_version, "kind": kind}
    message = message_of(entry)
    try:
        if pending:
            condition = {"type": "PodScheduled", "status": "False",
                         "reason": CONDITION_REASON, "message": message}  # fmt: skip
            current = pod_condition(entry.obj, "PodScheduled") or {}
            if all(current.get(k) == condition[k] for k in ("status", "reason", "message")):
                return True  # already said, by a scheduler that ran before this one
            client.patch_pod_condition(obj, condition)
        client.record_event(obj, "Warning", EVENT_REASON, message)
    except Exception as exc:  # deleted meanwhile, a conflict: said at the next cycle instead
        writer.errors.append(f"{entry.description}: report it cannot be used: {exc}")
        return False
    return True


def _ours(pod: Mapping[str, Any], scheduler_name: str) -> bool:
    spec = pod.get("spec")
    name = spec.get("schedulerName") if isinstance(spec, Mapping) else None
    return (name or "default-scheduler") == scheduler_name


def _pending(pod: Mapping[str, Any]) -> bool:
    """Waiting to be scheduled: not bound, not finished, not being deleted."""
    spec, status = pod.get("spec"), pod.get("status")
    bound = isinstance(spec, Mapping) and bool(spec.get("nodeName"))
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return not bound and phase in (None, "Pending") and not meta(pod).get("deletionTimestamp")


def _waiting(entry: RefusedObject, ssn: Session) -> WaitingPod:
    """The pod among the waiting ones, in its PodGroup's queue (else its own annotation's)."""
    annotations = annotations_of(entry.obj)
    group = annotations.get(GROUP_NAME_ANNOTATION)
    job_id = f"{entry.namespace or 'default'}/{group}" if group else ""
    job = ssn.jobs.get(job_id) or ssn.skipped_jobs.get(job_id) if job_id else None
    queue = job.queue if job is not None else annotations.get(QUEUE_NAME_ANNOTATION)
    status = Status(Code.INVALID_OBJECT, "cache", message_of(entry))
    return WaitingPod(
        entry.namespace or "default",
        entry.name,
        entry.uid,
        str(queue or DEFAULT_QUEUE),
        job_id or f"{entry.namespace or 'default'}/pod:{entry.uid}",
        PodState.WAITING,
        status,
    )
