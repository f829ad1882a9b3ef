"""The only way the engine writes to a cluster. A real client comes from ``scheduler.kube``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Obj = Mapping[str, Any]


@runtime_checkable
class ClusterClient(Protocol):
    def bind(self, pod: Obj, node_name: str) -> None: ...
    def evict(self, pod: Obj, reason: str) -> None: ...
    def remove_scheduling_gate(self, pod: Obj) -> None: ...
    def patch_pod_condition(self, pod: Obj, condition: dict) -> None: ...
    def patch_nominated_node(self, pod: Obj, node_name: str | None) -> None: ...
    def patch_podgroup_status(self, podgroup: Obj, status: dict) -> None: ...
    def record_event(self, obj: Obj, event_type: str, reason: str, message: str) -> None: ...


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


@dataclass
class RecordingClusterClient:
    """A fake that records every call as ``(method, object key, *args)``; for tests.

    ``fail_bind`` names pods (``ns/name``) whose bind raises, to exercise error paths.
    """

    calls: list[tuple] = field(default_factory=list)
    fail_bind: set[str] = field(default_factory=set)

    def bind(self, pod: Obj, node_name: str) -> None:
        if _key(pod) in self.fail_bind:
            raise RuntimeError(f"bind of {_key(pod)} refused")
        self.calls.append(("bind", _key(pod), node_name))

    def evict(self, pod: Obj, reason: str) -> None:
        self.calls.append(("evict", _key(pod), reason))

    def remove_scheduling_gate(self, pod: Obj) -> None:
        self.calls.append(("remove_scheduling_gate", _key(pod)))

    def patch_pod_condition(self, pod: Obj, condition: dict) -> None:
        self.calls.append(("patch_pod_condition", _key(pod), condition))

    def patch_nominated_node(self, pod: Obj, node_name: str | None) -> None:
        self.calls.append(("patch_nominated_node", _key(pod), node_name))

    def patch_podgroup_status(self, podgroup: Obj, status: dict) -> None:
        self.calls.append(("patch_podgroup_status", _key(podgroup), status))

    def record_event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.calls.append(("record_event", _key(obj), event_type, reason, message))

    def of(self, method: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == method]

    def binds(self) -> dict[str, str]:
        return {c[1]: c[2] for c in self.of("bind")}
