"""Multi-dimensional bin packing with per-pod node eligibility, over numpy arrays.

A ``Packing`` holds integer matrices: ``demand`` (pods x resources), ``capacity``
(nodes x resources) and ``masks`` (suitability classes x nodes); ``pod_class[p]`` says which
mask pod ``p`` uses. Heuristics prove a fit, bounds prove there is none, and ``exact_search``
decides the rest within a deadline. Pure algorithm: no Kubernetes objects here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

Assignment = list[int]  # node index per pod


@dataclass
class Packing:
    demand: np.ndarray  # int64 [pods, resources]
    capacity: np.ndarray  # int64 [nodes, resources]
    masks: np.ndarray  # bool [classes, nodes]
    pod_class: np.ndarray  # int [pods]

    def candidates(self, pod: int, remaining: np.ndarray) -> np.ndarray:
        """Boolean mask of nodes where ``pod`` is suitable and fits in ``remaining``."""
        return self.masks[self.pod_class[pod]] & (remaining >= self.demand[pod]).all(axis=1)

    def decreasing_order(self) -> list[int]:
        """Largest dominant share first; identical pods end up adjacent (symmetry breaking)."""
        totals = np.maximum(self.capacity.sum(axis=0), 1)
        share = (self.demand / totals).max(axis=1) if len(self.demand) else []
        keys = [
            (-float(share[p]), int(self.pod_class[p]), tuple(self.demand[p]), p)
            for p in range(len(self.demand))
        ]
        return [key[-1] for key in sorted(keys)]


def greedy(packing: Packing, *, best_fit: bool) -> Assignment | None:
    """First-fit (or best-fit) decreasing; ``None`` when some pod finds no node."""
    remaining = packing.capacity.copy()
    scale = np.maximum(packing.capacity.max(axis=0), 1)
    assignment = [-1] * len(packing.demand)
    for pod in packing.decreasing_order():
        ok = packing.candidates(pod, remaining)
        if not ok.any():
            return None
        if best_fit:
            slack = ((remaining - packing.demand[pod]) / scale).sum(axis=1)
            node = int(np.argmin(np.where(ok, slack, np.inf)))
        else:
            node = int(np.argmax(ok))
        remaining[node] -= packing.demand[pod]
        assignment[pod] = node
    return assignment


def pod_without_node(packing: Packing) -> int | None:
    """A pod that no suitable node can hold even alone, largest first."""
    for pod in packing.decreasing_order():
        if not packing.candidates(pod, packing.capacity).any():
            return pod
    return None


@dataclass(frozen=True)
class Overload:
    """A necessary condition that fails: what the pods in ``pods`` need vs what nodes offer."""

    kind: str  # "total" (a resource's sum) or "count" (how many pods fit at most)
    pods: list[int]
    nodes: np.ndarray  # bool mask of the nodes counted
    resource: int  # index of the resource short (for "total")
    needed: int
    available: int


def _pod_groups(packing: Packing) -> list[list[int]]:
    """Each suitability class on its own, then all pods together when classes differ."""
    groups = [
        [int(i) for i in np.flatnonzero(packing.pod_class == k)]
        for k in np.unique(packing.pod_class)
    ]
    return groups + [list(range(len(packing.demand)))] if len(groups) > 1 else groups


def overload(packing: Packing) -> Overload | None:
    """Check sum bounds per resource and a pod-count bound for every pod group."""
    for pods in _pod_groups(packing):
        nodes = np.zeros(packing.capacity.shape[0], dtype=bool)
        for pod in pods:
            nodes |= packing.candidates(pod, packing.capacity)  # nodes that can host one of them
        need = packing.demand[pods].sum(axis=0)
        have = packing.capacity[nodes].sum(axis=0)
        short = np.flatnonzero(need > have)
        if len(short):
            r = int(short[0])
            return Overload("total", pods, nodes, r, int(need[r]), int(have[r]))
        smallest = packing.demand[pods].min(axis=0)
        used = smallest > 0
        if used.any():
            per_node = (packing.capacity[nodes][:, used] // smallest[used]).min(axis=1)
            if int(per_node.sum()) < len(pods):
                return Overload("count", pods, nodes, -1, len(pods), int(per_node.sum()))
    return None


class _OutOfTime(Exception):
    pass


@dataclass
class SearchOutcome:
    assignment: Assignment | None
    complete: bool  # True: the search finished, so ``None`` proves no placement exists
    states: int


def exact_search(packing: Packing, deadline: float) -> SearchOutcome:
    """Depth-first branch and bound over pods in decreasing order.

    Symmetry breaking: nodes that are interchangeable right now (same classes, same remaining)
    are tried once; identical consecutive pods take non-decreasing node indices.
    """
    search = _Search(packing, deadline)
    try:
        found = search.place(0, 0)
    except _OutOfTime:
        return SearchOutcome(None, False, search.states)
    return SearchOutcome(search.assignment if found else None, True, search.states)


class _Search:
    def __init__(self, packing: Packing, deadline: float) -> None:
        self.p, self.deadline, self.states = packing, deadline, 0
        self.order = packing.decreasing_order()
        self.remaining = packing.capacity.copy()
        self.assignment: Assignment = [-1] * len(packing.demand)
        # Node "type": which classes accept it; equal types with equal remaining are twins.
        _, self.node_type = np.unique(packing.masks.T, axis=0, return_inverse=True)
        self.node_type = self.node_type.reshape(-1)
        self.union = packing.masks.any(axis=0)
        # Demand still to place from step i on, for the aggregate bound.
        tail = packing.demand[self.order][::-1].cumsum(axis=0)[::-1]
        self.tail = np.vstack([tail, np.zeros((1, packing.demand.shape[1]), dtype=np.int64)])

    def _same_as_previous(self, step: int) -> bool:
        if step == 0:
            return False
        pod, prev = self.order[step], self.order[step - 1]
        same_class = self.p.pod_class[pod] == self.p.pod_class[prev]
        return bool(same_class and (self.p.demand[pod] == self.p.demand[prev]).all())

    def _branches(self, step: int, floor: int) -> list[int]:
        pod = self.order[step]
        ok = self.p.candidates(pod, self.remaining)
        ok[:floor] = False
        idx = np.flatnonzero(ok)
        if len(idx) > 1:
            keys = np.column_stack([self.node_type[idx], self.remaining[idx]])
            _, first = np.unique(keys, axis=0, return_index=True)
            idx = idx[np.sort(first)]
        # Tightest node first: finds fits sooner, like best-fit.
        slack = (self.remaining[idx] - self.p.demand[pod]).sum(axis=1)
        return [int(i) for i in idx[np.argsort(slack, kind="stable")]]

    def place(self, step: int, floor: int) -> bool:
        if step == len(self.order):
            return True
        self.states += 1
        if self.states % 64 == 0 and time.perf_counter() > self.deadline:
            raise _OutOfTime
        if (self.tail[step] > self.remaining[self.union].sum(axis=0)).any():
            return False
        pod = self.order[step]
        for node in self._branches(step, floor):
            self.remaining[node] -= self.p.demand[pod]
            self.assignment[pod] = node
            next_floor = (
                node if step + 1 < len(self.order) and self._same_as_previous(step + 1) else 0
            )
            if self.place(step + 1, next_floor):
                return True
            self.remaining[node] += self.p.demand[pod]
            self.assignment[pod] = -1
        return False
