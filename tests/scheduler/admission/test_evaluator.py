"""The evaluator: fits / cannot_fit / unknown, with explanations and placements."""

from __future__ import annotations

import random

import pytest

from scheduler.admission.evaluator import Verdict, capacity_matrix, evaluate, evaluate_workload
from scheduler.admission.monitor import CapacitySnapshot
from scheduler.admission.packing import greedy
from tests.builders import node, pod
from tests.scheduler.admission.helpers import snapshot_of, story1_snapshot

GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
TOLERATE_GPU = {"tolerations": [{"key": "gpu", "operator": "Equal", "value": "true"}]}


def gang(prefix, count, cpu, memory="1Gi", **kw):
    return [
        pod(f"{prefix}-{i}", cpu, memory, **kw, namespace="ml", guaranteed=True)
        for i in range(count)
    ]


def test_story1_three_cpu_pod_cannot_fit_with_reason():
    result = evaluate_workload(
        [pod("big", "3", "1Gi", namespace="ml", guaranteed=True)], story1_snapshot()
    )
    assert result.verdict is Verdict.CANNOT_FIT
    assert result.explanation == (
        "no suitable node has 3 CPU free for pod ml/big: 0 of 4 nodes (largest free 2 CPU)"
    )
    assert result.placement is None


def test_story1_two_cpu_pod_fits_with_placement():
    result = evaluate_workload(
        [pod("small", "2", "1Gi", namespace="ml", guaranteed=True)], story1_snapshot()
    )
    assert result.verdict is Verdict.FITS
    assert result.placement == {"ml/small": "node-0"}


def test_story1_quota_sized_gang_of_four_fits_across_all_nodes():
    result = evaluate_workload(gang("w", 4, "2"), story1_snapshot())
    assert result.fits
    assert sorted(result.placement.values()) == [f"node-{i}" for i in range(4)]


def test_total_demand_above_free_capacity_cannot_fit():
    result = evaluate(gang("w", 5, "2"), story1_snapshot())
    assert (result.verdict, result.method) == (Verdict.CANNOT_FIT, "total")
    assert "need 10 CPU" in result.explanation and "have 8 CPU free" in result.explanation


def test_each_pod_fits_alone_but_not_together_count_bound():
    # 5 x 1.5 CPU = 7.5 CPU <= 8 CPU free, but each node holds only one of them.
    result = evaluate(gang("w", 5, "1500m"), story1_snapshot())
    assert (result.verdict, result.method) == (Verdict.CANNOT_FIT, "count")
    assert "at most 4 of the 5" in result.explanation


def test_necessary_conditions_pass_but_exact_search_proves_cannot_fit():
    # Two nodes with 5 CPU; pods 4, 4, 2 (10 CPU total, each fits alone, count bound 4 >= 3).
    snap = snapshot_of([node("a", "5", memory="16Gi"), node("b", "5", memory="16Gi")])
    pods = [
        pod("x", "4", namespace="ml", guaranteed=True),
        pod("y", "4", namespace="ml", guaranteed=True),
        pod("z", "2", namespace="ml", guaranteed=True),
    ]
    result = evaluate(pods, snap, budget_s=5)
    assert (result.verdict, result.method) == (Verdict.CANNOT_FIT, "exact")
    assert "exhaustive search" in result.explanation


def test_exact_search_finds_fit_that_greedy_misses():
    # 7 + 7 CPU; pods 3, 3, 2, 2, 2, 2: decreasing heuristics stack both 3s on one node.
    snap = snapshot_of([node("a", "7", memory="16Gi"), node("b", "7", memory="16Gi")])
    pods = gang("big", 2, "3") + gang("small", 4, "2")
    result = evaluate(pods, snap, budget_s=5)
    assert (result.verdict, result.method) == (Verdict.FITS, "exact")
    per_node = {"a": 0, "b": 0}
    for key, where in result.placement.items():
        per_node[where] += 3 if "big" in key else 2
    assert per_node == {"a": 7, "b": 7}


def test_greedy_alone_fails_on_that_instance():
    from scheduler.admission.evaluator import _packing
    from scheduler.admission.monitor import pod_demand
    from scheduler.api.node_matching import scheduling_signature

    snap = snapshot_of([node("a", "7", memory="16Gi"), node("b", "7", memory="16Gi")])
    pods = gang("big", 2, "3") + gang("small", 4, "2")
    demands = [pod_demand(p) for p in pods]
    packing = _packing(
        snap, demands, [scheduling_signature(p) for p in pods], ["cpu", "memory", "pods"]
    )
    assert greedy(packing, best_fit=False) is None
    assert greedy(packing, best_fit=True) is None


def test_multi_pod_workload_spreads_across_several_nodes():
    snap = snapshot_of(
        [
            node("a", "4", memory="16Gi"),
            node("b", "4", memory="16Gi"),
            node("c", "4", memory="16Gi"),
        ]
    )
    result = evaluate_workload(gang("w", 3, "3"), snap)
    assert result.fits
    assert sorted(result.placement.values()) == ["a", "b", "c"]


def hard_instance_sizes() -> list[int]:
    """CPU millicores, all multiples of 3, summing to 9993m.

    No 1000m node can be filled past 999m with them, so 10 nodes hold at most 9990m: the
    workload cannot fit, yet it is below the nodes' 10000m total, so only a search can tell.
    """
    rng = random.Random(7)
    sizes: list[int] = []
    while sum(sizes) < 9993 - 270:
        sizes.append(3 * rng.randint(50, 90))
    sizes.append(9993 - sum(sizes))
    return sizes


def test_unknown_when_budget_is_too_small_on_a_hard_instance():
    sizes = hard_instance_sizes()
    assert sum(sizes) == 9993 and all(s % 3 == 0 for s in sizes)
    pods = [
        pod(f"p{i}", f"{s}m", "1Mi", namespace="ml", guaranteed=True) for i, s in enumerate(sizes)
    ]
    snap = snapshot_of([node(f"n{i}", "1", "1Gi") for i in range(10)])
    result = evaluate(pods, snap, budget_s=0.0)
    assert result.verdict is Verdict.UNKNOWN
    assert result.method == "budget" and "undecided within 0 s" in result.explanation


def test_taints_exclude_nodes_unless_tolerated():
    snap = snapshot_of(
        [node("gpu-0", "8", taints=[GPU_TAINT], memory="16Gi"), node("cpu-0", "2", memory="16Gi")]
    )
    blocked = evaluate_workload([pod("train", "4", namespace="ml", guaranteed=True)], snap)
    assert blocked.verdict is Verdict.CANNOT_FIT
    assert "0 of 1 suitable nodes of 2 (largest free 2 CPU)" in blocked.explanation
    tolerated = evaluate_workload(
        [pod("train", "4", spec=TOLERATE_GPU, namespace="ml", guaranteed=True)], snap
    )
    assert tolerated.placement == {"ml/train": "gpu-0"}


def test_no_suitable_node_lists_kube_scheduler_reasons():
    snap = snapshot_of(
        [
            node("gpu-0", taints=[GPU_TAINT], memory="16Gi"),
            node("a", labels={"zone": "a"}, memory="16Gi"),
            node("b", labels={"zone": "b"}, memory="16Gi"),
        ]
    )
    result = evaluate_workload(
        [pod("p", spec={"nodeSelector": {"zone": "c"}}, namespace="ml", guaranteed=True)], snap
    )
    assert result.verdict is Verdict.CANNOT_FIT
    assert result.explanation == (
        "0/3 nodes are available for pod ml/p: 2 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {gpu: true}"
    )


def test_node_selector_restricts_capacity_per_class():
    snap = snapshot_of(
        [
            node("a", "4", labels={"zone": "a"}, memory="16Gi"),
            node("b", "4", labels={"zone": "b"}, memory="16Gi"),
        ]
    )
    zone_a = {"nodeSelector": {"zone": "a"}}
    assert evaluate(gang("w", 2, "2", spec=zone_a), snap).fits
    result = evaluate(gang("w", 3, "2", spec=zone_a), snap)
    assert (result.verdict, result.method) == (Verdict.CANNOT_FIT, "total")
    assert "1 suitable node(s) have 4 CPU free" in result.explanation


def test_two_classes_share_nodes_all_together_overloaded():
    # Zone-a pods may use node a only; free pods may use both, but 4+4 CPU cannot host 10 CPU.
    snap = snapshot_of(
        [
            node("a", "4", labels={"zone": "a"}, memory="16Gi"),
            node("b", "4", labels={"zone": "b"}, memory="16Gi"),
        ]
    )
    pods = gang("pinned", 2, "2", spec={"nodeSelector": {"zone": "a"}}) + gang("free", 3, "2")
    result = evaluate(pods, snap)
    assert result.verdict is Verdict.CANNOT_FIT


def test_gpu_and_memory_dimensions_count():
    snap = snapshot_of([node("g", "32", "64Gi", gpu="2"), node("c", "32", "64Gi")])
    assert evaluate_workload(gang("t", 2, "4", gpu="1"), snap).fits
    result = evaluate_workload(gang("t", 3, "4", gpu="1"), snap)
    assert result.verdict is Verdict.CANNOT_FIT and "nvidia.com/gpu" in result.explanation
    too_big = evaluate_workload([pod("m", "1", "100Gi", namespace="ml", guaranteed=True)], snap)
    assert "memory" in too_big.explanation and too_big.verdict is Verdict.CANNOT_FIT


def test_non_guaranteed_workload_is_admitted_unchecked():
    burstable = pod("b", None, None, requests={"cpu": "64"}, namespace="ml")
    result = evaluate_workload(
        [pod("g", "1", namespace="ml", guaranteed=True), burstable], story1_snapshot()
    )
    assert result.verdict is Verdict.FITS and result.checked is False
    assert "Burstable" in result.explanation and result.method == "skipped"


def test_masks_are_cached_per_signature_on_the_snapshot():
    snap = story1_snapshot()
    evaluate(gang("w", 3, "1"), snap)
    signatures = [k for k in snap.mask_cache if not isinstance(k, (str, tuple))]
    assert len(signatures) == 1


@pytest.mark.parametrize("count", [0])
def test_empty_workload_fits(count):
    assert evaluate(gang("w", count, "1"), story1_snapshot()).fits


def test_a_derived_snapshot_has_the_capacity_of_its_nodes():
    """Matrices carried over by ``minus`` and those worked out later both equal a snapshot
    built from the derived nodes; deductions past zero clamp, giving back restores."""
    snap = snapshot_of([node(f"n{i}", "4", gpu="1") for i in range(3)])
    resources = ["cpu", "memory", "pods"]
    carried = capacity_matrix(snap, resources)  # worked out before deriving
    derived = snap.minus({"n1": {"cpu": 5000, "pods": 1}, "n2": {"nvidia.com/gpu": 1000}})
    derived = derived.minus({"n0": {"cpu": 1000}, "n1": {"cpu": -500}})
    plain = CapacitySnapshot(derived.last_check, derived.nodes)
    for wanted in (resources, ["cpu", "nvidia.com/gpu"]):
        assert (capacity_matrix(derived, wanted) == capacity_matrix(plain, wanted)).all()
    assert capacity_matrix(derived, resources)[:, 0].tolist() == [3000, 0, 4000]
    assert capacity_matrix(snap, resources) is carried  # the base keeps its own
    assert evaluate_workload(gang("w", 1, "4"), derived).placement == {"ml/w-0": "n2"}
