"""GPUs held by Burstable and BestEffort pods count as used, through the simulated cluster's API.

Kueue KEP-3211 counts only Guaranteed pods. An extended resource cannot be overcommitted (its
request equals its limit and the kubelet admits by it), so a GPU a Burstable or BestEffort pod
holds is not free: the check must not admit a GPU workload onto it, where it would wait with
``Insufficient nvidia.com/gpu``.
"""

from __future__ import annotations

from scheduler.admission.monitor import BEST_EFFORT, BURSTABLE, GUARANTEED, qos_class
from scheduler.api.quantity import GPU
from tests.builders import body, pod, podgroup
from tests.e2e.admission.flow import (
    GROUP,
    NS,
    VERSION,
    capacity_condition,
    node_of,
    phase,
    running,
)

SCENARIO = {
    "namespaces": [{"name": "team"}],
    "queues": [{"name": "q", "spec": {"capability": {"cpu": "100", GPU: "8"}}}],
    "nodes": [
        {"name": "gpu-0", "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", GPU: "2"}}
    ],
    "kubelet": {"startupDelay": 1},
}


def gpu_workload(h, name: str, cpu: str | None, *, guaranteed: bool) -> None:
    """A one-pod PodGroup whose pod holds one GPU: Guaranteed (cpu, memory and GPU limits),
    Burstable (cpu and memory requests only, GPU limit) or, with ``cpu=None``, BestEffort (a
    GPU limit and nothing else)."""
    memory = "1Gi" if cpu is not None else None
    group = podgroup(name, 1, namespace=NS, queue="q")
    h.custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", body(group))
    member = pod(
        name, cpu, memory, gpu="1", limits={GPU: "1"}, namespace=NS, group=name,
        guaranteed=guaranteed,
    )  # fmt: skip
    h.core.create_namespaced_pod(NS, body(member))
    h.clock.advance(1)


def both_gpus_held(harnesses, check: bool = True):
    """gpu-0's two GPUs held by a Burstable and a BestEffort pod, seen by a snapshot; then a
    Guaranteed one-GPU workload "trainer" arrives."""
    h = harnesses(SCENARIO, check=check)
    gpu_workload(h, "burstable", "1", guaranteed=False)
    gpu_workload(h, "best-effort", None, guaranteed=False)
    h.step(3)
    assert running(h, "burstable") and running(h, "best-effort")
    # Kubernetes' QoS classes (GetPodQOS; the simulated API server's status.qosClass is rougher)
    classes = {p: qos_class(h.pod(p, NS)) for p in ("burstable", "best-effort")}
    assert classes == {"burstable": BURSTABLE, "best-effort": BEST_EFFORT}
    h.snapshots.refresh()  # the monitor sees both pods on gpu-0
    gpu_workload(h, "trainer", "2", guaranteed=True)
    assert qos_class(h.pod("trainer", NS)) == GUARANTEED
    h.step(3)
    return h


def test_gpus_held_by_burstable_and_best_effort_pods_are_not_free(harnesses):
    h = both_gpus_held(harnesses)
    assert phase(h, "trainer") == "Pending"  # before: Inqueue, and never ran
    assert node_of(h, "trainer") == ""
    condition = capacity_condition(h, "trainer")
    assert (condition["status"], condition["reason"]) == ("False", "InsufficientNodeCapacity")
    assert "no suitable node has 1 nvidia.com/gpu free for pod team/trainer" in condition["message"]
    (node,) = h.snapshots().nodes
    assert node.remaining[GPU] == 0
    assert sorted(p.name for p in node.pods) == ["best-effort", "burstable"]
    assert {p.name: p.resources for p in node.pods} == {
        "best-effort": {GPU: 1000},
        "burstable": {GPU: 1000},  # its GPU only: its cpu and memory stay uncounted (the KEP)
    }


def test_with_the_check_off_the_gpu_workload_is_admitted_and_waits_for_a_gpu(harnesses):
    """What the check prevents: admitted, the workload waits with kube-scheduler's
    ``Insufficient nvidia.com/gpu``, holding its queue's quota."""
    h = both_gpus_held(harnesses, check=False)
    assert phase(h, "trainer") == "Inqueue"
    assert node_of(h, "trainer") == ""
    waiting = {w.name: w.status.message for w in h.reports[-1].waiting}
    assert f"Insufficient {GPU}" in waiting["trainer"]
    risk = next(r for r in h.reports[-1].risks if r.name == "trainer")
    assert risk.risk == "fits_no_node_shape"  # the risk report sees the held GPUs too


def test_the_gpu_workload_is_admitted_once_a_gpu_is_freed(harnesses):
    h = both_gpus_held(harnesses)
    h.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "burstable")
    h.core.delete_namespaced_pod("burstable", NS, grace_period_seconds=0)
    h.step(1)
    h.snapshots.refresh()
    h.step(60)  # the next retry
    assert running(h, "trainer") and node_of(h, "trainer") == "gpu-0"
    assert capacity_condition(h, "trainer")["status"] == "True"
