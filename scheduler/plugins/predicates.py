"""predicates: which nodes a task may use, as a boolean mask over the session's nodes.

The node-object filters (unschedulable, nodeName, taints, node affinity and nodeSelector) come
from ``scheduler.api.node_matching`` and are computed once per distinct pod signature per
session. Resource fit and pod count are checked against the node matrix by the actions.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api import node_matching
from scheduler.api.quantity import PODS
from scheduler.api.task_info import TaskInfo
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.node_matrix import NodeMatrix
    from scheduler.framework.session import Session

TOO_MANY_PODS = "Too many pods"


class PredicatesPlugin(Plugin):
    name = "predicates"
    # Volcano's predicates switch kube-scheduler filters on and off; Sluice runs the ones it
    # has (node affinity and selector, taints, unschedulable, node name) always.
    VOLCANO_ONLY = frozenset(
        {"predicate.NodeAffinityEnable", "predicate.NodePortsEnable",
         "predicate.TaintTolerationEnable", "predicate.PodAffinityEnable",
         "predicate.NodeVolumeLimitsEnable", "predicate.VolumeZoneEnable",
         "predicate.PodTopologySpreadEnable", "predicate.VolumeBindingEnable",
         "predicate.DynamicResourceAllocationEnable", "predicate.CacheEnable",
         "predicate.GPUSharingEnable", "predicate.GPUNumberEnable",
         "predicate.ResourceStrategyFitEnable", "predicate.ProportionalEnable"}
    )  # fmt: skip

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._masks: dict[object, tuple[np.ndarray, list[str | None]]] = {}
        ssn.add_predicate_fn(self, self.mask, self.reasons)

    def _evaluate(self, task: TaskInfo) -> tuple[np.ndarray, list[str | None]]:
        cached = self._masks.get(task.signature)
        if cached is None:
            reasons = [self._node_reason(task, info.node) for info in self.ssn.node_list]
            mask = np.array([r is None for r in reasons], dtype=bool)
            cached = self._masks[task.signature] = (mask, reasons)
        return cached

    def _node_reason(self, task: TaskInfo, node: Any) -> str | None:
        sig = task.signature
        plain_pod = not (sig.node_selector or sig.required_terms is not None or sig.node_name)
        spec = node.get("spec") or {}
        if plain_pod and not spec.get("taints") and not spec.get("unschedulable"):
            return None  # nothing in the pod or the node can refuse: skip the full check
        ok, reason = node_matching.node_accepts(task.pod, node)
        return None if ok else reason

    def mask(self, task: TaskInfo) -> np.ndarray:
        return self._evaluate(task)[0]

    def reasons(self, task: TaskInfo, mask: np.ndarray) -> dict[str, int]:
        _, per_node = self._evaluate(task)
        return dict(Counter(r for r in per_node if r is not None))


def resource_reasons(matrix: NodeMatrix, vec: np.ndarray, mask: np.ndarray) -> dict[str, int]:
    """kube-scheduler's "Insufficient <resource>" counts over the nodes that passed ``mask``."""
    reasons: dict[str, int] = {}
    rows = matrix.future[mask]
    for col in np.flatnonzero(vec):
        short = int((rows[:, col] < vec[col] - 0.1).sum())
        if short:
            dim = matrix.dims[col]
            reasons[TOO_MANY_PODS if dim == PODS else f"Insufficient {dim}"] = short
    return reasons


def fit_error_message(total_nodes: int, reasons: dict[str, int]) -> str:
    """``0/3 nodes are unavailable: 2 Insufficient cpu, 1 node(s) had untolerated taint {…}.``"""
    parts = ", ".join(
        f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return f"0/{total_nodes} nodes are unavailable: {parts}."
