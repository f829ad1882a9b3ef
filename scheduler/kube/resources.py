"""The kinds the scheduler lists and watches, and how to reach each through the client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_VERSION = "v1beta1"


@dataclass(frozen=True)
class Resource:
    kind: str  # plural name: pods, nodes, queues, podgroups, namespaces
    list_call: Callable[[client.ApiClient], Callable[..., Any]]


def _core(method: str) -> Callable[[client.ApiClient], Callable[..., Any]]:
    return lambda api: getattr(client.CoreV1Api(api), method)


def _volcano(plural: str) -> Callable[[client.ApiClient], Callable[..., Any]]:
    def call(api: client.ApiClient) -> Callable[..., Any]:
        custom = client.CustomObjectsApi(api)
        return lambda **kw: custom.list_cluster_custom_object(
            VOLCANO_GROUP, VOLCANO_VERSION, plural, **kw
        )

    return call


RESOURCES = {
    "pods": Resource("pods", _core("list_pod_for_all_namespaces")),
    "nodes": Resource("nodes", _core("list_node")),
    "namespaces": Resource("namespaces", _core("list_namespace")),
    "queues": Resource("queues", _volcano("queues")),
    "podgroups": Resource("podgroups", _volcano("podgroups")),
    "priorityclasses": Resource(
        "priorityclasses", lambda api: client.SchedulingV1Api(api).list_priority_class
    ),
    "poddisruptionbudgets": Resource(
        "poddisruptionbudgets",
        lambda api: client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces,
    ),
}
