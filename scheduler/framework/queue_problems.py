"""After the actions: what is wrong with a Queue, or with the queue a job names — in the
report, and said once on the object with a Warning event.

Volcano emits no event for any of these. Its admission webhook refuses such objects when they
are created (a PodGroup or Job whose queue does not exist: "unable to find queue"; a Queue
whose parent does not exist; a negative quantity in ``spec.capability``), and its scheduler,
handed one anyway, ignores the job with a log line (cache.go: "The Queue <q> of Job <ns/name>
does not exist, ignore it."), stops the capacity plugin for the cycle (a missing parent) or
reads a CPU or memory capability at or below zero as unlimited, in silence. Sluice validates
neither Queues nor PodGroups at admission, so it says on the object what it does with it:

- ``QueueNotFound`` (on the PodGroup, or on the pod of a job without one): the queue the job
  names does not exist; its pods wait — a gated one keeps its gate — until a Queue of that
  name is created. ``QueueInvalid`` when the queue exists but Sluice cannot use it (the
  Queue's own ``InvalidObject`` event says why).
- ``ParentQueueNotFound`` / ``QueueInvalid`` (on the Queue): with the capacity plugin's
  hierarchy, ``spec.parent`` names a queue that does not exist (or an ancestor is broken): no
  job can use the queue until that is fixed.
- ``CapabilityUnlimited`` (on the Queue): ``spec.capability.cpu`` or ``.memory`` is at or
  below zero, which Volcano's capacity plugin reads as no limit on that resource (with
  enableHierarchy: the parent's capability, which is no limit under root).

Each problem is said once: ``said`` (kept by the cache across cycles) remembers what was said
on which object until the problem changes or goes away. Observe mode writes nothing and the
report still lists every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.api.helpers import meta
from scheduler.api.job_info import JobInfo
from scheduler.api.labels import QUEUE_NAME_ANNOTATION, ROOT_QUEUE
from scheduler.api.report import FIGURES_HIERARCHY, ObjectProblem
from scheduler.api.status import Code

if TYPE_CHECKING:
    from scheduler.framework.session import Session
    from scheduler.framework.writer import Writer

QUEUE_NOT_FOUND = "QueueNotFound"
QUEUE_INVALID = "QueueInvalid"
PARENT_NOT_FOUND = "ParentQueueNotFound"
CAPABILITY_UNLIMITED = "CapabilityUnlimited"

_QUEUE = ("scheduling.volcano.sh/v1beta1", "Queue")
_PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
_POD = ("v1", "Pod")


def report_queue_problems(
    ssn: Session, writer: Writer, said: dict[str, str], invalid_queues: frozenset[str]
) -> list[ObjectProblem]:
    """Every problem of this cycle, for the report; those not said yet are written as Warning
    events (act mode). ``invalid_queues``: queues the cache refused (they exist, unusable)."""
    found: list[tuple[ObjectProblem, Mapping[str, Any]]] = []
    for name in sorted(ssn.queues):
        queue = ssn.queues[name]
        if queue.is_implicit:
            continue
        parent = queue.parent or ROOT_QUEUE
        inherits = ssn.queue_figures == FIGURES_HIERARCHY and parent != ROOT_QUEUE
        for resource, value in sorted(queue.unlimited.items()):
            effect = (
                f"queue {name} has no {resource} limit of its own: its parent {parent}'s holds it"
                if inherits  # capacity.go, enableHierarchy: the parent's capability
                else f"queue {name} is unlimited on {resource}"
            )
            message = (
                f"spec.capability.{resource} is {value}: a CPU or memory capability at or below "
                f"zero is no limit (Volcano's rule), so {effect}"
            )
            problem = ObjectProblem(
                "queue", "", name, f"spec.capability.{resource}", CAPABILITY_UNLIMITED, message
            )
            found.append((problem, _typed(queue.queue, _QUEUE)))
        why = ssn.queue_problems.get(name)
        if why:
            reason = PARENT_NOT_FOUND if parent not in ssn.queues else QUEUE_INVALID
            message = f"{why}: no job can use queue {name} until that is fixed"
            problem = ObjectProblem("queue", "", name, "spec.parent", reason, message)
            found.append((problem, _typed(queue.queue, _QUEUE)))
    for uid in sorted(ssn.skipped_jobs):
        status = ssn.skipped.get(uid)
        if status is None or status.code is not Code.QUEUE_INVALID:
            continue
        job = ssn.skipped_jobs[uid]
        missing = job.queue not in ssn.queues and job.queue not in invalid_queues
        reason = QUEUE_NOT_FOUND if missing else QUEUE_INVALID
        tail = (
            f"no pod of it is scheduled until a Queue named {job.queue} is created"
            if missing
            else "no pod of it is scheduled until that is fixed"
        )
        for kind, namespace, name, field, obj in _job_objects(job):
            message = f"{status.message}: {tail}"
            problem = ObjectProblem(kind, namespace, name, field, reason, message, job.queue)
            found.append((problem, obj))
    seen: set[str] = set()
    for problem, obj in found:
        key = problem.key
        seen.add(key)
        if said.get(key) == problem.message or writer.client is None:
            continue
        try:
            writer.client.record_event(obj, "Warning", problem.reason, problem.message)
        except Exception as exc:  # deleted meanwhile: said at the next cycle instead
            writer.errors.append(f"{problem.description}: record event {problem.reason}: {exc}")
            continue
        said[key] = problem.message
    for key in [k for k in said if k not in seen]:
        del said[key]  # fixed or gone: said again should it come back
    return [problem for problem, _ in found]


def _job_objects(job: JobInfo) -> list[tuple[str, str, str, str, Mapping[str, Any]]]:
    """Where a job's queue reference is written: its PodGroup's spec.queue, else each pending
    pod's queue-name annotation."""
    if job.podgroup is not None:
        name = str(meta(job.podgroup).get("name") or job.name)
        return [("podgroup", job.namespace, name, "spec.queue", _typed(job.podgroup, _PODGROUP))]
    field = f"metadata.annotations[{QUEUE_NAME_ANNOTATION}]"
    return [
        ("pod", task.namespace, task.name, field, _typed(task.pod, _POD))
        for task in sorted(job.pending_tasks(), key=lambda t: (t.namespace, t.name))
    ]


def _typed(obj: Mapping[str, Any], kind: tuple[str, str]) -> Mapping[str, Any]:
    """An event's involvedObject needs the kind, which a listed object does not carry."""
    return {**obj, "apiVersion": kind[0], "kind": kind[1]}
