"""Building Kubernetes objects from scenario items, with errors that name the file, the item
and the field (``demo.yaml: workload[3] (train): requests.cpu: invalid quantity 'x'``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import DURATION_ANNOTATION, GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler.api.node_matching import pod_constraints
from scheduler.api.quantity import QuantityError, parse_resource_list
from simcluster.api import validation
from simcluster.api.decoding import decode
from simcluster.api.errors import ApiError
from simcluster.api.resources import RESOURCES
from simcluster.api.structural import default_custom, validate_custom

GATE_ANNOTATION = "scheduling.volcano.sh/queue-allocation-gate"
DEFAULT_SCHEDULER = "volcano"

WORKLOAD_KEYS = {
    "at",
    "name",
    "namespace",
    "replicas",
    "count",
    "queue",
    "podGroup",
    "requests",
    "limits",
    "nodeSelector",
    "tolerations",
    "affinity",
    "annotations",
    "labels",
    "duration",
    "gate",
    "schedulerName",
    "priorityClassName",
    "terminationGracePeriodSeconds",
}


# More pods than this from one item is a typo, not a workload (each is a dict in memory).
MAX_REPLICAS = 100_000
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class ScenarioError(ValueError):
    """A scenario that cannot be loaded; the message says where and why."""


@dataclass(frozen=True)
class Where:
    source: str
    path: str

    def named(self, name: str) -> Where:
        return Where(self.source, f"{self.path} ({name})")

    def sub(self, field: str) -> Where:
        return Where(self.source, f"{self.path}.{field}")

    def __str__(self) -> str:
        return f"{self.source}: {self.path}"


def shown(value: Any) -> str:
    """A value in a message, cut short: a scenario's value can be a whole document."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def check_keys(item: Any, allowed: set[str], where: Where) -> None:
    if not isinstance(item, dict):
        raise ScenarioError(f"{where}: expected a mapping, got {type(item).__name__}")
    unknown = sorted((key for key in item if key not in allowed), key=str)
    if unknown:
        key = unknown[0] if isinstance(unknown[0], str) else shown(unknown[0])
        raise ScenarioError(f"{where}: {key[:60]}: unknown field (allowed: {sorted(allowed)})")


def need(item: dict, key: str, kind: type, where: Where) -> Any:
    value = item.get(key)
    if value is None:
        raise ScenarioError(f"{where}: {key}: required")
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ScenarioError(f"{where}: {key}: expected {kind.__name__}, got {shown(value)}")
    return value


def optional_str(item: dict, key: str, where: Where) -> str | None:
    return None if item.get(key) is None else need(item, key, str, where)


def number(
    item: dict, key: str, where: Where, default: float, *, integer: bool = False, what: str = ""
) -> float:
    """A finite number >= 0 (an integer when asked), or ``default`` when absent."""
    value = item.get(key)
    if value is None:
        return default
    kinds = int if integer else int | float
    what = what or ("an integer" if integer else "a number")
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ScenarioError(f"{where}: {key}: expected {what} >= 0, got {shown(value)}")
    return value


def flag(item: dict, key: str, where: Where, default: bool = False) -> bool:
    value = item.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ScenarioError(f"{where}: {key}: expected true or false, got {shown(value)}")
    return value


def string_map(item: dict, key: str, where: Where) -> dict[str, str]:
    """A map of string keys to scalar values, as strings (YAML reads ``tier: 1`` as a number)."""
    value = item.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: {key}: expected a map of string to string")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or isinstance(v, dict | list) or v is None:
            raise ScenarioError(
                f"{where}: {key}[{shown(k)}]: expected a string key and value, got {shown(v)}"
            )
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def maps(item: dict, key: str, where: Where) -> list[dict]:
    """A list of mappings (taints, tolerations)."""
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: {key}: expected a list")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ScenarioError(f"{where}: {key}[{i}]: expected a mapping, got {shown(entry)}")
    return list(value)


def taints(item: dict, key: str, where: Where) -> list[dict]:
    """Node taints: a key, a known effect, a string value (kube-apiserver's validateNodeTaints)."""
    found = maps(item, key, where)
    for i, taint in enumerate(found):
        here = where.sub(f"{key}[{i}]")
        check_keys(taint, {"key", "value", "effect"}, here)
        need(taint, "key", str, here)
        optional_str(taint, "value", here)
        if taint.get("effect") not in TAINT_EFFECTS:
            raise ScenarioError(
                f"{here}: effect: expected one of {', '.join(TAINT_EFFECTS)}, "
                f"got {shown(taint.get('effect'))}"
            )
    return found


def resources(item: dict, key: str, where: Where) -> dict[str, str]:
    """A ResourceList, validated; values kept as quantity strings for the API."""
    value = item.get(key) or {}
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: {key}: expected a map of resource to quantity")
    for name in value:
        if not isinstance(name, str):
            raise ScenarioError(f"{where}: {key}: {shown(name)}: expected a resource name")
    try:
        parse_resource_list(value, obj=str(where), field=key)
    except QuantityError as exc:
        raise ScenarioError(f"{where}: {exc.field}: invalid quantity {shown(exc.value)}") from None
    return {str(k): str(v) for k, v in value.items()}


def api_check(plural: str, obj: dict, where: Where) -> None:
    """The simulated API server's rules for one object (simcluster/api/validation.py): a
    scenario that loads is one whose objects the API would take, said here, at loading, with
    the item, rather than as a refusal at its arrival time."""
    resource = RESOURCES[plural]
    try:
        checked = default_custom(resource, decode(resource, obj))
        validation.validate_quantities_decode(resource, checked)
        validation.validate_name(resource, checked)
        validation.validate_labels(resource, checked)
        validate_custom(resource, checked)
        if plural == "pods":
            validation.validate_pod_create(checked)
    except ApiError as exc:
        raise ScenarioError(f"{where}: {exc.message}") from None


def build_node(item: Any, where: Where) -> list[dict]:
    """One node (``name``) or ``count`` nodes named ``namePrefix-1..count``."""
    check_keys(item, {"name", "namePrefix", "count", "labels", "taints", "capacity"}, where)
    if "name" in item:
        names = [need(item, "name", str, where)]
    else:
        prefix = need(item, "namePrefix", str, where)
        count = need(item, "count", int, where)
        if not 1 <= count <= MAX_REPLICAS:
            raise ScenarioError(f"{where}: count: expected 1 to {MAX_REPLICAS}, got {count}")
        names = [f"{prefix}-{i}" for i in range(1, count + 1)]
    capacity = {"pods": "110", **resources(item, "capacity", where)}
    if set(capacity) == {"pods"}:
        raise ScenarioError(f"{where}: capacity: required")
    labels = string_map(item, "labels", where)
    node_taints = taints(item, "taints", where)
    nodes = [make_node(name, capacity, labels, node_taints) for name in names]
    for node in nodes[:1] + nodes[-1:]:  # the rest differ only by their number
        api_check("nodes", node, where.named(node["metadata"]["name"]))
    return nodes


def make_node(name: str, capacity: dict, labels: dict, taints: list | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }


def build_workload_item(item: Any, where: Where) -> tuple[float, list[dict], list[dict]]:
    check_keys(item, WORKLOAD_KEYS, where)
    name = need(item, "name", str, where)
    where = where.named(name)
    at = number(item, "at", where, 0.0, what="seconds")
    namespace = optional_str(item, "namespace", where) or "default"
    replicas = item.get("replicas", item.get("count"))
    if replicas is not None and (
        isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1
    ):
        raise ScenarioError(
            f"{where}: replicas: expected a positive integer, got {shown(replicas)}"
        )
    if replicas is not None and replicas > MAX_REPLICAS:
        raise ScenarioError(f"{where}: replicas: at most {MAX_REPLICAS}, got {replicas}")
    groups = []
    if item.get("podGroup") is not None:
        groups.append(_podgroup(item, name, namespace, replicas or 1, where))
    names = [name] if replicas is None else [f"{name}-{i}" for i in range(replicas)]
    pods = [_pod(item, pod_name, namespace, name if groups else None, where) for pod_name in names]
    for pod in pods[:1] + pods[-1:]:  # the rest differ only by their number
        api_check("pods", pod, where)
    return float(at), groups, pods


def _podgroup(item: dict, name: str, namespace: str, replicas: int, item_where: Where) -> dict:
    where = item_where.sub("podGroup")
    spec = item["podGroup"]
    check_keys(spec, {"minMember", "queue", "minResources", "priorityClassName"}, where)
    spec = {"minMember": replicas, **spec}
    need(spec, "minMember", int, where)
    spec.setdefault("queue", optional_str(item, "queue", item_where) or "default")
    need(spec, "queue", str, where)
    optional_str(spec, "priorityClassName", where)
    if spec.get("minResources") is not None:
        spec["minResources"] = resources(spec, "minResources", where)
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    api_check("podgroups", podgroup, where)
    return podgroup


def _pod(item: dict, name: str, namespace: str, group: str | None, where: Where) -> dict:
    annotations = string_map(item, "annotations", where)
    queue = optional_str(item, "queue", where)
    if queue:
        annotations[QUEUE_NAME_ANNOTATION] = queue
    if group:
        annotations[GROUP_NAME_ANNOTATION] = group
    if item.get("duration") is not None:
        annotations[DURATION_ANNOTATION] = str(number(item, "duration", where, 0, what="seconds"))
    if flag(item, "gate", where):
        annotations[GATE_ANNOTATION] = "true"
    extra_spec: dict[str, Any] = {}
    if item.get("nodeSelector") is not None:
        extra_spec["nodeSelector"] = string_map(item, "nodeSelector", where)
    if item.get("tolerations") is not None:
        extra_spec["tolerations"] = maps(item, "tolerations", where)
    if item.get("affinity") is not None:
        extra_spec["affinity"] = need(item, "affinity", dict, where)
    if item.get("priorityClassName") is not None:
        extra_spec["priorityClassName"] = need(item, "priorityClassName", str, where)
    if item.get("terminationGracePeriodSeconds") is not None:
        seconds = number(
            item, "terminationGracePeriodSeconds", where, 0, integer=True, what="whole seconds"
        )
        extra_spec["terminationGracePeriodSeconds"] = seconds
    pod = make_pod(
        name,
        namespace,
        requests=resources(item, "requests", where),
        limits=resources(item, "limits", where),
        annotations=annotations,
        labels=string_map(item, "labels", where),
        extra_spec=extra_spec,
        scheduler_name=optional_str(item, "schedulerName", where) or DEFAULT_SCHEDULER,
    )
    try:
        pod_constraints(pod, obj=str(where))  # nodeSelector, affinity, tolerations well-formed
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    return pod


def make_pod(
    name: str,
    namespace: str,
    *,
    requests: dict[str, str],
    limits: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    extra_spec: dict | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER,
) -> dict:
    container_resources: dict[str, dict] = {"requests": dict(requests)}
    if limits:
        container_resources["limits"] = dict(limits)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": container_resources,
                }
            ],
            **(extra_spec or {}),
        },
    }
