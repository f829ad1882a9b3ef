"""The pods a PodGroup still awaits, judged on its ``minResources`` before they exist.

Volcano's job controller (``pkg/controllers/job/job_controller_actions.go``: it creates a
Job's pods only once its PodGroup has left Pending), the Spark operator and Kubeflow's
training operator create the PodGroup first. Volcano's enqueue admits such a PodGroup on its
``minResources`` alone: the overcommit plugin (``pkg/scheduler/plugins/overcommit``) compares
it, as one aggregate, with the cluster's idle resources, and the queue plugins with the
queue's. Kueue's node-capacity check (KEP-3211, KEP PR #5042) judges a Workload from its pod
sets, whose every pod's shape is known before any pod exists; a PodGroup gives less:
``minMember`` pods that together request ``minResources`` (Volcano's controller sums the
requests of the first ``minAvailable`` pods of the Job's tasks), each of unknown shape,
QoS and node constraints.

So ``Awaited`` is what is known of the missing pods: how many (``minMember`` less the pods
that exist, at least one when none does) and what they request together (``minResources``
less what the existing pods request). ``judge`` declares them unable to fit only when no
shape of them could — Kueue's rule, "reject when it is known that no node can hold it":

* together they need ``total`` of every resource, so the schedulable nodes must have that
  much free in all (Volcano's overcommit rule, node by node instead of the cluster's sum);
* the largest of them needs at least ``ceil(total / count)`` of each resource on one node;
* each needs a pod slot.

Nodes tainted are counted (the pods may tolerate the taints; nothing tells us they do not);
cordoned nodes are not (a Job's pods do not tolerate ``node.kubernetes.io/unschedulable``).
Requests are judged whatever the pods' QoS class (a request that fits no node is never
scheduled, whatever the limits). An even split, by contrast, is neither necessary nor
sufficient (a 0.5 + 7.5 CPU gang fits nodes of 7.5 and 1 free, two 4 CPU pods do not), so it
only places the awaited pods for the ledger (``scheduler.admission.ledger``), which must hold
their room somewhere until they exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scheduler.admission.evaluator import (
    DEFAULT_BUDGET_S,
    Evaluation,
    Verdict,
    capacity_matrix,
    evaluate,
    evaluate_workload,
    not_guaranteed,
    pod_key,
)
from scheduler.admission.monitor import Basis, CapacitySnapshot, pod_demand
from scheduler.admission.packing import Packing, greedy
from scheduler.api.job_info import JobInfo
from scheduler.api.quantity import PODS, format_resource
from scheduler.api.task_info import TaskStatus

_FINISHED = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)


@dataclass(frozen=True)
class Awaited:
    """Pods a PodGroup still needs that do not exist yet."""

    key: str  # "namespace/podgroup": its awaited pods are named "<key>#<i>" in placements
    count: int
    total: Mapping[str, int]  # what they request together, engine units (no pod slots)
    min_member: int

    def keys(self) -> list[str]:
        return [f"{self.key}#{i}" for i in range(self.count)]

    def shapes(self) -> list[dict[str, int]]:
        """An even split of ``total`` (the first ones take the remainder's units), each with
        its pod slot: where the ledger holds their room until they exist."""
        out: list[dict[str, int]] = [{PODS: 1} for _ in range(self.count)]
        for name, units in self.total.items():
            share, extra = divmod(units, self.count)
            for i, shape in enumerate(out):
                if share + (i < extra):
                    shape[name] = share + (i < extra)
        return out

    def slots(self) -> list[tuple[str, dict[str, int]]]:
        """(key, shape) of each awaited pod, as the ledger records them."""
        return list(zip(self.keys(), self.shapes(), strict=True))

    def describe(self) -> str:
        wanted = ", ".join(format_resource(n, u) for n, u in sorted(self.total.items()))
        return (
            f"{self.count} pod(s) of PodGroup {self.key} not created yet (minMember "
            f"{self.min_member}), judged on its minResources: {wanted or 'nothing'} together"
        )


def awaited_pods(
    key: str,
    min_member: int,
    min_resources: Mapping[str, float] | None,
    existing: Iterable[Mapping[str, float]],
) -> Awaited | None:
    """What a PodGroup (``key``, ``minMember``, ``minResources``) awaits beyond its
    ``existing`` pods (their requests); None when nothing, or nothing is known (no
    ``minResources``: Volcano admits such a PodGroup unasked, as best-effort)."""
    if min_resources is None:
        return None
    left = {n: int(u) for n, u in min_resources.items() if n != PODS and u > 0}
    count = 0
    for requests in existing:
        count += 1
        for name, units in requests.items():
            if name in left:
                left[name] = max(left[name] - int(units), 0)
    missing = min_member - count
    if count == 0:
        missing = max(missing, 1)
    if missing <= 0:
        return None
    return Awaited(key, missing, {n: u for n, u in left.items() if u}, min_member)


def awaited_of(job: JobInfo) -> Awaited | None:
    """What the job's PodGroup needs beyond its pods that exist and have not finished."""
    if job.podgroup is None or job.min_resources is None:
        return None
    existing = [t.resreq.values for t in job.tasks.values() if t.status not in _FINISHED]
    key = f"{job.namespace}/{job.name}"
    return awaited_pods(key, job.min_available, job.min_resources.values, existing)


def judge(awaited: Awaited, snapshot: CapacitySnapshot) -> Evaluation:
    """CANNOT_FIT when no shape of the awaited pods fits the snapshot's schedulable nodes,
    else FITS with a placement of their even split (for the ledger)."""
    head = awaited.describe()
    schedulable = np.array([not n.unschedulable for n in snapshot.nodes], dtype=bool)
    names = [n.node_name for i, n in enumerate(snapshot.nodes) if schedulable[i]]
    if not names:
        return Evaluation(Verdict.CANNOT_FIT, f"{head}; no node is schedulable", method="total")
    resources = [PODS, *sorted(awaited.total, key=lambda r: (r != "cpu", r))]
    free = capacity_matrix(snapshot, resources)[schedulable]
    need = np.array([awaited.count, *(awaited.total[r] for r in resources[1:])], dtype=np.int64)
    have = free.sum(axis=0)
    for i, name in enumerate(resources):
        if need[i] > have[i]:
            text = (
                f"{head}; {'it needs' if awaited.count == 1 else 'they need'} "
                f"{format_resource(name, int(need[i]))} in all but the "
                f"{len(names)} schedulable node(s) have {format_resource(name, int(have[i]))} free"
            )
            return Evaluation(Verdict.CANNOT_FIT, text, method="total")
    largest = free.max(axis=0)
    for i, name in enumerate(resources[1:], start=1):
        least = -(-int(need[i]) // awaited.count)  # the largest pod needs at least this much
        if least > largest[i]:
            text = (
                f"{head}; one of them needs at least {format_resource(name, least)} on one "
                f"node, but no schedulable node has it free (largest free "
                f"{format_resource(name, int(largest[i]))})"
            )
            return Evaluation(Verdict.CANNOT_FIT, text, method="largest-pod")
    nodes = _place(awaited.shapes(), free, resources, names)
    placement = dict(zip(awaited.keys(), nodes, strict=True))
    text = f"{head}; the {len(names)} schedulable node(s) can hold them"
    return Evaluation(Verdict.FITS, text, placement, method="min-resources")


def _place(
    shapes: Sequence[Mapping[str, int]],
    free: np.ndarray,
    resources: Sequence[str],
    names: Sequence[str],
) -> list[str]:
    """Nodes for the even split: first-fit decreasing, and where that fails (the real pods
    may be shaped otherwise), each on the node that holds the largest part of it."""
    demand = np.array([[s.get(r, 0) for r in resources] for s in shapes], dtype=np.int64)
    masks = np.ones((1, len(names)), dtype=bool)
    packing = Packing(demand, free.copy(), masks, np.zeros(len(shapes), dtype=np.int64))
    assignment = greedy(packing, best_fit=False)
    if assignment is None:
        remaining = free.astype(float)
        assignment = []
        for row in demand:
            wanted = row > 0
            part = (remaining[:, wanted] / row[wanted]).min(axis=1) if wanted.any() else None
            node = int(np.argmax(part)) if part is not None else 0
            remaining[node] -= row
            assignment.append(node)
    return [names[n] for n in assignment]


def evaluate_with_awaited(
    pods: Sequence[Mapping[str, Any]],
    awaited: Awaited | None,
    snapshot: CapacitySnapshot,
    *,
    basis: Basis = "limits",
    budget_s: float = DEFAULT_BUDGET_S,
) -> Evaluation:
    """``evaluate`` the existing ``pods``, then judge the ``awaited`` ones on what is left."""
    if awaited is None:
        return evaluate(pods, snapshot, basis=basis, budget_s=budget_s)
    if not pods:
        return judge(awaited, snapshot)
    present = evaluate(pods, snapshot, basis=basis, budget_s=budget_s)
    if not present.fits or present.placement is None:
        return present
    taken: dict[str, dict[str, int]] = {}
    for pod in pods:
        node = present.placement.get(pod_key(pod))
        if node:
            for name, units in pod_demand(pod, basis).items():
                total = taken.setdefault(node, {})
                total[name] = total.get(name, 0) + units
    rest = judge(awaited, snapshot.minus(taken))
    text = f"{present.explanation}; {rest.explanation}"
    if not rest.fits:
        return replace(rest, explanation=text)
    return Evaluation(Verdict.FITS, text, {**present.placement, **(rest.placement or {})},
                      method=present.method)  # fmt: skip


def check_workload(
    pods: Sequence[Mapping[str, Any]],
    awaited: Awaited | None,
    snapshot: CapacitySnapshot,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
) -> Evaluation:
    """The KEP's admission rule (``evaluate_workload``: Guaranteed pods by their limits, any
    other workload admitted unchecked) for the pods that exist; the awaited ones, whose QoS
    class nobody knows yet, judged on ``minResources`` (requests) whenever the existing pods
    are all Guaranteed or there are none: else a PodGroup created before its pods would
    never be checked."""
    if awaited is None:
        return evaluate_workload(pods, snapshot, budget_s=budget_s)
    skipped = not_guaranteed(pods)
    if skipped is not None:
        return skipped
    return evaluate_with_awaited(pods, awaited, snapshot, basis="limits", budget_s=budget_s)
