"""nodeorder: kube-scheduler's LeastAllocated as a vectorised node score, higher is better."""

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
    ARGUMENTS = {"leastrequested.weight": 1}
    VOLCANO_ONLY = frozenset(
        {"nodeaffinity.weight", "podaffinity.weight", "balancedresource.weight",
         "mostrequested.weight", "tainttoleration.weight", "imagelocality.weight",
         "podtopologyspread.weight", "selectorspread.weight", "volumebinding.weight"}
    )  # fmt: skip

    def on_session_open(self, ssn: Session) -> None:
        weight = self.argument("leastrequested.weight")
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

        ssn.add_node_order_fn(self, score)
