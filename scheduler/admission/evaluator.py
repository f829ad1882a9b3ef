"""Evaluator (Kueue KEP-3211): can every pod of a workload be placed on the snapshot's nodes?

Pods are sized by their limits (``basis="limits"``) and may only use nodes that
``scheduler.api.node_matching`` accepts; pods share the nodes' remaining capacity.
First-fit / best-fit decreasing prove "fits", necessary conditions prove "cannot fit", an
exact search decides the rest within ``budget_s``, and otherwise the answer is "unknown".
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from scheduler.admission.monitor import (
    GUARANTEED,
    UNLIMITED,
    Basis,
    CapacitySnapshot,
    free_row,
    pod_demand,
    qos_class,
)
from scheduler.admission.packing import Packing, exact_search, greedy, overload, pod_without_node
from scheduler.api import node_matching
from scheduler.api.quantity import PODS, format_resource

DEFAULT_BUDGET_S = 0.05
_MAX_EXACT_PODS = 400  # deeper searches would hit Python's recursion limit


class Verdict(StrEnum):
    FITS = "fits"
    CANNOT_FIT = "cannot_fit"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Evaluation:
    verdict: Verdict
    explanation: str
    placement: dict[str, str] | None = None  # "namespace/name" -> node name, when it fits
    # ffd | bfd | exact | largest-pod | total | count | budget | skipped | empty | min-resources
    method: str = ""
    checked: bool = True  # False when admitted without the check (not Guaranteed)

    @property
    def fits(self) -> bool:
        return self.verdict is Verdict.FITS


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"


def evaluate_workload(
    pods: Sequence[Mapping[str, Any]],
    snapshot: CapacitySnapshot,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
) -> Evaluation:
    """The KEP's admission rule: check Guaranteed workloads by limits, admit the others. A
    workload without pods (and nothing else to judge it by: see ``scheduler.admission.awaited``)
    asks for nothing and is admitted unchecked too."""
    if not pods:
        text = "not checked: no pods yet, and no minResources to judge them by"
        return Evaluation(Verdict.FITS, text, {}, method="empty", checked=False)
    skipped = not_guaranteed(pods)
    if skipped is not None:
        return skipped
    return evaluate(pods, snapshot, basis="limits", budget_s=budget_s)


def not_guaranteed(pods: Sequence[Mapping[str, Any]]) -> Evaluation | None:
    """The KEP admits a workload unchecked when one of its pods is not Guaranteed."""
    for pod in pods:
        qos = qos_class(pod)
        if qos != GUARANTEED:
            text = f"not checked: pod {pod_key(pod)} is {qos}, only Guaranteed workloads are"
            return Evaluation(Verdict.FITS, text, method="skipped", checked=False)
    return None


def evaluate(
    pods: Sequence[Mapping[str, Any]],
    snapshot: CapacitySnapshot,
    *,
    basis: Basis = "limits",
    budget_s: float = DEFAULT_BUDGET_S,
) -> Evaluation:
    """Decide whether all ``pods`` can be placed together, whatever their QoS class."""
    if not pods:
        return Evaluation(Verdict.FITS, "the workload has no pods", {}, method="empty")
    deadline = time.perf_counter() + budget_s
    keys = [pod_key(p) for p in pods]
    demands = [pod_demand(p, basis) for p in pods]
    signatures = [node_matching.scheduling_signature(p) for p in pods]
    resources = sorted({r for d in demands for r in d}, key=lambda r: (r != "cpu", r))
    packing = _packing(snapshot, demands, signatures, resources)
    names = [n.node_name for n in snapshot.nodes]
    decided = _decide(packing, deadline, len(pods))
    verdict, method, assignment, states = decided
    if verdict is Verdict.FITS:
        placement = {keys[p]: names[n] for p, n in enumerate(assignment)}
        used = len(set(assignment))
        text = f"all {len(pods)} pod(s) fit on {used} node(s) ({_METHOD_TEXT[method]})"
        return Evaluation(verdict, text, placement, method)
    if verdict is Verdict.UNKNOWN:
        text = (
            f"undecided within {budget_s:g} s: {len(pods)} pod(s) on {len(names)} node(s); "
            f"the quick checks pass but no placement was found ({states} states searched)"
        )
        return Evaluation(verdict, text, method="budget")
    text = _explain_cannot_fit(packing, method, pods, keys, snapshot, resources, signatures, states)
    return Evaluation(verdict, text, method=method)


_METHOD_TEXT = {
    "ffd": "first-fit decreasing",
    "bfd": "best-fit decreasing",
    "exact": "exact search",
}


def _decide(packing: Packing, deadline: float, n_pods: int) -> tuple[Verdict, str, Any, int]:
    if pod_without_node(packing) is not None:
        return Verdict.CANNOT_FIT, "largest-pod", None, 0
    for method, best_fit in (("ffd", False), ("bfd", True)):
        assignment = greedy(packing, best_fit=best_fit)
        if assignment is not None:
            return Verdict.FITS, method, assignment, 0
    found = overload(packing)
    if found is not None:
        return Verdict.CANNOT_FIT, found.kind, found, 0
    if n_pods > _MAX_EXACT_PODS:
        return Verdict.UNKNOWN, "budget", None, 0
    outcome = exact_search(packing, deadline)
    if outcome.assignment is not None:
        return Verdict.FITS, "exact", outcome.assignment, outcome.states
    if outcome.complete:
        return Verdict.CANNOT_FIT, "exact", None, outcome.states
    return Verdict.UNKNOWN, "budget", None, outcome.states


def _node_dicts(snapshot: CapacitySnapshot) -> list[dict[str, Any]]:
    cached = snapshot.mask_cache.get("__nodes__")
    if cached is None:
        cached = snapshot.mask_cache["__nodes__"] = [n.as_node() for n in snapshot.nodes]
    return cached


def node_mask(snapshot: CapacitySnapshot, signature: node_matching.PodConstraints) -> np.ndarray:
    """Suitable nodes for pods with this signature, cached on the (immutable) snapshot."""
    mask = snapshot.mask_cache.get(signature)
    if mask is None:
        nodes = _node_dicts(snapshot)
        mask = np.fromiter(
            (node_matching.node_accepts(signature, n)[0] for n in nodes), bool, len(nodes)
        )
        snapshot.mask_cache[signature] = mask
    return mask


def capacity_matrix(snapshot: CapacitySnapshot, resources: Sequence[str]) -> np.ndarray:
    """Remaining capacity [nodes, resources], negatives clamped to 0, cached per resource list.

    A snapshot ``minus`` derived starts from its base's matrix and redoes the rows of the
    nodes something was taken from (``minus`` itself carries matrices already worked out).
    """
    key = tuple(resources)
    matrix = snapshot.capacity_cache.get(key)
    if matrix is None:
        if snapshot.base is not None:
            matrix = capacity_matrix(snapshot.base, resources).copy()
            for i in snapshot.deducted:
                matrix[i] = free_row(snapshot.nodes[i], resources)
        else:
            rows = [
                [n.remaining.get(r, UNLIMITED if r == PODS else 0) for r in resources]
                for n in snapshot.nodes
            ]  # free_row for every node, clamped at once
            matrix = np.maximum(np.array(rows, dtype=np.int64).reshape(-1, len(resources)), 0)
        snapshot.capacity_cache[key] = matrix
    return matrix


def _packing(
    snapshot: CapacitySnapshot,
    demands: Sequence[Mapping[str, int]],
    signatures: Sequence[Any],
    resources: Sequence[str],
) -> Packing:
    classes: dict[Any, int] = {}
    pod_class = np.array([classes.setdefault(s, len(classes)) for s in signatures], dtype=np.int64)
    masks = np.array([node_mask(snapshot, s) for s in classes], dtype=bool)
    masks = masks.reshape(len(classes), len(snapshot.nodes))
    demand = np.array([[d.get(r, 0) for r in resources] for d in demands], dtype=np.int64)
    return Packing(demand, capacity_matrix(snapshot, resources), masks, pod_class)


def _explain_cannot_fit(
    packing: Packing,
    method: str,
    pods: Sequence[Any],
    keys: Sequence[str],
    snapshot: CapacitySnapshot,
    resources: Sequence[str],
    signatures: Sequence[Any],
    states: int,
) -> str:
    if method == "largest-pod":
        pod = pod_without_node(packing)
        if pod is not None:
            return _explain_pod(packing, pod, keys[pod], snapshot, resources, signatures[pod])
    if method == "exact":
        return (
            f"no placement of the {len(pods)} pods exists: each fits some node alone, but an "
            f"exhaustive search ({states} states) found no way to place them together"
        )
    found = overload(packing)
    if found is None:
        return f"no placement of the {len(pods)} pods was found"
    suitable = int(found.nodes.sum())
    if found.kind == "total":
        name = resources[found.resource]
        return (
            f"the {len(found.pods)} pod(s) need {format_resource(name, found.needed)} but the "
            f"{suitable} suitable node(s) have {format_resource(name, found.available)} free"
        )
    return (
        f"at most {found.available} of the {found.needed} pod(s) fit at once on the "
        f"{suitable} suitable node(s): each node holds too few of them"
    )


def _explain_pod(
    packing: Packing,
    pod: int,
    key: str,
    snapshot: CapacitySnapshot,
    resources: Sequence[str],
    signature: Any,
) -> str:
    total = len(snapshot.nodes)
    mask = packing.masks[packing.pod_class[pod]]
    if not mask.any():
        reasons = Counter(
            node_matching.node_accepts(signature, n)[1] for n in _node_dicts(snapshot)
        )
        parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        return f"0/{total} nodes are available for pod {key}: {parts}"
    capacity = packing.capacity[mask]
    need = packing.demand[pod]
    enough = capacity >= need
    per_resource = enough.sum(axis=0)
    short = int(np.argmin(np.where(need > 0, per_resource, np.iinfo(np.int64).max)))
    name, suitable = resources[short], int(mask.sum())
    of_nodes = f"{suitable} nodes" if suitable == total else f"{suitable} suitable nodes of {total}"
    if per_resource[short] == 0:
        largest = format_resource(name, int(capacity[:, short].max()))
        return (
            f"no suitable node has {format_resource(name, int(need[short]))} free for pod {key}: "
            f"0 of {of_nodes} (largest free {largest})"
        )
    wanted = " and ".join(
        format_resource(r, int(need[i])) for i, r in enumerate(resources) if need[i] and r != PODS
    )
    return f"no suitable node has {wanted} free at once for pod {key} ({of_nodes})"
