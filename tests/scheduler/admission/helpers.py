"""Capacity snapshots for the admission tests, of nodes and pods from tests.builders.

The admission tests' pods live in namespace ``ml`` and are Guaranteed (limits = requests) unless
a test says otherwise; their nodes have 16Gi of memory.
"""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler.admission.monitor import CapacitySnapshot, build_snapshot
from tests.builders import node, pod

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def story1_snapshot() -> CapacitySnapshot:
    """Kueue KEP-3211 Story 1: 4 nodes x 4 CPU, each running a 2-CPU Guaranteed job."""
    nodes = [node(f"node-{i}", memory="16Gi") for i in range(4)]
    running = [
        pod(f"job-{i}", "2", "2Gi", namespace="ml", guaranteed=True, node_name=f"node-{i}")
        for i in range(4)
    ]
    return build_snapshot(nodes, running, T0)


def snapshot_of(nodes: list[dict], pods: list[dict] | None = None) -> CapacitySnapshot:
    return build_snapshot(nodes, pods or [], T0)
