"""Test doubles for the engine's ports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = Mapping[str, Any]


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


@dataclass
class RecordingClusterClient:
    """A ``scheduler.cache.ClusterClient`` that records every call as
    ``(method, object key, *args)`` instead of writing to a cluster.

    ``fail`` holds ``(method, "ns/name")`` pairs whose call raises, to exercise error paths.
    """

    calls: list[tuple] = field(default_factory=list)
    fail: set[tuple[str, str]] = field(default_factory=set)

    def _call(self, method: str, obj: Obj, *args: Any) -> None:
        if (method, _key(obj)) in self.fail:
            raise RuntimeError(f"{method} of {_key(obj)} refused")
        self.calls.append((method, _key(obj), *args))

    def bind(self, pod: Obj, node_name: str) -> None:
        self._call("bind", pod, node_name)

    def evict(self, pod: Obj, reason: str) -> None:
        self._call("evict", pod, reason)

    def stamp_reservation(self, pod: Obj, reserved_at: str) -> None:
        self._call("stamp_reservation", pod, reserved_at)

    def remove_scheduling_gate(self, pod: Obj, reserved_at: str | None = None) -> None:
        self._call("remove_scheduling_gate", pod, *([reserved_at] if reserved_at else []))

    def patch_pod_condition(self, pod: Obj, condition: dict) -> None:
        self._call("patch_pod_condition", pod, condition)

    def patch_nominated_node(self, pod: Obj, node_name: str | None) -> None:
        self._call("patch_nominated_node", pod, node_name)

    def patch_podgroup_status(self, podgroup: Obj, status: dict) -> None:
        self._call("patch_podgroup_status", podgroup, status)

    def record_event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self._call("record_event", obj, event_type, reason, message)

    def of(self, method: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == method]

    def binds(self) -> dict[str, str]:
        return {c[1]: c[2] for c in self.of("bind")}
