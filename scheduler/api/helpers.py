"""Small readers over Kubernetes JSON dicts, shared by the api types and the plugins."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler.api.labels import QUEUE_ALLOCATION_GATE, QUEUE_RESERVATION_ANNOTATION


class InputError(ValueError):
    """A Kubernetes object the engine cannot use, naming the object and the field."""

    def __init__(self, obj: str, field: str, problem: str) -> None:
        self.obj, self.field = obj, field
        super().__init__(f"{obj}: {field}: {problem}")


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def describe(obj: Mapping[str, Any], kind: str) -> str:
    m = meta(obj)
    ns = m.get("namespace")
    return f"{kind} {ns}/{m.get('name', '?')}" if ns else f"{kind} {m.get('name', '?')}"


def require_name(obj: Mapping[str, Any], kind: str) -> str:
    name = meta(obj).get("name")
    if not isinstance(name, str) or not name:
        raise InputError(describe(obj, kind), "metadata.name", "required")
    return name


def uid_of(obj: Mapping[str, Any], kind: str) -> str:
    m = meta(obj)
    return m.get("uid") or f"{m.get('namespace', '')}/{require_name(obj, kind)}"


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def scheduling_gates(pod: Mapping[str, Any]) -> list[str]:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    if not isinstance(gates, list):
        raise InputError(describe(pod, "pod"), "spec.schedulingGates", "expected a list")
    return [g.get("name", "") if isinstance(g, Mapping) else str(g) for g in gates]


def has_queue_allocation_gate_annotation(pod: Mapping[str, Any]) -> bool:
    """The pod opted in to gate-controlled scheduling (Volcano's gate-controlled scheduling design)."""
    return annotations_of(pod).get(QUEUE_ALLOCATION_GATE) == "true"


def reservation_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod's gate reservation began (the time Sluice removed its gate after its queue
    check passed), from its annotation; None without one, or when it cannot be read."""
    value = annotations_of(pod).get(QUEUE_RESERVATION_ANNOTATION)
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return stamp.timestamp()


def reservation_stamp(now: float) -> str:
    """The annotation's value for a reservation beginning at ``now`` (seconds)."""
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def has_only_volcano_scheduling_gate(pod: Mapping[str, Any]) -> bool:
    """The pod's only scheduling gate is ours, so removing it makes the pod schedulable."""
    gates = scheduling_gates(pod)
    return len(gates) == 1 and gates[0] == QUEUE_ALLOCATION_GATE


def pod_condition(pod: Mapping[str, Any], cond_type: str) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == cond_type:
            return cond
    return None


INT32 = (-(2**31), 2**31 - 1)  # priorities, minMember, queue weights: int32 in their APIs


def as_int(
    value: Any, *, obj: str, field: str, default: int = 0, bounds: tuple[int, int] = INT32
) -> int:
    """An integer field; anything else, or one outside ``bounds``, is an InputError naming it
    (``1e400`` read as a JSON number is infinity: no integer at all)."""
    if value is None:
        return default
    shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:32]}…"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(obj, field, f"expected an integer, got {shown}")
    if isinstance(value, float) and not value.is_integer():
        raise InputError(obj, field, f"expected an integer, got {shown}")
    try:
        number = int(value)
    except (ValueError, OverflowError):
        raise InputError(obj, field, f"expected an integer, got {shown}") from None
    low, high = bounds
    if not low <= number <= high:
        raise InputError(obj, field, f"{shown} is out of range [{low}, {high}]")
    return number
