"""CRUD, list and selectors through the official kubernetes client."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from tests.builders import body, namespace, node, pod, podgroup, queue
from tests.simcluster.api.helpers import http

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"


def test_discovery_documents_list_core_and_volcano_resources(sim):
    assert http(sim.server.url, "GET", "/version")[1]["major"] == "1"
    assert http(sim.server.url, "GET", "/api")[1]["versions"] == ["v1"]
    core = http(sim.server.url, "GET", "/api/v1")[1]
    names = {r["name"] for r in core["resources"]}
    assert {
        "pods",
        "pods/status",
        "pods/binding",
        "pods/eviction",
        "nodes",
        "namespaces",
        "events",
        "configmaps",
        "secrets",
    } <= names
    groups = http(sim.server.url, "GET", "/apis")[1]
    assert {g["name"] for g in groups["groups"]} == {
        GROUP, "scheduling.k8s.io", "policy", "coordination.k8s.io",
        "admissionregistration.k8s.io",
    }  # fmt: skip
    volcano = http(sim.server.url, "GET", f"/apis/{GROUP}/{VERSION}")[1]
    assert {r["name"]: r["namespaced"] for r in volcano["resources"]}["queues"] is False


def test_pod_create_get_list_delete(sim):
    created = sim.core.create_namespaced_pod("default", body(pod("web-1", labels={"app": "web"})))
    assert created.status.phase == "Pending"
    assert created.metadata.uid and created.metadata.resource_version
    assert sim.core.read_namespaced_pod("web-1", "default").spec.containers[0].image == "busybox"
    assert [p.metadata.name for p in sim.core.list_pod_for_all_namespaces().items] == ["web-1"]
    sim.core.delete_namespaced_pod("web-1", "default")
    assert sim.core.list_namespaced_pod("default").items == []


def test_not_found_is_a_status_naming_the_object(sim):
    with pytest.raises(ApiException) as caught:
        sim.core.read_namespaced_pod("web-1", "default")
    status = json.loads(caught.value.body)
    assert caught.value.status == 404
    assert status["kind"] == "Status" and status["reason"] == "NotFound" and status["code"] == 404
    assert status["message"] == 'pods "web-1" not found'


def test_create_twice_is_already_exists(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    with pytest.raises(ApiException) as caught:
        sim.core.create_namespaced_pod("default", body(pod("web-1")))
    assert caught.value.status == 409
    assert json.loads(caught.value.body)["reason"] == "AlreadyExists"


def test_label_selector_filters_lists(sim):
    for name, app in (("a", "web"), ("b", "db"), ("c", "web")):
        sim.core.create_namespaced_pod("default", body(pod(name, labels={"app": app})))

    def names(sel):
        return [
            p.metadata.name
            for p in sim.core.list_namespaced_pod("default", label_selector=sel).items
        ]  # noqa: E731

    assert names("app=web") == ["a", "c"]
    assert names("app!=web") == ["b"]
    assert names("app in (db,other)") == ["b"]
    assert names("missing") == []


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-1", ["bound"]),
        ("spec.nodeName=", ["loose"]),
        ("spec.schedulerName=volcano", ["bound", "loose"]),
        ("metadata.name=loose", ["loose"]),
        ("metadata.namespace=default,status.phase=Pending", ["bound", "loose"]),
        ("status.phase!=Pending", []),
    ],
)
def test_field_selector_filters_pods(sim, selector, expected):
    sim.core.create_namespaced_pod("default", body(pod("bound", node_name="node-1")))
    sim.core.create_namespaced_pod("default", body(pod("loose")))
    listed = sim.core.list_pod_for_all_namespaces(field_selector=selector).items
    assert sorted(p.metadata.name for p in listed) == expected


def test_unsupported_field_selector_is_a_bad_request(sim):
    with pytest.raises(ApiException) as caught:
        sim.core.list_pod_for_all_namespaces(field_selector="spec.hostname=x")
    assert caught.value.status == 400


def test_events_are_found_by_involved_object(sim):
    event = {
        "metadata": {"name": "web-1.1"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u1"},
        "reason": "FailedScheduling",
        "message": "0/3 nodes are available",
        "type": "Warning",
    }
    sim.core.create_namespaced_event("default", event)
    selector = "involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.kind=Pod"
    found = sim.core.list_namespaced_event("default", field_selector=selector).items
    assert [e.reason for e in found] == ["FailedScheduling"]
    assert (
        sim.core.list_namespaced_event("default", field_selector="involvedObject.name=x").items
        == []
    )


def test_nodes_and_namespaces_are_cluster_scoped(sim):
    sim.core.create_node(body(node("node-1", labels={"zone": "a"})))
    sim.core.create_namespace(body(namespace("team-a")))
    assert [n.metadata.name for n in sim.core.list_node(label_selector="zone=a").items] == [
        "node-1"
    ]
    assert sim.core.read_namespace("team-a").status.phase == "Active"


def test_queues_and_podgroups_through_custom_objects_api(sim):
    sim.custom.create_cluster_custom_object(
        GROUP, VERSION, "queues", body(queue("research", weight=2))
    )
    group = body(podgroup("pg-1", 2, queue="research"))
    sim.custom.create_namespaced_custom_object(GROUP, VERSION, "default", "podgroups", group)
    listed = sim.custom.list_cluster_custom_object(GROUP, VERSION, "queues")
    assert [q["metadata"]["name"] for q in listed["items"]] == ["research"]
    assert listed["items"][0]["status"]["state"] == "Open"
    sim.custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        "podgroups",
        "pg-1",
        {"status": {"phase": "Inqueue"}},
        _content_type="application/merge-patch+json",
    )
    fetched = sim.custom.get_namespaced_custom_object(
        GROUP, VERSION, "default", "podgroups", "pg-1"
    )
    assert fetched["status"]["phase"] == "Inqueue"
    sim.custom.delete_cluster_custom_object(GROUP, VERSION, "queues", "research")
    assert sim.custom.list_cluster_custom_object(GROUP, VERSION, "queues")["items"] == []


def test_update_replaces_the_object(sim):
    created = sim.core.create_namespaced_pod("default", body(pod("web-1")))
    created.metadata.labels = {"tier": "gold"}
    updated = sim.core.replace_namespaced_pod("web-1", "default", created)
    assert updated.metadata.labels == {"tier": "gold"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
