"""QueueInfo: a Volcano Queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.helpers import as_int, describe, meta, require_name
from scheduler.api.labels import ROOT_QUEUE
from scheduler.api.quantity import CPU, MEMORY, QuantityError, parse_resource_list, quantity_value
from scheduler.api.resource import Resource


class QueueCycleError(ValueError):
    """``spec.parent`` would close a cycle in the queue hierarchy."""


class QueueInfo:
    def __init__(self, queue: Mapping[str, Any]) -> None:
        obj = describe(queue, "queue")
        self.name = require_name(queue, "queue")
        self.uid = self.name
        self.queue = queue
        spec = queue.get("spec") or {}
        self.weight = as_int(spec.get("weight"), obj=obj, field="spec.weight", default=1)
        self.priority = as_int(spec.get("priority"), obj=obj, field="spec.priority")
        self.capability = _capability(spec.get("capability"), obj)
        self.deserved = Resource(
            parse_resource_list(spec.get("deserved"), obj=obj, field="spec.deserved")
        )
        # The dimensions the spec names, zeros included: Resource drops a zero, but a
        # capability of ``nvidia.com/gpu: 0`` forbids GPUs (an absent one does not limit), and a
        # deserved zero is a dimension Volcano's capacity reclaim compares.
        self.capability_declared = _declared(spec.get("capability"), positive_only=(CPU, MEMORY))
        self.deserved_declared = _declared(spec.get("deserved"))
        guarantee = (spec.get("guarantee") or {}).get("resource")
        self.guarantee = Resource(
            parse_resource_list(guarantee, obj=obj, field="spec.guarantee.resource")
        )
        self.parent = spec.get("parent") or (None if self.name == ROOT_QUEUE else ROOT_QUEUE)
        self.state = (queue.get("status") or {}).get("state") or "Open"
        self.reclaimable = spec.get("reclaimable", True) is not False
        self.creation = meta(queue).get("creationTimestamp") or ""
        self.is_implicit = False  # a Queue object in the cluster
        # As written, for the report: quantity strings, not engine units.
        self.spec_capability = as_written(spec.get("capability"))
        self.spec_deserved = as_written(spec.get("deserved"))
        self.spec_guarantee = as_written(guarantee)
        # CPU or memory capability at or below zero: no limit (Volcano's capacity plugin reads
        # it so; its admission webhook would refuse the Queue, its scheduler says nothing).
        self.unlimited = unlimited_by_rule(self.spec_capability)

    @classmethod
    def implicit(cls, name: str) -> QueueInfo:
        """A queue referenced by jobs but not (yet) created, e.g. ``default`` or ``root``."""
        info = cls({"metadata": {"name": name}, "spec": {}})
        info.is_implicit = True
        return info

    def is_open(self) -> bool:
        return self.state == "Open"

    def order_key(self) -> tuple:
        return (self.creation, self.uid)


def _capability(raw: Any, obj: str) -> Resource | None:
    """``spec.capability``; CPU or memory ≤ 0 means unlimited on that dimension."""
    if not raw:
        return None
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if not (k in (CPU, MEMORY) and _non_positive(v))}
    return Resource(parse_resource_list(raw, obj=obj, field="spec.capability"))


def unlimited_by_rule(capability: Mapping[str, str]) -> dict[str, str]:
    """The CPU and memory capabilities at or below zero, as written: Volcano's capacity plugin
    reads each as no limit on that resource."""
    return {k: v for k, v in capability.items() if k in (CPU, MEMORY) and _non_positive(v)}


def as_written(raw: Any) -> dict[str, str]:
    """A resource list as the object spells it (``{"cpu": "48"}``), not parsed."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def _declared(raw: Any, positive_only: tuple[str, ...] = ()) -> frozenset[str]:
    if not isinstance(raw, dict):
        return frozenset()
    return frozenset(k for k in raw if not (k in positive_only and _non_positive(raw[k])))


def _non_positive(value: Any) -> bool:
    try:
        return quantity_value(value, obj="", field="") <= 0
    except QuantityError:
        return False  # let parse_resource_list report it with the field name


def queue_problem(name: str, queues: dict[str, QueueInfo]) -> str | None:
    """Why ``name`` cannot be placed in the tree (a cycle or a missing ancestor), else None."""
    seen = [name]
    current = name
    while current != ROOT_QUEUE:
        parent = queues[current].parent or ROOT_QUEUE
        if parent in seen:
            path = " -> ".join([*seen, parent])
            return f"queue {name}: spec.parent forms a cycle: {path}"
        if parent not in queues:
            return f"queue {current}: spec.parent: queue {parent!r} does not exist"
        seen.append(parent)
        current = parent
    return None
