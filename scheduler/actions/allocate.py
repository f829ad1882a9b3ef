"""allocate: queue by queue, job by job, place tasks; a job commits only when it is ready.

Nodes come in two gradients, as in Volcano: nodes whose idle resources fit the task are
preferred (allocate); otherwise a node whose future idle fits gets the task pipelined.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from scheduler.api.helpers import (
    has_only_volcano_scheduling_gate,
    scheduling_gates,
)
from scheduler.api.job_info import PG_INQUEUE, JobInfo
from scheduler.api.node_info import NodeInfo
from scheduler.api.queue_info import QueueInfo
from scheduler.api.status import Code, Status
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.framework.job_status import gang_cause
from scheduler.framework.session import Session
from scheduler.framework.statement import Op, Statement
from scheduler.plugins.predicates import fit_error_message, resource_reasons

JobsByQueue = dict[str, list[tuple[tuple, str]]]  # queue -> heap of (job order key, job uid)


def execute(ssn: Session) -> None:
    """Jobs holding pipeline decisions go first, in their own pass, so a persisted decision
    is continued before new arrivals can take its node (Volcano's pipeline cache persistence
    design, change 3)."""
    pipelined, pending = _contexts(ssn)
    _allocate_resources(ssn, pipelined)
    _allocate_resources(ssn, pending)


def _contexts(ssn: Session) -> tuple[JobsByQueue, JobsByQueue]:
    pipelined: JobsByQueue = {}
    pending: JobsByQueue = {}
    enqueue_runs = "enqueue" in ssn.config.actions
    for job in ssn.jobs.values():
        if job.is_pending() and not enqueue_runs:
            job.phase = PG_INQUEUE  # no enqueue action configured: admitted here, as Volcano
        if not ssn.schedulable(job) or job.queue not in ssn.queues:
            continue
        if not (job.count(TaskStatus.PENDING) or job.pipelined_num()):
            continue
        # Volcano files every JobPipelined job here; only jobs that actually hold a pipelined
        # task have a decision to protect, so a running job's extra pods keep their turn.
        context = pipelined if job.pipelined_num() and ssn.job_pipelined(job) else pending
        context.setdefault(job.queue, []).append((ssn.job_order_key(job), job.uid))
    return pipelined, pending


def _allocate_resources(ssn: Session, jobs_by_queue: JobsByQueue) -> None:
    remaining: dict[
        str, deque[TaskInfo]
    ] = {}  # job uid -> tasks not tried yet, in order (Volcano keeps
    # one task queue per job across pops, so a task is tried at most once per action)
    queue_heap = []
    for name, heap in jobs_by_queue.items():
        heapq.heapify(heap)
        queue_heap.append((ssn.queue_order_key(ssn.queues[name]), name))
    heapq.heapify(queue_heap)
    while queue_heap:
        _, name = heapq.heappop(queue_heap)
        queue, heap = ssn.queues[name], jobs_by_queue[name]
        if ssn.overused(queue):
            continue
        job = ssn.jobs[heapq.heappop(heap)[1]]
        if job.uid not in remaining:
            remaining[job.uid] = deque(_worksheet(ssn, job))
        if _allocate_job(ssn, queue, job, remaining[job.uid]):
            heapq.heappush(heap, (ssn.job_order_key(job), job.uid))
        if heap:
            heapq.heappush(queue_heap, (ssn.queue_order_key(queue), name))


def _worksheet(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """Pipelined tasks before Pending ones (pipeline cache persistence), each in task order."""
    pending = sorted(job.pending_tasks(), key=ssn.task_order_key)
    if not job.pipelined_num():
        return pending
    pipelined = job.index[TaskStatus.PIPELINED].values()
    return [*sorted(pipelined, key=ssn.task_order_key), *pending]


def _allocate_job(ssn: Session, queue: QueueInfo, job: JobInfo, tasks: deque[TaskInfo]) -> bool:
    """Place the job's tasks; True when it became ready with tasks left (it goes back in line).

    Three ways out (pipeline cache persistence design, change 2): ready -> commit; pipelined
    -> commit too, so the decisions persist; neither -> discard, freeing what the session
    reserved for it. A gated member's gate goes only with its gang's: when the members its
    queue admits reach the gang's minimum, all of them are ungated together (to wait for nodes
    in the open, holding their reservations); below it, none is — a gang that does not fit its
    queue stays gated, holds nothing, and never looks Unschedulable.
    """
    stmt = Statement(ssn)
    more = False
    admitted = job.ready_task_num()  # members running, bound or binding already
    while tasks:
        admitted += _allocate_task(ssn, stmt, queue, job, tasks.popleft())
        if ssn.job_ready(job) and tasks:
            more = True
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        ssn.cleanup_reservations(stmt)
        stmt.commit()
        return more
    placed = [op.task for op in stmt.operations if op.name is not Op.UNGATE]
    if admitted >= job.min_available:
        stmt.commit_ungates_only()
        _explain_gang(ssn, job, placed)
    else:
        stmt.discard()
        _below_minimum(ssn, job, admitted, placed)
    return more


def _allocate_task(
    ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, task: TaskInfo
) -> bool:
    """Try one task; True when its queue admits it (its check passed, or it continues a
    persisted pipeline), whether or not a node was found."""
    if task.status == TaskStatus.PIPELINED:
        if _queue_still_admits(ssn, queue, task) and _continue_pipeline(ssn, stmt, task):
            return True
        # The nominated node no longer fits it (problem 2), or its queue no longer admits it:
        # look again, as a pending task.
        stmt.unpipeline(task)
    if task.sch_gated and not has_only_volcano_scheduling_gate(task.pod):
        ssn.wait(task, _gated(task))  # another controller's gate: not ours to lift
        return False
    if task.best_effort and not task.sch_gated:
        return True  # best-effort tasks are the backfill action's
    refusal = ssn.allocatable(queue, task)
    if not refusal.ok:
        job.nodes_fit_errors[task.uid] = refusal
        ssn.wait(task, refusal)
        return False
    if task.sch_gated:
        # Only our gate, and the queue has room: let the pod be seen (gate-controlled
        # scheduling design) — with its gang's, at the statement's end. A pod whose opt-in
        # annotation was removed is let through too, holding no reservation.
        stmt.ungate(task)
        if task.best_effort:
            return True  # backfill places it
    previous = task.last_transaction.nominated_node_name if task.last_transaction else ""
    node, pipelined = _select_node(ssn, job, task, prefer=ssn.nodes.get(previous))
    if node is None:
        return True
    if pipelined:
        stmt.pipeline(task, node)
    else:
        stmt.allocate(task, node)
    return True


def _gated(task: TaskInfo) -> Status:
    gates = ", ".join(scheduling_gates(task.pod))
    return Status(Code.GATED, "allocate", f"waiting for scheduling gates to be removed: {gates}")


def _queue_still_admits(ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
    """Does the queue still admit a task pipelined by an earlier cycle? Volcano's allocate asks
    ``ssn.Allocatable(queue, task)`` of every task before anything else, one with a
    NominatedNodeName included (allocateResourcesForTasks, validateNomination): a capability
    lowered or a queue closed since the decision ends it instead of binding the pod past the
    queue's limit. The task's share already counts in its queue's figures (a persisted decision
    holds it), so it is taken out for the check and put back."""
    for handler in ssn.deallocate_handlers:
        handler(task)
    try:
        return ssn.allocatable(queue, task).ok
    finally:
        for handler in ssn.allocate_handlers:
            handler(task)


def _continue_pipeline(ssn: Session, stmt: Statement, task: TaskInfo) -> bool:
    """The nominated-node fast path: if the node's future idle still holds the task, allocate
    it there when the resources are free now, else leave it pipelined there. Plain FutureIdle:
    the task's own reservation counts against it, never added back (problem 2)."""
    node = ssn.nodes.get(task.nominated_node_name)
    if node is None or task.node_name != node.name:
        return False
    matrix = ssn.matrix
    vec = matrix.vector(task.fit_req)
    if not (matrix.fits(vec, future=True)[node.index] and ssn.predicate_mask(task)[node.index]):
        return False
    if matrix.fits(vec, future=False)[node.index]:
        stmt.allocate(task, node)  # Pipelined -> Allocated on the same node
    else:
        stmt.pipeline(task, node)  # already there: a no-op, no duplicate event
        message = f"pipelined on {node.name} until resources are released there"
        ssn.wait(task, Status(Code.PIPELINED, "allocate", message))
    return True


def _select_node(
    ssn: Session, job: JobInfo, task: TaskInfo, prefer: NodeInfo | None = None
) -> tuple[NodeInfo | None, bool]:
    """Volcano's allocate predicate: a node must hold the task in its future idle (idle +
    releasing - pipelined), so nothing takes room promised to a pipelined task. Among those,
    nodes with room now get an allocation, the others a pipeline. The node the task was last
    nominated to wins its gradient, so a decision does not drift."""
    matrix = ssn.matrix
    vec = matrix.vector(task.fit_req)
    mask = ssn.predicate_mask(task)
    now = mask & matrix.fits(vec, future=False)
    if matrix.any_pipelined:
        now &= matrix.fits(vec, future=True)
    lapsed = ssn.lapsed_pipelines.get(task.uid)
    for pipelined in (False, True):
        fit = mask & matrix.fits(vec, future=True) if pipelined else now
        if pipelined and lapsed is not None and lapsed[0] in ssn.nodes:
            node = ssn.nodes[lapsed[0]]
            if node.index >= 0 and not ssn.may_pipeline_on(task, node):
                fit = fit.copy()
                fit[node.index] = False  # its decision there lapsed; the same pods still leave
        if fit.any():
            if prefer is not None and prefer.index >= 0 and fit[prefer.index]:
                return prefer, pipelined
            scores = ssn.node_scores(task, vec) if ssn.node_score_fns else np.zeros(len(fit))
            # argmax takes the first best node: nodes are sorted by name, so ties are stable.
            best = int(np.argmax(np.where(fit, scores, -np.inf)))
            return ssn.node_list[best], pipelined
    reasons = ssn.predicate_reasons(task, mask)
    reasons.update(resource_reasons(matrix, vec, mask))
    status = Status(
        Code.UNSCHEDULABLE, "predicates", fit_error_message(len(ssn.node_list), reasons)
    )
    job.nodes_fit_errors[task.uid] = status
    ssn.wait(task, status)
    return None, False


def _below_minimum(ssn: Session, job: JobInfo, admitted: int, placed: list[TaskInfo]) -> None:
    """The queue admits fewer members than the gang's minimum: it holds none of the queue —
    members ungated earlier (by Volcano one at a time, or by a scheduler before a capability
    was lowered) release what their checks reserved — and when the queue is what refused, its
    members wait for the queue, not for nodes: buying a node would change nothing, so none
    may look ``Unschedulable`` to an autoscaler."""
    pending = job.pending_tasks()
    for task in pending:
        if not task.sch_gated:
            ssn.unreserve(task)
    refusal = next((s for s in job.nodes_fit_errors.values() if s.queue_limited), None)
    if refusal is None:
        _explain_gang(ssn, job, placed)
        return
    message = (
        f"gang of {job.min_available}: its queue admits {admitted} of its minimum "
        f"({refusal.message})"
    )
    for task in pending:
        status = ssn.waiting.get(task.uid)
        if not task.sch_gated and (status is None or status.node_shortfall):
            ssn.wait(task, Status(refusal.code, "gang", message))


def _explain_gang(ssn: Session, job: JobInfo, placed: list[TaskInfo]) -> None:
    """The members placed for nothing wait for the rest of their gang — for what the rest
    lacks: nodes (an autoscaler should see the gang), or their queue (it should not)."""
    ready = job.ready_task_num()
    message = (
        f"gang of {job.min_available} not ready: {ready} running or allocated, "
        f"{len(placed)} more could be placed this cycle"
    )
    status = Status(gang_cause(job.nodes_fit_errors.values(), job.job_fit_error), "gang", message)
    for task in placed:
        ssn.wait(task, status)
