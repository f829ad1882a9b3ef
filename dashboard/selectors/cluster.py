"""Reads from the cluster through the kubernetes client, each failure named for the page.

Pages that need the cluster call these per request, so each call is one list with the
configured timeout; a cluster that cannot be reached raises ``ClusterUnavailable``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import urllib3
from django.conf import settings
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException

from dashboard import kube
from scheduler.api.labels import QUEUE_ALLOCATION_GATE, SCALE_UP_ANNOTATION

AUTOSCALER_REASONS = {"TriggeredScaleUp", "NotTriggerScaleUp", "ScaleDown"}


class ClusterUnavailable(Exception):
    """The cluster could not be read; the message says which request failed and why."""


def cluster_call(what: str, request):
    try:
        return request(_request_timeout=settings.SLUICE_KUBE_TIMEOUT)
    except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
        raise ClusterUnavailable(f"cluster unreachable: {what}: {exc}") from exc


def core_api() -> client.CoreV1Api:
    try:
        return client.CoreV1Api(kube.api_client())
    except (RuntimeError, ConfigException) as exc:
        raise ClusterUnavailable(str(exc)) from exc


def namespace_list() -> list[dict]:
    """Every namespace with its opt-in label."""
    items = cluster_call("list namespaces", core_api().list_namespace).items
    return [
        {
            "name": ns.metadata.name,
            "opted_in": (ns.metadata.labels or {}).get(QUEUE_ALLOCATION_GATE) == "true",
        }
        for ns in sorted(items, key=lambda n: n.metadata.name)
    ]


def queue_specs() -> dict[str, dict]:
    """Volcano queues by name: parent, guarantee, weight, reclaimable (the tree's shape)."""
    custom = client.CustomObjectsApi(core_api().api_client)
    listing = cluster_call(
        "list queues",
        lambda **kw: custom.list_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", **kw
        ),
    )
    specs = {}
    for item in listing.get("items", []):
        spec = item.get("spec") or {}
        specs[item["metadata"]["name"]] = {
            "parent": spec.get("parent") or ("" if item["metadata"]["name"] == "root" else "root"),
            "guarantee": (spec.get("guarantee") or {}).get("resource") or {},
            "weight": spec.get("weight", 1),
            "reclaimable": spec.get("reclaimable", True),
        }
    return specs


def scale_up_records() -> list[dict]:
    """The simulated autoscalers' records on the nodes they added, newest first."""
    nodes = cluster_call("list nodes", core_api().list_node).items
    records = []
    for node in nodes:
        raw = (node.metadata.annotations or {}).get(SCALE_UP_ANNOTATION)
        if not raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # not ours to judge; an unreadable record is left out
        record["at"] = datetime.fromtimestamp(record["time"], tz=UTC)
        records.append(record)
    return sorted(records, key=lambda r: r["time"], reverse=True)


def autoscaler_events(limit: int = 200) -> list[dict]:
    """Scale-up, no-scale-up and scale-down events, newest first."""
    items = cluster_call("list events", core_api().list_event_for_all_namespaces).items
    events = []
    for e in items:
        if e.reason not in AUTOSCALER_REASONS:
            continue
        at = e.last_timestamp or e.event_time or e.first_timestamp or e.metadata.creation_timestamp
        events.append(
            {
                "at": at,
                "reason": e.reason,
                "kind": e.involved_object.kind,
                "namespace": e.involved_object.namespace or "",
                "name": e.involved_object.name,
                "message": e.message or "",
            }
        )
    events.sort(key=lambda e: e["at"] or datetime.min.replace(tzinfo=UTC), reverse=True)
    return events[:limit]
