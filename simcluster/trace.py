"""Replay the Alibaba "openb" GPU trace as a scenario.

Data: ``simcluster/traces/alibaba-gpu-v2023/`` — from the public ``alibaba/clusterdata``
repository, ``cluster-trace-gpu-v2023/csv/`` (Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023).
Cite it wherever results from it are shown.

Mapping, row by row:

* pod ``cpu_milli`` -> ``cpu: <n>m``; ``memory_mib`` -> ``memory: <n>Mi``;
* ``num_gpu`` x ``gpu_milli`` -> ``nvidia.com/gpu``: whole GPUs as an integer, a shared
  fraction (``gpu_milli`` < 1000) as milli-units (``460m``), as Sluice's resource model counts
  GPU sharing; ``round_gpu_share=True`` rounds a fraction up to one GPU, as a stock
  kube-apiserver (which refuses fractional extended resources) would need;
* ``gpu_spec`` (``G2|G3``) -> required node affinity on label ``sim.sluice.io/gpu-model``;
* rows ``skip_pods`` .. ``skip_pods + max_pods`` of the pod list are replayed;
* arrival = ``creation_time`` - the first selected pod's ``creation_time``; run time =
  ``deletion_time - creation_time``; both divided by ``time_compression``. ``backlog=True``
  submits every pod at the start instead (the trace's own order; run times kept), as the
  trace's authors replay it in their simulator: the cluster is filled from a backlog;
* queues: the trace has none, so **each pod's queue is derived by hashing its name**:
  ``openb-q{crc32(name) % queues}`` (CRC-32, stable across runs and Python versions);
* nodes: every k-th row of the node list, k chosen so ``max_nodes`` remain; ``sn`` -> name,
  ``cpu_milli``/``memory_mib``/``gpu`` -> capacity, ``model`` -> the
  ``sim.sluice.io/gpu-model`` label.
"""

from __future__ import annotations

import csv
import zlib
from itertools import islice
from pathlib import Path

from scheduler.api.labels import DURATION_ANNOTATION, QUEUE_NAME_ANNOTATION
from simcluster.scenario import Arrival, Scenario
from simcluster.scenario_objects import GATE_ANNOTATION, make_node, make_pod

TRACE_DIR = Path(__file__).parent / "traces" / "alibaba-gpu-v2023"
POD_CSV = TRACE_DIR / "openb_pod_list_default.csv"
NODE_CSV = TRACE_DIR / "openb_node_list_all_node.csv"
GPU = "nvidia.com/gpu"
GPU_MODEL_LABEL = "sim.sluice.io/gpu-model"
NAMESPACE = "openb"


def queue_for(pod_name: str, queues: int) -> str:
    return f"openb-q{zlib.crc32(pod_name.encode()) % queues}"


# The trace starts sparse (its first 200 pods span 116 days); rows 7800-8000 are its densest
# 200-pod stretch (about 5 hours), which at 20x plays out in about 16 minutes.
DEMO_WINDOW = {"skip_pods": 7800, "max_pods": 200, "time_compression": 20.0}
# The whole trace: its 1,523 nodes and 8,152 pods, every pod submitted at the start.
WHOLE_TRACE: dict = {"max_pods": None, "max_nodes": None, "backlog": True}


def load_openb(
    pod_csv: str | Path = POD_CSV,
    node_csv: str | Path = NODE_CSV,
    *,
    skip_pods: int = 0,
    max_pods: int | None = 200,
    max_nodes: int | None = 50,
    queues: int = 4,
    time_compression: float = 1.0,
    gate: bool = False,
    round_gpu_share: bool = False,
    backlog: bool = False,
) -> Scenario:
    if queues < 1 or time_compression <= 0:
        raise ValueError("queues must be >= 1 and time_compression > 0")
    scenario = Scenario(
        name="openb",
        description="Alibaba openb GPU trace (alibaba/clusterdata cluster-trace-gpu-v2023)",
        namespaces=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}],
        queues=[_queue(f"openb-q{i}") for i in range(queues)],
    )
    with open(node_csv, newline="") as handle:
        node_rows = list(csv.DictReader(handle))
    # An even stride keeps the trace's mix of CPU-only and GPU models in a small sample.
    stride = max(1, -(-len(node_rows) // max_nodes)) if max_nodes else 1
    scenario.nodes = [_node(row) for row in node_rows[::stride][:max_nodes]]
    with open(pod_csv, newline="") as handle:
        stop = None if max_pods is None else skip_pods + max_pods
        rows = list(islice(csv.DictReader(handle), skip_pods, stop))
    pods = [_pod(row, queues, time_compression, gate, round_gpu_share) for row in rows]
    if backlog:
        scenario.arrivals.append(Arrival(0.0, [], pods))
        return scenario
    first = min((int(r["creation_time"]) for r in rows), default=0)
    for row, pod in zip(rows, pods, strict=True):
        at = (int(row["creation_time"]) - first) / time_compression
        scenario.arrivals.append(Arrival(at, [], [pod]))
    scenario.arrivals.sort(key=lambda a: a.at)
    return scenario


def _queue(name: str) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }


def _node(row: dict[str, str]) -> dict:
    capacity = {
        "cpu": f"{int(row['cpu_milli'])}m",
        "memory": f"{int(row['memory_mib'])}Mi",
        "pods": "110",
    }
    labels = {}
    if int(row["gpu"] or 0):
        capacity[GPU] = str(int(row["gpu"]))
    if row.get("model"):
        labels[GPU_MODEL_LABEL] = row["model"]
    return make_node(row["sn"], capacity, labels)


def _gpu_request(row: dict[str, str], round_share: bool) -> str | None:
    count, milli = int(row["num_gpu"] or 0), int(row["gpu_milli"] or 0)
    if count == 0 or milli == 0:
        return None
    total = count * milli
    if total % 1000 == 0:
        return str(total // 1000)
    return str(-(-total // 1000)) if round_share else f"{total}m"


def _pod(
    row: dict[str, str], queues: int, compression: float, gate: bool, round_share: bool
) -> dict:
    name = row["name"]
    requests = {"cpu": f"{int(row['cpu_milli'])}m", "memory": f"{int(row['memory_mib'])}Mi"}
    gpu = _gpu_request(row, round_share)
    if gpu:
        requests[GPU] = gpu
    runtime = max(0, int(row["deletion_time"]) - int(row["creation_time"])) / compression
    annotations = {
        QUEUE_NAME_ANNOTATION: queue_for(name, queues),
        DURATION_ANNOTATION: str(round(runtime, 3)),
        "sim.sluice.io/trace-qos": row.get("qos", ""),
    }
    if gate:
        annotations[GATE_ANNOTATION] = "true"
    extra: dict = {}
    models = [m for m in (row.get("gpu_spec") or "").split("|") if m]
    if models:
        term = {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}
        extra["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    limits = dict(requests) if row.get("qos") == "Guaranteed" else None
    return make_pod(
        name.lower(),
        NAMESPACE,
        requests=requests,
        limits=limits,
        annotations=annotations,
        extra_spec=extra,
    )
