"""Admission-check flows through the simulated cluster's API: tests/gates' Harness (a real
SchedulerService on virtual time) with the node-capacity check attached, and workload builders.
"""

from __future__ import annotations

from kubernetes import client

from scheduler.admission.check import CONDITION_TYPE
from scheduler.config import default_config
from tests.gates.harness import Harness

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"
NS = "team"


def start(scenario: dict, *, check: bool = True, node_groups: bool = False, **enqueue) -> Harness:
    """A Harness whose scheduler has the check (``check=False``: snapshot and risks only)."""
    config = default_config().with_action_arguments("enqueue", admissionCheck=check, **enqueue)
    h = Harness(scenario, config=config)
    h.attach_admission(node_groups=node_groups)
    return h


def workload(
    h: Harness,
    name: str,
    cpu: str,
    *,
    pods: int = 1,
    guaranteed: bool = True,
    queue: str = "q",
    **pod_spec,
) -> None:
    """A PodGroup (minMember = pods, minResources = their sum) and its pods, ``cpu`` each."""
    cores = float(cpu) * pods
    group = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "minMember": pods,
            "queue": queue,
            "minResources": {"cpu": f"{cores:g}", "memory": f"{pods}Gi"},
        },
    }
    h.custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", group)
    names = [name] if pods == 1 else [f"{name}-{i}" for i in range(pods)]
    for pod_name in names:
        h.core.create_namespaced_pod(NS, pod(pod_name, name, cpu, guaranteed, **pod_spec))
    h.clock.advance(1)  # creation order is scheduling order


def pod(name: str, group: str, cpu: str, guaranteed: bool, **spec) -> dict:
    """A one-container pod of PodGroup ``group`` ("": none, a gang of one)."""
    requests = {"cpu": cpu, "memory": "1Gi"}
    resources = {"requests": requests, "limits": requests} if guaranteed else {"requests": requests}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "annotations": {"scheduling.k8s.io/group-name": group} if group else {},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
            **spec,
        },
    }


def podgroup(h: Harness, name: str) -> dict:
    """Read through the API, as ``kubectl get podgroup -o yaml`` would."""
    return h.custom.get_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", name)


def capacity_condition(h: Harness, name: str) -> dict:
    for condition in (podgroup(h, name).get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION_TYPE:
            return condition
    return {}


def events_for(h: Harness, name: str, kind: str = "PodGroup") -> list[client.CoreV1Event]:
    selector = f"involvedObject.name={name},involvedObject.kind={kind}"
    return h.core.list_namespaced_event(NS, field_selector=selector).items


def node_of(h: Harness, name: str) -> str:
    return (h.pod(name, NS).get("spec") or {}).get("nodeName") or ""


def running(h: Harness, name: str) -> bool:
    return (h.pod(name, NS).get("status") or {}).get("phase") == "Running"


def phase(h: Harness, name: str) -> str:
    return (podgroup(h, name).get("status") or {}).get("phase") or ""


def risk_of(h: Harness, name: str):
    return next(r for r in h.reports[-1].risks if r.name == name)
