"""kube-scheduler's scheduler_perf "SchedulingBasic" shape, in process, through the engine.

5,000 nodes (4 CPU, 32Gi, 110 pods), 1,000 running pods, 10,000 pending pods (100m, 500Mi),
one queue. Prints pods/s for the allocate action and for a whole cycle, and compares with a
minimal numpy first-fit over the same data (the practical floor for this approach).
"""

from __future__ import annotations

import time

import numpy as np

from bench import scheduler_config
from scheduler.cache import SchedulerCache
from scheduler.loop import run_cycle
from tests.fakes import RecordingClusterClient

NODES, RUNNING, PENDING = 5_000, 1_000, 10_000
CPU_M, MEM, PODS = 4_000, 32 * 2**30, 110
POD_CPU_M, POD_MEM = 100, 500 * 2**20

CONFIG = scheduler_config("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")


def _node(i: int) -> dict:
    return {
        "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def _pod(i: int, node: str | None) -> dict:
    spec = {
        "schedulerName": "volcano",
        "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "uid": f"uid-{i:05d}",
                     "creationTimestamp": f"2024-01-01T00:00:{i % 60:02d}Z"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }  # fmt: skip


def build_cache() -> SchedulerCache:
    cache = SchedulerCache()
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}})
    for i in range(NODES):
        cache.add_node(_node(i))
    for i in range(RUNNING):
        cache.add_pod(_pod(i, f"node-{i % NODES:05d}"))
    for i in range(RUNNING, RUNNING + PENDING):
        cache.add_pod(_pod(i, None))
    return cache


def numpy_first_fit() -> float:
    """The floor: per pod, one vectorised fit test and first-fit pick, no bookkeeping."""
    idle = np.tile(np.array([CPU_M, MEM, PODS], dtype=np.float64), (NODES, 1))
    idle[:RUNNING] -= [POD_CPU_M, POD_MEM, 1]
    req = np.array([POD_CPU_M, POD_MEM, 1], dtype=np.float64)
    started = time.perf_counter()
    for _ in range(PENDING):
        row = int(np.argmax((idle >= req).all(axis=1)))
        idle[row] -= req
    return time.perf_counter() - started


def main() -> None:
    t0 = time.perf_counter()
    cache = build_cache()
    print(f"built cache: {NODES} nodes, {RUNNING} running, {PENDING} pending pods "
          f"in {time.perf_counter() - t0:.2f} s")  # fmt: skip
    client = RecordingClusterClient()
    report = run_cycle(cache, CONFIG, client, now=0.0)
    bound = len(client.of("bind"))
    allocate_s = report.action_durations_s["allocate"]
    print(f"bound {bound}/{PENDING} pods; cycle {report.duration_s:.2f} s "
          f"(allocate {allocate_s:.2f} s)")  # fmt: skip
    print(f"allocate action: {bound / allocate_s:,.0f} pods/s")
    print(f"whole cycle:     {bound / report.duration_s:,.0f} pods/s")
    floor = numpy_first_fit()
    print(f"numpy first-fit floor: {PENDING / floor:,.0f} pods/s ({floor:.2f} s)")
    print(f"allocate time / floor time: {allocate_s / floor:.1f}x; "
          f"cycle time / floor time: {report.duration_s / floor:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
