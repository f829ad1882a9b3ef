"""What a pod takes from a node: Kubernetes' effective request, computed once, here.

Kubernetes' resource helper (``k8s.io/component-helpers/resource``, ``PodRequests``), which
kube-scheduler, the kubelet's admission and Volcano (``GetPodResourceRequest``) all use:

* app containers add up; a sidecar (an init container with ``restartPolicy: Always``) runs
  beside them for the pod's whole life, so it adds too;
* a regular init container runs alone, beside the sidecars started before it; the pod needs
  the larger of that peak and the app containers' sum;
* ``spec.overhead`` (the RuntimeClass's) is added on top.

A container's requests default to its limits, as the API server defaults them. The engine
(node and queue accounting), the node-capacity admission check, the simulated kubelet and
the simulated autoscalers all call ``pod_requests``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from scheduler.api.quantity import check_total, parse_resource_list

Basis = Literal["requests", "limits", "limits_or_requests"]
Units = dict[str, int]


def pod_requests(pod: Mapping[str, Any], obj: str, basis: Basis = "requests") -> Units:
    """The pod's effective request in engine units (no ``pods`` slot), from its requests
    (``basis="requests"``), its limits, or each resource's limit and else its request."""
    spec = pod.get("spec") or {}
    total: Units = {}
    for i, container in enumerate(_containers(spec, "containers")):
        _add(total, _amounts(container, f"spec.containers[{i}].resources", obj, basis))
    sidecars: Units = {}
    peak: Units = {}
    for i, container in enumerate(_containers(spec, "initContainers")):
        amounts = _amounts(container, f"spec.initContainers[{i}].resources", obj, basis)
        if container.get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            _max_into(peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, amounts)
            _max_into(peak, running)
    _max_into(total, peak)
    _add(total, parse_resource_list(spec.get("overhead"), obj=obj, field="spec.overhead"))
    # Each quantity fits an int64; their sum must too (two 5Ei limits do not).
    field = f"spec.containers[*].resources.{basis}"
    return {
        name: check_total(name, units, obj=obj, field=f"{field}.{name}")
        for name, units in total.items()
        if units
    }


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    containers = spec.get(key) or []
    if not isinstance(containers, list):
        raise ValueError(f"spec.{key}: expected a list of containers")
    return [c for c in containers if isinstance(c, Mapping)]


def _amounts(container: Mapping[str, Any], path: str, obj: str, basis: Basis) -> Units:
    resources = container.get("resources") or {}
    if basis == "limits":
        return parse_resource_list(resources.get("limits"), obj=obj, field=f"{path}.limits")
    # Requests first: a value bad in both is named where people set it.
    requests = parse_resource_list(resources.get("requests"), obj=obj, field=f"{path}.requests")
    limits = parse_resource_list(resources.get("limits"), obj=obj, field=f"{path}.limits")
    if basis == "limits_or_requests":
        return {**requests, **limits}
    return {**limits, **requests}  # requests default to limits, as the API server does


def _add(total: Units, extra: Mapping[str, int]) -> None:
    for name, units in extra.items():
        total[name] = total.get(name, 0) + units


def _max_into(total: Units, other: Mapping[str, int]) -> None:
    for name, units in other.items():
        total[name] = max(total.get(name, 0), units)
