"""Admission-check flows through the simulated cluster's API: the e2e Harness (a real
SchedulerService on virtual time) with the node-capacity check attached, and workloads created
through it (objects from tests.builders).
"""

from __future__ import annotations

from kubernetes import client

from scheduler.admission.check import CONDITION_TYPE
from scheduler.config import default_config
from tests.builders import body, pod, podgroup
from tests.e2e.harness import Harness

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
    group = podgroup(
        name,
        pods,
        namespace=NS,
        queue=queue,
        min_resources={"cpu": f"{cores:g}", "memory": f"{pods}Gi"},
    )
    h.custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", body(group))
    names = [name] if pods == 1 else [f"{name}-{i}" for i in range(pods)]
    for pod_name in names:
        member = pod(
            pod_name, cpu, "1Gi", namespace=NS, group=name, guaranteed=guaranteed, spec=pod_spec
        )
        h.core.create_namespaced_pod(NS, body(member))
    h.clock.advance(1)  # creation order is scheduling order


def read_podgroup(h: Harness, name: str) -> dict:
    """Read through the API, as ``kubectl get podgroup -o yaml`` would."""
    return h.custom.get_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", name)


def capacity_condition(h: Harness, name: str) -> dict:
    for condition in (read_podgroup(h, name).get("status") or {}).get("conditions") or []:
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
    return (read_podgroup(h, name).get("status") or {}).get("phase") or ""


def risk_of(h: Harness, name: str):
    return next(r for r in h.reports[-1].risks if r.name == name)
