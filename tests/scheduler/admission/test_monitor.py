"""The resource monitor: QoS classes, pod footprints and the KEP's Snapshot."""

from __future__ import annotations

import pytest

from scheduler.admission.monitor import (
    BEST_EFFORT,
    BURSTABLE,
    GUARANTEED,
    CapacitySnapshot,
    counted_demand,
    is_extended,
    pod_demand,
    qos_class,
)
from scheduler.api.quantity import QuantityError
from tests.builders import node, pod
from tests.scheduler.admission.helpers import T0, snapshot_of

GI = 2**30


def with_containers(first, *more, init=()):
    """Pod ml/p whose containers have the resources ``first``, ``*more``."""
    return pod(
        "p",
        None,
        None,
        namespace="ml",
        requests=first.get("requests"),
        limits=first.get("limits"),
        containers=[{"name": f"c{i}", "resources": r} for i, r in enumerate(more, 1)],
        init_containers=list(init),
    )


def res(limits=None, requests=None):
    out = {}
    if limits is not None:
        out["limits"] = limits
    if requests is not None:
        out["requests"] = requests
    return out


FULL = {"cpu": "1", "memory": "1Gi"}

QOS_CASES = [
    ("limits only: requests default to limits", with_containers(res(FULL)), GUARANTEED),
    ("requests equal limits", with_containers(res(FULL, FULL)), GUARANTEED),
    ("no resources", with_containers(res()), BEST_EFFORT),
    ("requests below limits", with_containers(res(FULL, {"cpu": "500m"})), BURSTABLE),
    ("cpu limit only", with_containers(res({"cpu": "1"})), BURSTABLE),
    ("requests only", with_containers(res(None, FULL)), BURSTABLE),
    ("one of two containers lacks limits", with_containers(res(FULL), res()), BURSTABLE),
    (
        "two guaranteed containers",
        with_containers(res(FULL), res({"cpu": "2", "memory": "1Gi"})),
        GUARANTEED,
    ),
    (
        "equal forms 1000m vs 1",
        with_containers(res({"cpu": "1000m", "memory": "1Gi"}, FULL)),
        GUARANTEED,
    ),
    (
        "init container without limits",
        with_containers(res(FULL), init=[{"name": "i", "resources": {}}]),
        BURSTABLE,
    ),
    (
        "init container guaranteed too",
        with_containers(res(FULL), init=[{"name": "i", "resources": res(FULL)}]),
        GUARANTEED,
    ),
    (
        "gpu limit does not matter",
        with_containers(res({**FULL, "nvidia.com/gpu": "1"})),
        GUARANTEED,
    ),
    ("zero requests ignored", with_containers(res(None, {"cpu": "0", "memory": "0"})), BEST_EFFORT),
]


@pytest.mark.parametrize(
    ("p", "expected"), [c[1:] for c in QOS_CASES], ids=[c[0] for c in QOS_CASES]
)
def test_qos_class(p, expected):
    assert qos_class(p) == expected


def test_pod_demand_sums_containers_and_takes_init_peak():
    p = with_containers(
        res({"cpu": "1", "memory": "1Gi"}),
        res({"cpu": "1", "memory": "1Gi"}),
        init=[{"name": "big-init", "resources": res({"cpu": "3", "memory": "1Gi"})}],
    )
    assert pod_demand(p) == {"cpu": 3000, "memory": 2 * GI, "pods": 1}


def test_pod_demand_counts_sidecars_beside_app_and_later_inits():
    sidecar = {
        "name": "proxy",
        "restartPolicy": "Always",
        "resources": res({"cpu": "1", "memory": "1Gi"}),
    }
    late_init = {"name": "late", "resources": res({"cpu": "2", "memory": "1Gi"})}
    p = with_containers(res({"cpu": "1", "memory": "1Gi"}), init=[sidecar, late_init])
    # app 1 + sidecar 1 = 2; the late init runs beside the sidecar: 2 + 1 = 3 CPU.
    assert pod_demand(p)["cpu"] == 3000


def test_pod_demand_basis_falls_back_to_requests():
    p = with_containers(res({"cpu": "2"}, {"cpu": "1", "memory": "1Gi"}))
    assert pod_demand(p, "limits") == {"cpu": 2000, "pods": 1}
    assert pod_demand(p, "limits_or_requests") == {"cpu": 2000, "memory": GI, "pods": 1}


def test_snapshot_subtracts_only_guaranteed_bound_pods():
    pods = [
        pod(
            "guaranteed",
            "2",
            "2Gi",
            node_name="n1",
            namespace="ml",
            guaranteed=True,
            uid="uid-guaranteed",
        ),
        pod("burstable", None, None, requests={"cpu": "1"}, node_name="n1", namespace="ml"),
        pod("pending", "1", "1Gi", namespace="ml", guaranteed=True),
        {
            **pod("finished", "1", "1Gi", node_name="n1", namespace="ml", guaranteed=True),
            "status": {"phase": "Succeeded"},
        },
    ]
    snap = snapshot_of([node("n1", "4", "8Gi")], pods)
    (n1,) = snap.nodes
    assert n1.remaining == {"cpu": 2000, "memory": 6 * GI, "pods": 109}
    assert [p.name for p in n1.pods] == ["guaranteed"]
    assert n1.pods[0].resources == {"cpu": 2000, "memory": 2 * GI}
    assert (n1.node_name, n1.uid, n1.pods[0].uid, n1.pods[0].namespace) == (
        "n1",
        "uid-n1",
        "uid-guaranteed",
        "ml",
    )
    assert snap.last_check == T0


def test_snapshot_keeps_labels_and_taints_and_round_trips_json():
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    snap = snapshot_of(
        [node("n1", labels={"zone": "a"}, taints=[taint], memory="16Gi")],
        [pod("g", node_name="n1", namespace="ml", guaranteed=True)],
    )
    again = CapacitySnapshot.from_json(snap.to_json())
    assert again == snap
    assert again.nodes[0].labels == {"zone": "a"} and again.nodes[0].taints == [taint]
    assert snap.to_json()["nodes"][0]["node_name"] == "n1"


def test_bad_quantity_names_pod_and_field():
    bad = with_containers(res({"cpu": "lots", "memory": "1Gi"}))
    with pytest.raises(QuantityError, match=r"pod ml/p: spec.containers\[0\].resources.limits.cpu"):
        qos_class(bad)


# -- extended resources, whatever the QoS class (a departure from the KEP) ---------------


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("example.com/foo", True),
        ("cpu", False),
        ("memory", False),
        ("ephemeral-storage", False),
        ("hugepages-2Mi", False),
        ("pods", False),
    ],
)
def test_is_extended(name, extended):
    assert is_extended(name) is extended


def test_snapshot_counts_extended_resources_of_burstable_and_best_effort_pods():
    gpu = "nvidia.com/gpu"
    pods = [
        # Burstable: cpu and memory requests only; the GPU (limit, so request) counts.
        pod("burstable", "2", "2Gi", gpu="1", limits={gpu: "1"}, node_name="n1", namespace="ml"),
        # BestEffort: no cpu or memory at all, only a GPU limit.
        pod("best-effort", None, None, limits={gpu: "1"}, node_name="n1", namespace="ml"),
        pod("guaranteed", "1", "1Gi", gpu="1", guaranteed=True, node_name="n1", namespace="ml"),
    ]
    assert [qos_class(p) for p in pods] == [BURSTABLE, BEST_EFFORT, GUARANTEED]
    snap = snapshot_of([node("n1", "8", "16Gi", gpu="4")], pods)
    (n1,) = snap.nodes
    # 3 GPUs taken; cpu, memory and a pod slot only for the Guaranteed pod (the KEP).
    assert n1.remaining == {"cpu": 7000, "memory": 15 * GI, "pods": 109, gpu: 1000}
    assert {p.name: p.resources for p in n1.pods} == {
        "burstable": {gpu: 1000},
        "best-effort": {gpu: 1000},
        "guaranteed": {"cpu": 1000, "memory": GI, gpu: 1000},
    }
    assert CapacitySnapshot.from_json(snap.to_json()) == snap


def test_overcommittable_resources_of_burstable_pods_stay_uncounted():
    limits = {"ephemeral-storage": "10Gi", "hugepages-2Mi": "1Gi"}
    burstable = pod("b", "1", "1Gi", limits=limits, node_name="n1", namespace="ml")
    assert qos_class(burstable) == BURSTABLE and counted_demand(burstable) == {}
    n1 = node("n1", allocatable={"ephemeral-storage": "100Gi", "hugepages-2Mi": "4Gi"})
    (usage,) = snapshot_of([n1], [burstable]).nodes
    assert usage.pods == [] and usage.remaining["hugepages-2Mi"] == 4 * GI


def test_counted_demand_of_a_burstable_pod_sums_its_containers_extended_resources():
    sidecar = {"name": "s", "restartPolicy": "Always", "resources": res({"example.com/nic": "1"})}
    p = with_containers(
        res({"nvidia.com/gpu": "1"}, {"cpu": "1"}), res({"nvidia.com/gpu": "2"}), init=[sidecar]
    )
    assert counted_demand(p) == {"nvidia.com/gpu": 3000, "example.com/nic": 1000}


# -- snapshots derived with minus ----------------------------------------------------------


def test_minus_takes_from_the_named_nodes_only_and_shares_the_masks():
    no_pod_limit = node("n2", "4")
    for resources in no_pod_limit["status"].values():
        del resources["pods"]
    snap = snapshot_of([node("n1", "4"), no_pod_limit], [])
    derived = snap.minus(
        {"n1": {"cpu": 3000, "pods": 1}, "n2": {"cpu": 1000, "pods": 1}, "gone": {"cpu": 1}}
    )
    assert [n.remaining.get("cpu") for n in derived.nodes] == [1000, 3000]
    assert derived.nodes[0].remaining["pods"] == 109
    assert "pods" not in derived.nodes[1].remaining  # no pod limit: none made up
    assert derived.base is snap and derived.last_check == snap.last_check
    assert (
        derived.mask_cache is snap.mask_cache and derived.capacity_cache is not snap.capacity_cache
    )
    assert [n.remaining["cpu"] for n in snap.nodes] == [4000, 4000]
    again = derived.minus({"n1": {"cpu": -1000}})  # giving back
    assert again.base is snap and dict(again.deducted)[0] == {"cpu": 2000, "pods": 1}
    assert snap.minus({}) is snap and snap.minus({"gone": {"cpu": 1}}) is snap


def test_pod_uids_lists_the_pods_counted():
    pods = [
        pod("g", node_name="n1", namespace="ml", guaranteed=True),
        pod("b", node_name="n1", namespace="ml"),  # Burstable without extended resources
    ]
    assert snapshot_of([node("n1")], pods).pod_uids() == {"uid-ml-g"}
