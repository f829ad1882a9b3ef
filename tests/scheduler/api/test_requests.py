"""One function says what a pod needs (Kubernetes' effective request), and every part of
Sluice uses it: the engine, the node-capacity check, the simulated kubelet and autoscalers."""

from __future__ import annotations

from scheduler.admission.monitor import pod_demand
from scheduler.api.requests import pod_requests
from scheduler.api.task_info import TaskInfo
from simcluster.autoscaler.common import ScalingGroup, group_fits
from simcluster.kubelet import Kubelet
from simcluster.podutil import pod_requests as sim_requests
from simcluster.store import Store

CPU = 1000


def pod(name="p", *, app=("1",), init=(), sidecars=(), overhead=None, node="", limits_only=False):
    def container(i, cpu, **extra):
        key = "limits" if limits_only else "requests"
        return {"name": f"c{i}", "resources": {key: {"cpu": cpu, "memory": "1Gi"}}, **extra}

    spec = {"containers": [container(i, c) for i, c in enumerate(app)]}
    inits = [container(f"s{i}", c, restartPolicy="Always") for i, c in enumerate(sidecars)]
    inits += [container(f"i{i}", c) for i, c in enumerate(init)]
    if inits:
        spec["initContainers"] = inits
    if overhead:
        spec["overhead"] = overhead
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": spec, "status": {"phase": "Pending"}}  # fmt: skip


def test_a_4_cpu_init_container_and_a_1_cpu_app_container_need_4_cpu_everywhere():
    p = pod(app=("1",), init=("4",))
    assert pod_requests(p, "pod ns/p")["cpu"] == 4 * CPU
    task = TaskInfo(p)
    assert task.resreq.get("cpu") == 4 * CPU and task.init_resreq.get("cpu") == 4 * CPU
    assert task.node_req.get("cpu") == 4 * CPU  # what the node accounts
    assert pod_demand(p, "limits_or_requests")["cpu"] == 4 * CPU  # the admission check
    assert sim_requests(p)["cpu"] == 4 * CPU  # the simulated kubelet and autoscalers
    small = ScalingGroup("small", capacity={"cpu": "3", "memory": "8Gi"}, max_size=1)
    big = ScalingGroup("big", capacity={"cpu": "4", "memory": "8Gi"}, max_size=1)
    assert not group_fits(small, p) and group_fits(big, p)


def test_sidecars_run_beside_the_app_and_beside_later_init_containers():
    # app 1 + sidecar 2 = 3; the regular init container (2) runs beside the sidecar: 4.
    p = pod(app=("1",), sidecars=("2",), init=("2",))
    assert pod_requests(p, "pod ns/p")["cpu"] == 4 * CPU
    # A small init container changes nothing: the app and the sidecar need 3.
    assert pod_requests(pod(app=("1",), sidecars=("2",), init=("1",)), "p")["cpu"] == 3 * CPU


def test_overhead_is_added_and_requests_default_to_limits():
    p = pod(app=("1",), overhead={"cpu": "250m"}, limits_only=True)
    assert pod_requests(p, "p")["cpu"] == 1250
    assert pod_requests(p, "p", "limits")["cpu"] == 1250


def test_the_simulated_kubelet_rejects_a_pod_its_node_cannot_hold_with_out_of_cpu():
    store = Store(lambda: 0.0)
    store.create("nodes", {"metadata": {"name": "n1"},
                           "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}})  # fmt: skip
    store.create("pods", pod("first", app=("1",), node="n1"))
    store.create("pods", pod("second", app=("1",), init=("4",), node="n1"))
    Kubelet(store, startup_delay=0).tick(1.0)
    first, second = store.get("pods", "ns", "first"), store.get("pods", "ns", "second")
    assert first["status"]["phase"] == "Running"
    assert (second["status"]["phase"], second["status"]["reason"]) == ("Failed", "OutOfcpu")
    assert "requested: 4000, used: 1000, capacity: 4000" in second["status"]["message"]
