"""Gate-controlled scheduling costs the scheduler nothing (a goal of Volcano's
gate-controlled scheduling design): one cycle over
50,000 pending pods in 100 queues, with the queue-allocation gate and without.

1,000 nodes (32 CPU, 128Gi, 110 pods). 100 queues of capability 110 CPU, each already running
100 one-CPU pods, each with 500 pending one-CPU pods: per cycle 10 pods per queue pass the
queue check (with gates: gate removal queued, then bound) and 490 wait for their queue (with
gates: stay gated, untouched; without: marked Unschedulable, as Volcano does). Each variant is
timed over fresh caches; the figure is the median of the runs. Target: ratio on/off <= 1.10.
"""

from __future__ import annotations

import statistics
import time

from bench import scheduler_config
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.cache import SchedulerCache
from scheduler.loop import run_cycle
from tests.fakes import RecordingClusterClient

NODES, QUEUES, RUNNING_PER_QUEUE, PENDING_PER_QUEUE = 1_000, 100, 100, 500
RUNS = 3


def _node(i: int) -> dict:
    return {
        "metadata": {"name": f"node-{i:04d}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
    }


def _pod(q: int, i: int, *, node: str | None, gated: bool) -> dict:
    annotations = {"scheduling.volcano.sh/queue-name": f"queue-{q:03d}"}
    spec: dict = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }
    if node:
        spec["nodeName"] = node
    elif gated:
        annotations[QUEUE_ALLOCATION_GATE] = "true"
        spec["schedulingGates"] = [{"name": QUEUE_ALLOCATION_GATE}]
    return {
        "metadata": {"name": f"q{q:03d}-pod-{i:04d}", "namespace": "default",
                     "uid": f"uid-{q:03d}-{i:04d}", "annotations": annotations,
                     "creationTimestamp": f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }  # fmt: skip


def build_cache(gated: bool) -> SchedulerCache:
    cache = SchedulerCache()
    for q in range(QUEUES):
        cache.add_queue(
            {"metadata": {"name": f"queue-{q:03d}"},
             "spec": {"weight": 1, "capability": {"cpu": "110", "memory": "1Ti"}}}
        )  # fmt: skip
    for i in range(NODES):
        cache.add_node(_node(i))
    n = 0
    for q in range(QUEUES):
        for i in range(RUNNING_PER_QUEUE):
            cache.add_pod(_pod(q, i, node=f"node-{n % NODES:04d}", gated=False))
            n += 1
        for i in range(RUNNING_PER_QUEUE, RUNNING_PER_QUEUE + PENDING_PER_QUEUE):
            cache.add_pod(_pod(q, i, node=None, gated=gated))
    return cache


def timed_cycle(gated: bool) -> tuple[float, dict]:
    cache = build_cache(gated)
    client, queued = RecordingClusterClient(), []
    remover = (lambda ns, name, uid, since: queued.append(name)) if gated else None
    report = run_cycle(cache, scheduler_config(), client, now=0.0, gate_remover=remover)
    figures = {
        "bound": len(client.of("bind")),
        "gate removals queued": len(queued),
        "Unschedulable patches": len(client.of("patch_pod_condition")),
    }
    return report.duration_s, figures


def main() -> None:
    pending = QUEUES * PENDING_PER_QUEUE
    print(f"{NODES} nodes, {QUEUES} queues, {QUEUES * RUNNING_PER_QUEUE} running and "
          f"{pending} pending pods; median of {RUNS} cycles each")  # fmt: skip
    medians = {}
    for gated in (False, True):
        runs = [timed_cycle(gated) for _ in range(RUNS)]
        medians[gated] = statistics.median(d for d, _ in runs)
        label = "gates on " if gated else "gates off"
        print(f"{label}: cycle {medians[gated]:.2f} s ({pending / medians[gated]:,.0f} pending "
              f"pods/s); {runs[0][1]}")  # fmt: skip
    ratio = medians[True] / medians[False]
    verdict = "within" if ratio <= 1.10 else "ABOVE"
    print(f"time ratio gates on / off: {ratio:.3f} ({verdict} the 1.10 target)")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.1f} s")
