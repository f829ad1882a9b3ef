"""nodeorder (least-allocated) and binpack: vectorised node scores, higher is better."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.quantity import CPU, MEMORY
from scheduler.api.task_info import TaskInfo
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class NodeOrderPlugin(Plugin):
    """kube-scheduler's LeastAllocated over CPU and memory, scaled 0–100, times the weight."""

    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        weight = self.argument("leastrequested.weight", 1)
        if not weight:
            return
        matrix = ssn.matrix
        cpu, mem = matrix.dim_index[CPU], matrix.dim_index[MEMORY]
        # Per-column 1-D arrays: cheaper than 2-D fancy indexing on every call.
        scale = 50.0 * weight  # 100 * weight / 2 resources
        inv_cpu = np.where(matrix.allocatable[:, cpu] > 0, 1 / matrix.safe_allocatable[:, cpu], 0)
        inv_mem = np.where(matrix.allocatable[:, mem] > 0, 1 / matrix.safe_allocatable[:, mem], 0)

        def score(task: TaskInfo, vec: np.ndarray) -> np.ndarray:
            # In-place ufuncs: np.clip's Python wrapper costs more than the arithmetic here.
            free_cpu = matrix.idle[:, cpu] - vec[cpu]
            free_cpu *= inv_cpu
            free_mem = matrix.idle[:, mem] - vec[mem]
            free_mem *= inv_mem
            for free in (free_cpu, free_mem):
                np.maximum(free, 0.0, out=free)
                np.minimum(free, 1.0, out=free)
            free_cpu += free_mem
            free_cpu *= scale
            return free_cpu

        ssn.node_score_fns.append(score)


class BinpackPlugin(Plugin):
    """Volcano's binpack: prefer nodes already full, per-resource weights."""

    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        weight = self.argument("binpack.weight", 1)
        matrix = ssn.matrix
        cols = [matrix.dim_index[CPU], matrix.dim_index[MEMORY]]
        weights = np.array([self.argument("binpack.cpu", 1), self.argument("binpack.memory", 1)])
        alloc = matrix.safe_allocatable[:, cols]
        total = weights.sum() or 1

        def score(task: TaskInfo, vec: np.ndarray) -> np.ndarray:
            used = matrix.allocatable[:, cols] - matrix.idle[:, cols] + vec[cols]
            ratio = np.clip(used / alloc, 0, 1)
            return (ratio * weights).sum(axis=1) / total * (100 * weight)

        ssn.node_score_fns.append(score)
