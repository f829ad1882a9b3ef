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
    has_queue_allocation_gate_annotation,
    scheduling_gates,
)
from scheduler.framework.statement import Statement
from scheduler.plugins.predicates import fit_error_message, resource_reasons


def execute(ssn) -> None:
    jobs_by_queue: dict[str, list] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or not job.pending_tasks():
            continue
        heap = jobs_by_queue.setdefault(job.queue, [])
        heap.append((ssn.job_order_key(job), job.uid))
    remaining: dict[str, deque] = {}  # job uid -> tasks not tried yet, in order (Volcano keeps
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
            remaining[job.uid] = deque(sorted(job.pending_tasks(), key=ssn.task_order_key))
        if _allocate_job(ssn, queue, job, remaining[job.uid]):
            heapq.heappush(heap, (ssn.job_order_key(job), job.uid))
        if heap:
            heapq.heappush(queue_heap, (ssn.queue_order_key(queue), name))


def _allocate_job(ssn, queue, job, tasks: deque) -> bool:
    """Place the job's tasks; True when it became ready with tasks left (it goes back in line)."""
    stmt = Statement(ssn)
    more = False
    while tasks:
        _allocate_task(ssn, stmt, queue, job, tasks.popleft())
        if ssn.job_ready(job) and tasks:
            more = True
            break
    if ssn.job_ready(job):
        ssn.cleanup_reservations(stmt)
        stmt.commit()
    elif ssn.job_pipelined(job):
        stmt.commit_pipelines()
    else:
        placed = [op.task for op in stmt.operations]
        stmt.discard()
        _explain_gang(ssn, job, placed)
    return more


def _allocate_task(ssn, stmt, queue, job, task) -> None:
    if task.best_effort:
        return  # best-effort tasks are the backfill action's
    if task.sch_gated and not has_only_volcano_scheduling_gate(task.pod):
        gates = ", ".join(scheduling_gates(task.pod))
        ssn.wait(task, f"waiting for scheduling gates to be removed: {gates}")
        return
    refusal = ssn.allocatable(queue, task)
    if refusal:
        job.nodes_fit_errors[task.uid] = refusal
        ssn.wait(task, refusal)
        return
    if task.sch_gated:
        if not has_queue_allocation_gate_annotation(task.pod):
            ssn.wait(
                task, f"waiting for scheduling gates to be removed: {scheduling_gates(task.pod)[0]}"
            )
            return
        ssn.writer.remove_gate(task)  # queue capacity is there: let the pod be seen (seed 000)
        task.sch_gated = False
    node, pipelined = _select_node(ssn, job, task)
    if node is None:
        return
    if pipelined:
        stmt.pipeline(task, node)
    else:
        stmt.allocate(task, node)


def _select_node(ssn, job, task):
    matrix = ssn.matrix
    vec = matrix.vector(task.fit_req)
    mask = ssn.predicate_mask(task)
    for future in (False, True):
        fit = mask & matrix.fits(vec, future=future)
        if fit.any():
            scores = ssn.node_scores(task, vec) if ssn.node_score_fns else np.zeros(len(fit))
            # argmax takes the first best node: nodes are sorted by name, so ties are stable.
            best = int(np.argmax(np.where(fit, scores, -np.inf)))
            return ssn.node_list[best], future
    reasons = ssn.predicate_reasons(task, mask)
    reasons.update(resource_reasons(matrix, vec, mask))
    message = fit_error_message(len(ssn.node_list), reasons)
    job.nodes_fit_errors[task.uid] = message
    ssn.wait(task, message)
    return None, False


def _explain_gang(ssn, job, placed) -> None:
    ready = job.ready_task_num()
    message = (
        f"gang of {job.min_available} not ready: {ready} running or allocated, "
        f"{len(placed)} more could be placed this cycle"
    )
    for task in placed:
        ssn.wait(task, message)
