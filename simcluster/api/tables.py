"""``meta.k8s.io/v1`` Tables, the server-side printing ``kubectl get`` asks for.

Columns and cell values follow kube-apiserver's printers (pods: NAME READY STATUS RESTARTS AGE,
and with ``-o wide`` IP NODE NOMINATED NODE READINESS GATES).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Column = tuple[str, str, int, Callable[[dict, float], object]]  # name, type, priority, cell


def human_duration(seconds: float) -> str:
    """kubectl's short ages: 45s, 3m20s, 42m, 5h3m, 2d4h, 30d."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d" if days < 365 * 2 else f"{days // 365}y"


def age_since(timestamp: str | None, now: float) -> str:
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return human_duration(now - then.timestamp())


def _age(obj: dict, now: float) -> str:
    return age_since(obj["metadata"].get("creationTimestamp"), now)


def _name(obj: dict, now: float) -> str:
    return obj["metadata"]["name"]


def pod_status_reason(pod: dict) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        reason = waiting.get("reason") or terminated.get("reason") or reason
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Unknown" if reason == "NodeLost" else "Terminating"
    return reason


def _ready(pod: dict, now: float) -> str:
    total = len((pod.get("spec") or {}).get("containers") or [])
    ready = sum(
        1 for c in (pod.get("status") or {}).get("containerStatuses") or [] if c.get("ready")
    )
    return f"{ready}/{total}"


def _restarts(pod: dict, now: float) -> int:
    return sum(
        c.get("restartCount", 0) for c in (pod.get("status") or {}).get("containerStatuses") or []
    )


def _node_status(node: dict, now: float) -> str:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    status = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(node: dict, now: float) -> str:
    prefix = "node-role.kubernetes.io/"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _address(kind: str) -> Callable[[dict, float], str]:
    def cell(node: dict, now: float) -> str:
        addresses = (node.get("status") or {}).get("addresses") or []
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    return cell


def _field(*path: str, default: str = "<none>") -> Callable[[dict, float], object]:
    def cell(obj: dict, now: float) -> object:
        value: object = obj
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        return default if value in (None, "") else value

    return cell


def _event_last_seen(event: dict, now: float) -> str:
    stamp = (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event["metadata"].get("creationTimestamp")
    )
    return age_since(stamp, now)


def _event_object(event: dict, now: float) -> str:
    involved = event.get("involvedObject") or {}
    return f"{(involved.get('kind') or '').lower()}/{involved.get('name', '')}"


def _int_or_percent(field: str) -> Callable[[dict, float], str]:
    """A PDB's minAvailable or maxUnavailable as ``IntOrString.String()``, else N/A."""

    def cell(pdb: dict, now: float) -> str:
        value = (pdb.get("spec") or {}).get(field)
        return "N/A" if value is None else str(value)

    return cell


NAME: Column = ("Name", "string", 0, _name)
AGE: Column = ("Age", "string", 0, _age)

COLUMNS: dict[str, list[Column]] = {
    "pods": [
        NAME,
        ("Ready", "string", 0, _ready),
        ("Status", "string", 0, lambda pod, now: pod_status_reason(pod)),
        ("Restarts", "string", 0, _restarts),
        AGE,
        ("IP", "string", 1, _field("status", "podIP")),
        ("Node", "string", 1, _field("spec", "nodeName")),
        ("Nominated Node", "string", 1, _field("status", "nominatedNodeName")),
        ("Readiness Gates", "string", 1, lambda pod, now: "<none>"),
    ],
    "nodes": [
        NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        AGE,
        ("Version", "string", 0, _field("status", "nodeInfo", "kubeletVersion", default="")),
        ("Internal-IP", "string", 1, _address("InternalIP")),
        ("External-IP", "string", 1, _address("ExternalIP")),
    ],
    "namespaces": [NAME, ("Status", "string", 0, _field("status", "phase", default="Active")), AGE],
    "events": [
        ("Last Seen", "string", 0, _event_last_seen),
        ("Type", "string", 0, _field("type", default="")),
        ("Reason", "string", 0, _field("reason", default="")),
        ("Object", "string", 0, _event_object),
        ("Message", "string", 0, _field("message", default="")),
    ],
    "configmaps": [
        NAME,
        (
            "Data",
            "integer",
            0,
            lambda cm, now: len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
        ),
        AGE,
    ],
    "priorityclasses": [
        NAME,
        ("Value", "integer", 0, _field("value", default="")),
        ("Global-Default", "boolean", 0, lambda pc, now: bool(pc.get("globalDefault"))),
        AGE,
        ("PreemptionPolicy", "string", 0, _field("preemptionPolicy", default="")),
    ],
    "queues": [
        NAME,
        ("State", "string", 0, _field("status", "state", default="")),
        ("Weight", "integer", 1, _field("spec", "weight", default="")),
        AGE,
    ],
    "podgroups": [
        NAME,
        ("Status", "string", 0, _field("status", "phase", default="")),
        ("MinMember", "integer", 0, _field("spec", "minMember", default="")),
        ("Queue", "string", 1, _field("spec", "queue", default="")),
        AGE,
    ],
    "poddisruptionbudgets": [
        NAME,
        ("Min Available", "string", 0, _int_or_percent("minAvailable")),
        ("Max Unavailable", "string", 0, _int_or_percent("maxUnavailable")),
        (
            "Allowed Disruptions",
            "integer",
            0,
            lambda pdb, now: int((pdb.get("status") or {}).get("disruptionsAllowed") or 0),
        ),
        AGE,
    ],
    "leases": [NAME, ("Holder", "string", 0, _field("spec", "holderIdentity", default="")), AGE],
    # kubectl get secrets: NAME TYPE DATA AGE (pkg/printers/internalversion printSecret)
    "secrets": [
        NAME,
        ("Type", "string", 0, _field("type", default="")),
        ("Data", "integer", 0, lambda secret, now: len(secret.get("data") or {})),
        AGE,
    ],
    # NAME WEBHOOKS AGE (printMutatingWebhook)
    "mutatingwebhookconfigurations": [
        NAME,
        ("Webhooks", "integer", 0, lambda mwc, now: len(mwc.get("webhooks") or [])),
        AGE,
    ],
}


def render_table(
    plural: str, items: list[dict], now: float, include: str, resource_version: str
) -> dict:
    """A Table of ``items``; ``include`` is includeObject: None, Metadata (default) or Object."""
    columns = COLUMNS[plural]
    definitions = [
        {
            "name": name,
            "type": kind,
            "format": "name" if name == "Name" else "",
            "description": name,
            "priority": priority,
        }
        for name, kind, priority, _ in columns
    ]
    rows = [
        {"cells": [cell(obj, now) for *_, cell in columns], "object": _row_object(obj, include)}
        for obj in items
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }


def _row_object(obj: dict, include: str) -> dict | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }
