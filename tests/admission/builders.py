"""Small builders for node and pod dicts shaped like the Kubernetes API returns them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scheduler.admission.monitor import CapacitySnapshot, build_snapshot

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def node(
    name: str,
    cpu: str = "4",
    memory: str = "16Gi",
    *,
    gpu: str | None = None,
    labels: dict | None = None,
    taints: list | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu is not None:
        allocatable["nvidia.com/gpu"] = gpu
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(
    name: str,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    *,
    requests: dict | None = None,
    gpu: str | None = None,
    node_name: str | None = None,
    phase: str = "Pending",
    spec: dict | None = None,
) -> dict[str, Any]:
    """A one-container pod; ``cpu``/``memory`` are limits (requests default to them)."""
    limits = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)) if v}
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    body: dict[str, Any] = {
        "containers": [{"name": "main", "resources": resources}],
        **(spec or {}),
    }
    if node_name:
        body["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": body,
        "status": {"phase": "Running" if node_name else phase},
    }


def story1_snapshot() -> CapacitySnapshot:
    """Kueue KEP-3211 Story 1: 4 nodes x 4 CPU, each running a 2-CPU Guaranteed job."""
    nodes = [node(f"node-{i}") for i in range(4)]
    running = [pod(f"job-{i}", "2", "2Gi", node_name=f"node-{i}") for i in range(4)]
    return build_snapshot(nodes, running, T0)


def snapshot_of(nodes: list[dict], pods: list[dict] | None = None) -> CapacitySnapshot:
    return build_snapshot(nodes, pods or [], T0)
