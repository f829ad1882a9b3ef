"""What preempt and reclaim share: on a node, evict just enough running tasks to make room for
a waiting task, and pipeline it there — on the first node where that works out; evictions on
a node that does not work out are undone before the next node is tried (Volcano's
normalPreempt and reclaimForTask, each with a statement per node merged only on success).

The evicted pods release their resources over their termination grace period; until then the
node's future idle (idle + releasing - pipelined) is what the pipelined task holds, and the
decision persists across cycles through the cache (Volcano's pipeline cache persistence
design, issue #5044).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from scheduler.api.helpers import has_only_volcano_scheduling_gate
from scheduler.api.job_info import JobInfo
from scheduler.api.node_info import NodeInfo
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement

VictimFilter = Callable[[TaskInfo], bool]
Victims = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]
NodeFits = Callable[[NodeInfo], bool]  # may the task be pipelined on this node now?


def may_preempt(task: TaskInfo) -> bool:
    """A pod with ``preemptionPolicy: Never`` waits instead of evicting others."""
    return (task.pod.get("spec") or {}).get("preemptionPolicy") != "Never"


def evict_on_nodes(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    nodes: Iterable[NodeInfo],
    candidates_of: Callable[[NodeInfo], list[TaskInfo]],
    victims_of: Victims,
    fits: NodeFits,
    why: str,
    *,
    on_attempt: Callable[[], None] | None = None,
) -> bool:
    """Try ``nodes`` in order: the plugins pick the victims among the node's candidates; if
    even all of them would not free enough, the node is skipped; otherwise victims go in
    Volcano's victim order until the task ``fits``, and it is pipelined there. True when it
    was. A node that does not work out keeps nothing of what was tried on it."""
    for node in nodes:
        if not ssn.may_pipeline_on(task, node):
            continue  # its decision there lapsed while the same pods are still leaving
        victims = victims_of(task, candidates_of(node))
        if not _enough(task, node, victims):
            continue
        if on_attempt is not None:
            on_attempt()
        node_stmt = Statement(ssn)
        ok = fits(node)
        for victim in sorted(victims, key=ssn.victim_order_key(task), reverse=True):
            if ok:
                break
            node_stmt.evict(victim, f"{why} {task.namespace}/{task.name}")
            ok = fits(node)
        if ok:
            node_stmt.pipeline(task, node)
            stmt.merge(node_stmt)
            return True
        node_stmt.discard()
    return False


def _enough(task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """Volcano's ValidateVictims: the node's future idle plus every victim holds the task."""
    freed = node.future_idle
    for victim in victims:
        freed.add(victim.node_req)  # its request and its pod slot
    return task.fit_req.less_equal(freed)


def may_hold_after_evictions(ssn: Session, vec: np.ndarray) -> np.ndarray:
    """Bool per node: could evicting Bound and Running tasks there ever free room for a task
    requesting ``vec``? A node where it could not is one ``_enough`` refuses (Volcano's
    ValidateVictims) whatever the victims; skipping it first, in one vector operation, spares
    building and judging its candidates, which at a few thousand nodes is most of a cycle.

    The room eviction can make is at most future idle + the Bound and Running tasks' requests
    <= idle + used - pipelined, and idle + used is the larger of allocatable and used (idle is
    allocatable - used floored at zero: used exceeds allocatable when pods bound by another
    scheduler overcommitted the node)."""
    matrix = ssn.matrix
    dims = np.flatnonzero(vec)
    held = np.maximum(matrix.allocatable[:, dims], matrix.used[:, dims])
    room = held - matrix.pipelined[:, dims]
    return np.all(room >= vec[dims] - _TOLERANCE, axis=1)


# Resource.less_equal's tolerance (scheduler/api/resource.py): the vector check must never
# refuse a node the exact check would accept.
_TOLERANCE = 0.1


def nodes_by_score(
    ssn: Session, task: TaskInfo, victims: np.ndarray | None = None
) -> list[NodeInfo]:
    """The nodes that pass the task's predicates and where evictions could make room for it
    (``may_hold_after_evictions``; with ``victims``, per node at most what the victims there
    could free, also where future idle plus that holds it), best score first, name breaking
    ties."""
    vec = ssn.matrix.vector(task.fit_req)
    mask = ssn.predicate_mask(task) & may_hold_after_evictions(ssn, vec)
    if victims is not None:
        dims = np.flatnonzero(vec)
        room = ssn.matrix.future[:, dims] + victims[:, dims]
        mask &= np.all(room >= vec[dims] - _TOLERANCE, axis=1)
    scores = ssn.node_scores(task, vec) if ssn.node_score_fns else np.zeros(len(ssn.node_list))
    order = sorted(np.flatnonzero(mask), key=lambda i: -scores[i])
    return [ssn.node_list[i] for i in order]


def fits_now(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """The task fits the node's future idle and passes its predicates there."""
    return bool(task.fit_req.less_equal(node.future_idle) and ssn.predicate_mask(task)[node.index])


def starving_jobs_by_queue(ssn: Session) -> dict[str, list[JobInfo]]:
    """Admitted jobs that still need resources (the plugins' job_starving), by queue."""
    out: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if not ssn.schedulable(job) or job.queue not in ssn.queues or not ssn.job_starving(job):
            continue
        out.setdefault(job.queue, []).append(job)
    return out


def pending_tasks(ssn: Session, job: JobInfo, *, ours_gated: bool = False) -> list[TaskInfo]:
    """The job's pending tasks that may evict for room, in task order: ungated ones, and with
    ``ours_gated`` those held only by our queue-allocation gate (preempt lifts it when the
    evictions make room in their queue)."""
    return sorted(
        (
            t
            for t in job.pending_tasks()
            if not t.sch_gated or (ours_gated and has_only_volcano_scheduling_gate(t.pod))
        ),
        key=ssn.task_order_key,
    )


def running_candidates(
    node: NodeInfo,
    keep: VictimFilter,
    statuses: frozenset[TaskStatus],
    refused: frozenset[str] = frozenset(),
) -> list[TaskInfo]:
    """The node's tasks that may be victims: preemptable (``volcano.sh/preemptable``, read
    when the task was made), in ``statuses``, kept by ``keep``,
    and not among the victims whose eviction was refused lately (``refused``)."""
    return [
        t
        for t in node.tasks.values()
        if t.preemptable and t.status in statuses and t.uid not in refused and keep(t)
    ]


def commit_if_pipelined(ssn: Session, stmt: Statement, job: JobInfo) -> None:
    """A job's evictions stand only if it ends up pipelined (gang: ready + pipelined reach
    minAvailable); otherwise nothing is evicted for it."""
    if ssn.job_pipelined(job):
        stmt.commit()
    else:
        stmt.discard()


PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})  # Volcano's
RECLAIMABLE_STATUSES = frozenset({TaskStatus.RUNNING})  # reclaim takes Running tasks only
