"""Time the node-capacity admission evaluator on the real Alibaba GPU cluster trace.

Data: Alibaba clusterdata ``cluster-trace-gpu-v2023`` ("openb"), Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC 2023 — 1,523 nodes and 8,152 pods (see simcluster/traces/README.md).

Scenario (the trace has no gangs or queues, so this is derived, and printed):

* every pod is made Guaranteed: limits = the trace's requests (cpu_milli, memory_mib and
  num_gpu x gpu_milli as ``nvidia.com/gpu`` milli-units, so a 0.5 GPU share is 500m; a node's
  GPUs are one pool, the evaluator does not pack shares onto single devices);
* pre-load: trace pods drawn with replacement (seeded) are bound first-fit to the nodes in a
  seeded random order until a share of the GPUs (FILLS) are allocated or 1,000 draws fit
  nowhere, as the FGD paper fills its simulated cluster from the trace;
* 1,000 pending workloads: seeded draws from the trace pods; GANG_SHARE of them are
  gangs of 2-8 identical replicas of the drawn pod (like a job's workers), the rest single pods.
"""

from __future__ import annotations

import csv
import random
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from scheduler.admission.evaluator import evaluate_workload
from scheduler.admission.monitor import build_snapshot

TRACE = Path(__file__).resolve().parent.parent / "simcluster/traces/alibaba-gpu-v2023"
SOURCE = (
    "Alibaba clusterdata cluster-trace-gpu-v2023 (openb), Weng et al., "
    '"Beware of Fragmentation", USENIX ATC 2023'
)
SEED = 2023
FILLS = (0.95, 1.0)  # a busy cluster, then one filled until draws stop fitting
WORKLOADS = 1000
GANG_SHARE = 0.25
BUDGET_S = 0.05


def load_nodes() -> list[dict]:
    with open(TRACE / "openb_node_list_all_node.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    nodes = []
    for row in rows:
        allocatable = {"cpu": f"{row['cpu_milli']}m", "memory": f"{row['memory_mib']}Mi"}
        allocatable |= {"pods": "110", "nvidia.com/gpu": row["gpu"]}
        labels = {"kubernetes.io/hostname": row["sn"]}
        if row["model"]:
            labels["alibabacloud.com/gpu-card-model"] = row["model"]
        meta = {"name": row["sn"], "uid": f"uid-{row['sn']}", "labels": labels}
        nodes.append({"metadata": meta, "status": {"allocatable": allocatable}})
    return nodes


def load_pod_rows() -> list[dict]:
    with open(TRACE / "openb_pod_list_default.csv", newline="") as f:
        return sorted(csv.DictReader(f), key=lambda r: int(r["creation_time"]))


def demand_of(row: dict) -> tuple[int, int, int]:
    """(cpu milli, memory MiB, gpu milli) of a trace pod."""
    gpu = int(row["num_gpu"]) * int(row["gpu_milli"])
    return int(row["cpu_milli"]), int(row["memory_mib"]), gpu


def guaranteed_pod(row: dict, name: str, node_name: str | None = None) -> dict:
    cpu, mem, gpu = demand_of(row)
    limits = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
    if gpu:
        limits["nvidia.com/gpu"] = f"{gpu}m"
    spec: dict = {"containers": [{"name": "main", "resources": {"limits": limits}}]}
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": "trace", "uid": f"uid-{name}"}
    return {
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def node_free(nodes: list[dict], order: list[int]) -> np.ndarray:
    """[nodes, (cpu milli, memory MiB, gpu milli)] in the given node order."""
    rows = []
    for i in order:
        alloc = nodes[i]["status"]["allocatable"]
        gpu = int(alloc["nvidia.com/gpu"]) * 1000
        rows.append(
            [int(alloc["cpu"].removesuffix("m")), int(alloc["memory"].removesuffix("Mi")), gpu]
        )
    return np.array(rows, dtype=np.int64)


def preload(
    nodes: list[dict], rows: list[dict], rng: random.Random, fill: float
) -> tuple[list[dict], int]:
    """Draw trace pods (with replacement) and bind each first-fit to nodes in a seeded random
    order, until ``fill`` of the GPUs are allocated or 1,000 draws fit nowhere; returns (pods, misses)."""
    order = list(range(len(nodes)))
    rng.shuffle(order)
    free = node_free(nodes, order)
    target = free[:, 2].sum() * (1 - fill)
    bound, dropped = [], 0
    while free[:, 2].sum() > target and dropped < 1000:
        row = rng.choice(rows)
        need = np.array(demand_of(row), dtype=np.int64)
        fits = (free >= need).all(axis=1)
        if not fits.any():
            dropped += 1
            continue
        slot = int(np.argmax(fits))
        free[slot] -= need
        name = f"{row['name']}-{len(bound)}"
        bound.append(guaranteed_pod(row, name, nodes[order[slot]]["metadata"]["name"]))
    return bound, dropped


def draw_workloads(rows: list[dict], rng: random.Random) -> list[list[dict]]:
    workloads = []
    for w in range(WORKLOADS):
        row = rng.choice(rows)
        size = rng.randint(2, 8) if rng.random() < GANG_SHARE else 1
        workloads.append([guaranteed_pod(row, f"w{w:04d}-{i}") for i in range(size)])
    return workloads


def free_share(snapshot, resource: str, total: float) -> float:
    return sum(max(n.remaining.get(resource, 0), 0) for n in snapshot.nodes) / total


def main() -> None:
    nodes, rows = load_nodes(), load_pod_rows()
    total_cpu = int(node_free(nodes, list(range(len(nodes))))[:, 0].sum())
    total_gpu = int(node_free(nodes, list(range(len(nodes))))[:, 2].sum())
    print(f"data: {SOURCE}")
    print(f"nodes: {len(nodes)} ({total_cpu / 1000:,.0f} CPU, {total_gpu // 1000:,} GPU)")
    for fill in FILLS:
        print(f"-- scenario: pre-load until {fill:.0%} of GPUs are allocated")
        rng = random.Random(SEED)
        bound, dropped = preload(nodes, rows, rng, fill)
        started = time.perf_counter()
        snapshot = build_snapshot(nodes, bound, datetime.now(UTC))
        build_s = time.perf_counter() - started
        print(
            f"pre-loaded: {len(bound)} Guaranteed pods drawn from the trace (seed {SEED}), bound "
            f"first-fit to nodes in seeded random order ({dropped} draws fit nowhere, skipped)"
        )
        print(
            f"free after pre-load: {free_share(snapshot, 'cpu', total_cpu):.1%} CPU, "
            f"{free_share(snapshot, 'nvidia.com/gpu', total_gpu):.1%} GPU; "
            f"snapshot built in {build_s:.2f} s"
        )
        workloads = draw_workloads(rows, rng)
        gangs = sum(1 for w in workloads if len(w) > 1)
        print(
            f"workloads: {len(workloads)} drawn (seed {SEED}) from the {len(rows)} trace pods: "
            f"{len(workloads) - gangs} single-pod, {gangs} gangs of 2-8 identical pods "
            f"({sum(len(w) for w in workloads)} pods); limits = requests (Guaranteed)"
        )
        run(workloads, snapshot)


def run(workloads: list[list[dict]], snapshot) -> None:
    latencies, verdicts, methods = [], Counter(), Counter()
    started = time.perf_counter()
    for pods in workloads:
        t0 = time.perf_counter()
        result = evaluate_workload(pods, snapshot, budget_s=BUDGET_S)
        latencies.append(time.perf_counter() - t0)
        verdicts[result.verdict.value] += 1
        methods[result.method] += 1
    elapsed = time.perf_counter() - started
    ms = np.array(latencies) * 1000
    print(
        f"evaluated {len(workloads)} workloads in {elapsed:.2f} s: "
        f"{len(workloads) / elapsed:,.0f} workloads/s (p50 {np.percentile(ms, 50):.2f} ms, "
        f"p99 {np.percentile(ms, 99):.2f} ms, max {ms.max():.1f} ms; search budget {BUDGET_S * 1000:g} ms)"
    )
    print("verdicts: " + ", ".join(f"{v}={verdicts[v]}" for v in ("fits", "cannot_fit", "unknown")))
    print("decided by: " + ", ".join(f"{m}={c}" for m, c in sorted(methods.items())))


if __name__ == "__main__":
    main()
