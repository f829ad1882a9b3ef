"""Node resources as numpy matrices (nodes x resources), kept in step with NodeInfo.

Fit and scoring for one task are a handful of vector operations over all nodes instead of a
Python loop, which is what makes thousands of pods per second possible.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from scheduler.api.node_info import NodeInfo
from scheduler.api.quantity import CPU, MEMORY, PODS
from scheduler.api.resource import Resource


class NodeMatrix:
    def __init__(self, nodes: Sequence[NodeInfo], extra_dims: set[str]) -> None:
        names = {CPU, MEMORY, PODS} | extra_dims
        for node in nodes:
            names |= node.allocatable.names()
        self.dims = sorted(names)
        self.dim_index = {d: i for i, d in enumerate(self.dims)}
        self.nodes = list(nodes)
        for i, node in enumerate(self.nodes):
            node.index = i
        self.allocatable = self._matrix(n.allocatable for n in self.nodes)
        self.idle = self._matrix(n.idle for n in self.nodes)
        self.used = self._matrix(n.used for n in self.nodes)
        self.releasing = self._matrix(n.releasing for n in self.nodes)
        self.pipelined = self._matrix(n.pipelined for n in self.nodes)
        self.future = self.idle + self.releasing - self.pipelined
        # While no node holds a pipelined task, future idle >= idle everywhere, and a fit
        # check on idle alone is exact (the common case, and the fast one).
        self.any_pipelined = bool(self.pipelined.any())
        self.ready = np.array([n.ready for n in self.nodes], dtype=bool)
        # Avoid division by zero in scores: a node without a resource scores 0 on it.
        self.safe_allocatable = np.where(self.allocatable > 0, self.allocatable, 1.0)
        self._vectors: dict[tuple, np.ndarray] = {}

    def _matrix(self, resources: Iterable[Resource]) -> np.ndarray:
        # Column-major: fit and score read a few resource columns across every node.
        m = np.zeros((len(self.nodes), len(self.dims)), dtype=np.float64, order="F")
        for i, res in enumerate(resources):
            for k, v in res.values.items():
                m[i, self.dim_index[k]] = v
        return m

    def vector(self, res: Resource) -> np.ndarray:
        key = tuple(sorted(res.values.items()))
        vec = self._vectors.get(key)
        if vec is None:
            vec = np.zeros(len(self.dims), dtype=np.float64)
            for k, v in res.values.items():
                if k in self.dim_index:
                    vec[self.dim_index[k]] = v
                else:
                    vec = vec.copy()  # a resource no node has: fits nowhere
                    vec[:] = np.inf
                    break
            self._vectors[key] = vec
        return vec

    def fits(self, vec: np.ndarray, future: bool) -> np.ndarray:
        """Bool per node: ``vec`` ≤ idle (or future idle), on the dimensions vec requests."""
        dims = np.flatnonzero(vec)
        avail = self.future if future else self.idle
        return np.all(avail[:, dims] >= vec[dims] - 0.1, axis=1)

    def sync(self, node: NodeInfo) -> None:
        """Copy one NodeInfo's figures into its row, after the session changed the node."""
        row, index = node.index, self.dim_index
        for matrix, res in (
            (self.idle, node.idle),
            (self.used, node.used),
            (self.releasing, node.releasing),
            (self.pipelined, node.pipelined),
        ):
            matrix[row] = 0.0
            for k, v in res.values.items():
                matrix[row, index[k]] = v
        self.future[row] = self.idle[row] + self.releasing[row] - self.pipelined[row]
        if not node.pipelined.is_empty():
            self.any_pipelined = True
