"""binpack: Volcano's binpack plugin — prefer nodes that are already full.

For each resource the task requests and that has a weight, the node scores
``(request + used) * weight / allocatable``; the sum is divided by the weights used and scaled
to 0..100 times ``binpack.weight``. A node where some requested resource would overflow
scores 0, as in Volcano's BinPackingScore. Arguments as Volcano's: ``binpack.weight``,
``binpack.cpu``, ``binpack.memory``, ``binpack.resources`` (a comma-separated list of extended
resources) and ``binpack.resources.<name>`` for each; a negative weight counts as 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.quantity import CPU, MEMORY
from scheduler.api.task_info import TaskInfo
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session

MAX_NODE_SCORE = 100  # kube-scheduler's framework.MaxNodeScore
RESOURCES_PREFIX = "binpack.resources."


class BinpackPlugin(Plugin):
    name = "binpack"
    ARGUMENTS = {"binpack.weight": 1, "binpack.cpu": 1, "binpack.memory": 1}

    @classmethod
    def accepts(cls, key: str) -> bool:
        """Also ``binpack.resources`` and a weight per listed resource,
        ``binpack.resources.<name>``, as Volcano's."""
        return (
            super().accepts(key)
            or key == "binpack.resources"
            or key.startswith("binpack.resources.")
        )

    def check(self) -> None:
        super().check()
        self.weights()

    def weights(self) -> dict[str, int]:
        """Resource -> weight, as Volcano's calculateWeight."""
        out: dict[str, int] = {}
        listed = self.arguments.get("binpack.resources", "")
        if not isinstance(listed, str):
            raise ValueError(
                f"plugin binpack: argument binpack.resources: expected a comma-separated "
                f"string of resource names, got {listed!r}"
            )
        for name in (n.strip() for n in listed.split(",")):
            if name:
                out[name] = _weight(self.argument(RESOURCES_PREFIX + name, 1))
        out[CPU] = _weight(self.argument("binpack.cpu"))
        out[MEMORY] = _weight(self.argument("binpack.memory"))
        return out

    def on_session_open(self, ssn: Session) -> None:
        weight = self.argument("binpack.weight")
        if not weight:
            return
        matrix = ssn.matrix
        weights = self.weights()
        columns = {r: matrix.dim_index[r] for r in weights if r in matrix.dim_index}

        def score(task: TaskInfo, vec: np.ndarray) -> np.ndarray:
            total = np.zeros(len(matrix.nodes))
            weight_sum = 0
            fits = np.ones(len(matrix.nodes), dtype=bool)
            for resource, col in columns.items():
                request = vec[col]
                if request <= 0:
                    continue
                alloc = matrix.allocatable[:, col]
                used_after = alloc - matrix.idle[:, col] + request
                fits &= (alloc == 0) | (used_after <= alloc + 0.1)
                total += np.where(
                    alloc > 0, used_after * weights[resource] / np.where(alloc > 0, alloc, 1), 0
                )
                weight_sum += weights[resource]
            if weight_sum:
                total /= weight_sum
            total *= MAX_NODE_SCORE * weight
            return np.where(fits, total, 0.0)

        ssn.add_node_order_fn(self, score)


def _weight(value: float) -> int:
    return 1 if value < 0 else int(value)
