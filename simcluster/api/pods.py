"""Pod lifecycle as kube-apiserver runs it: defaults and status on create, binding, deletion."""

from __future__ import annotations

from collections.abc import Callable

from simcluster.store import Store, utc_timestamp

DEFAULT_GRACE_SECONDS = 30


def set_condition(pod: dict, condition_type: str, status: str, now: float, **extra: str) -> None:
    """Set a pod condition, keeping lastTransitionTime when the status does not change."""
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == condition_type), None)
    condition = {"type": condition_type, "status": status, "lastProbeTime": None, **extra}
    unchanged = existing is not None and existing.get("status") == status
    condition["lastTransitionTime"] = (
        existing.get("lastTransitionTime") if unchanged else utc_timestamp(now)
    )
    if existing is None:
        conditions.append(condition)
    else:
        conditions[conditions.index(existing)] = condition


def prepare_pod_create(pod: dict, now: float) -> None:
    """Defaults and the initial status: phase Pending, PodScheduled=False when gated."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    pod["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    if spec.get("schedulingGates"):
        set_condition(
            pod,
            "PodScheduled",
            "False",
            now,
            reason="SchedulingGated",
            message="Scheduling is blocked due to non-empty scheduling gates",
        )


def _qos_class(spec: dict) -> str:
    """Kubernetes' QoS class (GetPodQOS): only CPU and memory count. BestEffort when no
    container asks for either; Guaranteed when every container limits both and requests (if
    set) equal the limits; Burstable otherwise."""
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    compute = ("cpu", "memory")
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if any(k in requests or k in limits for k in compute):
            any_set = True
        for k in compute:
            if k not in limits or (k in requests and requests[k] != limits[k]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def bind_pod(pod: dict, node: str, now: float, annotations: dict | None = None) -> None:
    pod["spec"]["nodeName"] = node
    if annotations:
        pod["metadata"].setdefault("annotations", {}).update(annotations)
    set_condition(pod, "PodScheduled", "True", now)


def delete_pod(store: Store, namespace: str, name: str, grace: int | None, now: float) -> dict:
    """Unbound pods, or a grace period of 0, go at once; bound pods get a deletionTimestamp.

    The simulated kubelet removes pods whose deletion timestamp has passed.
    """
    pod = store.get("pods", namespace, name)
    if grace is None:
        grace = int(pod["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
    if not pod["spec"].get("nodeName") or grace <= 0:
        return store.delete("pods", namespace, name)
    return store.mutate("pods", namespace, name, _mark_deleting(grace, now))


def _mark_deleting(grace: int, now: float) -> Callable[[dict], None]:
    def change(pod: dict) -> None:
        meta = pod["metadata"]
        current = meta.get("deletionGracePeriodSeconds")
        if current is not None and current <= grace:
            return  # a later delete may only shorten the grace period
        meta["deletionGracePeriodSeconds"] = grace
        meta["deletionTimestamp"] = utc_timestamp(now + grace)

    return change
