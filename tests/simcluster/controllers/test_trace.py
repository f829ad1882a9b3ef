"""Replay of the Alibaba openb trace (alibaba/clusterdata, cluster-trace-gpu-v2023)."""

from __future__ import annotations

import csv
import zlib

from scheduler.api.quantity import parse_resource_list
from simcluster.catalog import resolve
from simcluster.trace import POD_CSV, load_openb, queue_for


def first_rows(n: int) -> list[dict]:
    with open(POD_CSV, newline="") as handle:
        return [row for _, row in zip(range(n), csv.DictReader(handle), strict=False)]


def test_first_200_pods_replay_with_their_shapes_times_and_queues():
    scenario = load_openb(max_pods=200, max_nodes=40, queues=4, time_compression=10)
    rows = first_rows(200)
    pods = [p for a in scenario.arrivals for p in a.pods]
    assert len(pods) == 200 and len(scenario.nodes) == 40
    by_name = {p["metadata"]["name"]: p for p in pods}
    for row in rows:
        pod = by_name[row["name"]]
        requests = parse_resource_list(
            pod["spec"]["containers"][0]["resources"]["requests"], obj="pod", field="requests"
        )
        assert requests["cpu"] == int(row["cpu_milli"])
        assert requests["memory"] == int(row["memory_mib"]) * 2**20
        assert requests.get("nvidia.com/gpu", 0) == int(row["num_gpu"]) * int(row["gpu_milli"])
        notes = pod["metadata"]["annotations"]
        lifetime = (int(row["deletion_time"]) - int(row["creation_time"])) / 10
        assert float(notes["sim.sluice.io/duration"]) == lifetime
        expected_queue = f"openb-q{zlib.crc32(row['name'].encode()) % 4}"
        assert (
            notes["scheduling.volcano.sh/queue-name"] == expected_queue == queue_for(row["name"], 4)
        )
    assert scenario.arrivals[0].at == 0
    assert (
        scenario.arrivals[1].at
        == (int(rows[1]["creation_time"]) - int(rows[0]["creation_time"])) / 10
    )
    assert {q["metadata"]["name"] for q in scenario.queues} == {f"openb-q{i}" for i in range(4)}


def test_sampled_nodes_keep_gpu_models_and_gpu_spec_becomes_affinity():
    scenario = load_openb(max_pods=200, max_nodes=40)
    models = {n["metadata"]["labels"].get("sim.sluice.io/gpu-model") for n in scenario.nodes}
    assert models - {None}, "an even stride should include GPU nodes"
    assert any(int(n["status"]["capacity"].get("nvidia.com/gpu", 0)) for n in scenario.nodes)
    constrained = [p for a in scenario.arrivals for p in a.pods if p["spec"].get("affinity")]
    for pod in constrained:
        term = pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert (
            term["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "sim.sluice.io/gpu-model"
        )


def test_gpu_shares_can_be_rounded_up_and_pods_opted_in():
    scenario = load_openb(max_pods=5, round_gpu_share=True, gate=True)
    gpus = [
        p["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu")
        for a in scenario.arrivals
        for p in a.pods
    ]
    assert all(g is None or g.isdigit() for g in gpus)
    notes = scenario.arrivals[0].pods[0]["metadata"]["annotations"]
    assert notes["scheduling.volcano.sh/queue-allocation-gate"] == "true"


def test_the_builtin_openb_window_is_dense_enough_to_watch():
    scenario = resolve("openb-window")
    assert scenario.pod_count() == 200
    assert scenario.arrivals[0].pods[0]["metadata"]["name"] == "openb-pod-7800"
    assert scenario.arrivals[-1].at < 20 * 60  # minutes, not months, of simulated time


def test_the_builtin_openb_scenario_is_the_whole_trace_submitted_at_the_start():
    scenario = resolve("openb")
    assert len(scenario.nodes) == 1523 and scenario.pod_count() == 8152
    assert [a.at for a in scenario.arrivals] == [0.0]
    pods = scenario.arrivals[0].pods
    assert pods[0]["metadata"]["name"] == "openb-pod-0000"
    assert pods[-1]["metadata"]["name"] == "openb-pod-8151"
    with open(POD_CSV, newline="") as handle:
        last = list(csv.DictReader(handle))[-1]
    # Run times are the trace's own (deletion - creation, not compressed).
    lifetime = int(last["deletion_time"]) - int(last["creation_time"])
    assert float(pods[-1]["metadata"]["annotations"]["sim.sluice.io/duration"]) == lifetime
