"""The resource monitor: QoS classes, pod footprints and the KEP's Snapshot."""

from __future__ import annotations

import pytest

from scheduler.admission.monitor import (
    BEST_EFFORT,
    BURSTABLE,
    GUARANTEED,
    CapacitySnapshot,
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
