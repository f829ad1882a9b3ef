"""A PodGroup created before its pods (Volcano's job controller, the Spark and Kubeflow
operators): what it still awaits, and how the node-capacity check judges it on its
minMember and minResources — "cannot fit" only when no shape of the awaited pods could."""

from __future__ import annotations

from scheduler.admission.awaited import Awaited, awaited_pods, check_workload, judge
from scheduler.admission.evaluator import Verdict
from scheduler.admission.monitor import build_snapshot
from scheduler.api.quantity import GPU
from tests.builders import node, pod
from tests.scheduler.admission.helpers import T0, snapshot_of

GI = 2**30
TAINT = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}


def awaiting(count, cpu, memory_gi=1, min_member=None, **extra):
    total = {"cpu": int(cpu * 1000), "memory": memory_gi * GI, **extra}
    return Awaited("ml/job", count, total, min_member or count)


# -- what a PodGroup awaits ---------------------------------------------------------------


def test_without_min_resources_nothing_is_known_and_nothing_is_awaited():
    assert awaited_pods("ml/job", 2, None, []) is None


def test_a_podgroup_without_pods_awaits_min_member_pods_of_all_its_min_resources():
    got = awaited_pods("ml/job", 2, {"cpu": 6000, "memory": 2 * GI, "pods": 2}, [])
    assert got == Awaited("ml/job", 2, {"cpu": 6000, "memory": 2 * GI}, 2)
    assert got.keys() == ["ml/job#0", "ml/job#1"]


def test_even_a_podgroup_of_min_member_0_awaits_one_pod_while_it_has_none():
    got = awaited_pods("ml/job", 0, {"cpu": 1000}, [])
    assert got is not None and got.count == 1


def test_existing_pods_take_their_requests_and_their_number_off():
    # A Spark driver exists (1 CPU); minMember 3 and 7 CPU: 2 executors, 6 CPU, to come.
    got = awaited_pods("ml/job", 3, {"cpu": 7000, "memory": 3 * GI}, [{"cpu": 1000}])
    assert got == Awaited("ml/job", 2, {"cpu": 6000, "memory": 3 * GI}, 3)
    assert awaited_pods("ml/job", 1, {"cpu": 7000}, [{"cpu": 1000}]) is None  # all there


def test_the_even_split_adds_up_to_the_total_and_a_pod_slot_each():
    shapes = awaiting(3, 1.0).shapes()
    assert [s["cpu"] for s in shapes] == [334, 333, 333]
    assert sum(s["memory"] for s in shapes) == GI and all(s["pods"] == 1 for s in shapes)


# -- judged on the nodes ------------------------------------------------------------------


def test_one_awaited_pod_of_6_cpu_does_not_fit_a_4_cpu_node():
    got = judge(awaiting(1, 6), snapshot_of([node("n0", "4", "16Gi")]))
    assert got.verdict is Verdict.CANNOT_FIT
    assert "it needs 6 CPU in all but the 1 schedulable node(s) have 4 CPU free" in got.explanation
    assert "1 pod(s) of PodGroup ml/job not created yet" in got.explanation


def test_the_largest_awaited_pod_must_fit_one_node():
    # 2 pods, 10 CPU: one needs at least 5 CPU on one node; 4 + 4 + 4 free is enough in all.
    nodes = [node(f"n{i}", "4", "16Gi") for i in range(3)]
    got = judge(awaiting(2, 10), snapshot_of(nodes))
    assert got.verdict is Verdict.CANNOT_FIT and got.method == "largest-pod"
    assert "at least 5 CPU on one node" in got.explanation
    assert "largest free 4 CPU" in got.explanation


def test_together_they_must_fit_the_nodes_free_capacity():
    nodes = [node("n0", "4", "16Gi"), node("n1", "4", "16Gi")]
    got = judge(awaiting(4, 10), snapshot_of(nodes))
    assert got.verdict is Verdict.CANNOT_FIT and got.method == "total"
    assert "need 10 CPU in all but the 2 schedulable node(s) have 8 CPU free" in got.explanation


def test_each_awaited_pod_needs_a_pod_slot():
    got = judge(awaiting(3, 0.3), snapshot_of([node("n0", "8", "16Gi", pods="2")]))
    assert got.verdict is Verdict.CANNOT_FIT and "need 3 pods in all" in got.explanation


def test_an_uneven_gang_that_fits_is_never_refused_although_its_even_split_does_not():
    # 8 CPU for 2 pods: 0.5 + 7.5 fits n0 (7.5 free) and n1 (1 free); 4 + 4 does not. Only a
    # placement the pods' shapes would rule out may refuse them: this one fits.
    running = [pod("x", "0.5", "1Gi", namespace="ml", guaranteed=True, node_name="n0")]
    nodes = [node("n0", "8", "16Gi"), node("n1", "1", "16Gi")]
    got = judge(awaiting(2, 8), build_snapshot(nodes, running, T0))
    assert got.fits and got.method == "min-resources"
    assert set(got.placement) == {"ml/job#0", "ml/job#1"}  # held somewhere by the ledger


def test_tainted_nodes_count_cordoned_ones_do_not():
    tainted = snapshot_of([node("gpu", "8", "16Gi", taints=[TAINT])])
    assert judge(awaiting(1, 6), tainted).fits  # its pods may tolerate the taint
    cordoned = snapshot_of([node("n0", "8", "16Gi", unschedulable=True)])
    got = judge(awaiting(1, 6), cordoned)
    assert got.verdict is Verdict.CANNOT_FIT and "no node is schedulable" in got.explanation


def test_an_extended_resource_no_node_has_is_a_refusal():
    got = judge(awaiting(1, 1, **{GPU: 1000}), snapshot_of([node("n0", "8", "16Gi")]))
    assert got.verdict is Verdict.CANNOT_FIT and "nvidia.com/gpu" in got.explanation


# -- the check's rule ---------------------------------------------------------------------


def test_existing_guaranteed_pods_are_placed_first_and_the_awaited_ones_on_what_is_left():
    snapshot = snapshot_of([node("n0", "4", "16Gi"), node("n1", "4", "16Gi")])
    driver = pod("driver", "3", "1Gi", namespace="ml", guaranteed=True)
    fits = check_workload([driver], awaiting(1, 4), snapshot)
    assert fits.fits and fits.placement is not None
    assert fits.placement["ml/driver"] != fits.placement["ml/job#0"]
    refused = check_workload([driver], awaiting(2, 8), snapshot)  # 3 + 8 > 8 free
    assert refused.verdict is Verdict.CANNOT_FIT
    assert refused.explanation.startswith("all 1 pod(s) fit on 1 node(s)")


def test_a_burstable_pod_that_exists_makes_the_workload_unchecked_as_the_kep_says():
    snapshot = snapshot_of([node("n0", "4", "16Gi")])
    driver = pod("driver", "1", "1Gi", namespace="ml")  # Burstable
    got = check_workload([driver], awaiting(1, 40), snapshot)
    assert got.fits and not got.checked and got.method == "skipped"


def test_no_pods_and_nothing_awaited_is_admitted_unchecked():
    got = check_workload([], None, snapshot_of([node("n0", "4", "16Gi")]))
    assert got.fits and not got.checked and got.method == "empty"
