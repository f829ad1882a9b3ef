"""Patch flavours: strategic merge (the fields Sluice and kubectl use), merge and JSON patch."""

from __future__ import annotations

import json

import pytest

from simcluster.api.errors import ApiError
from simcluster.api.patch import apply_patch, strategic_merge
from tests.builders import body, namespace, pod, queue
from tests.simcluster.api.helpers import http

SMP = "application/strategic-merge-patch+json"


def test_strategic_merge_merges_conditions_by_type():
    current = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "False"},
            ]
        }
    }
    patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}}
    merged = strategic_merge(current, patch)
    assert merged["status"]["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_strategic_merge_deletes_a_gate_by_name_and_keeps_others():
    current = {"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}}
    merged = strategic_merge(
        current, {"spec": {"schedulingGates": [{"name": "a", "$patch": "delete"}]}}
    )
    assert merged["spec"]["schedulingGates"] == [{"name": "b"}]


def test_strategic_merge_handles_kubectl_directives_and_null():
    current = {
        "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
        "spec": {"containers": [{"name": "c", "image": "old"}]},
    }
    patch = {
        "metadata": {"labels": {"a": None, "c": "3"}, "$deleteFromPrimitiveList/finalizers": ["x"]},
        "spec": {
            "$setElementOrder/containers": [{"name": "c"}],
            "containers": [{"name": "c", "image": "new"}],
        },
    }
    merged = strategic_merge(current, patch)
    assert merged["metadata"] == {"labels": {"b": "2", "c": "3"}, "finalizers": []}
    assert merged["spec"]["containers"] == [{"name": "c", "image": "new"}]


def test_strategic_merge_replace_directive_replaces_a_list():
    current = {"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}}
    patch = {"spec": {"schedulingGates": [{"$patch": "replace"}, {"name": "b"}]}}
    assert strategic_merge(current, patch)["spec"]["schedulingGates"] == [{"name": "b"}]


def test_merge_patch_replaces_lists_and_removes_nulls():
    current = {
        "spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]},
        "metadata": {"labels": {"x": "1"}},
    }
    patch = {"spec": {"schedulingGates": [{"name": "b"}]}, "metadata": {"labels": {"x": None}}}
    result = apply_patch(
        "application/merge-patch+json", current, json.dumps(patch).encode(), custom=False
    )
    assert result == {"spec": {"schedulingGates": [{"name": "b"}]}, "metadata": {"labels": {}}}


def test_strategic_merge_on_a_custom_resource_is_unsupported_media_type():
    with pytest.raises(ApiError) as caught:
        apply_patch(SMP, {}, b"{}", custom=True)
    assert caught.value.code == 415


def test_json_patch_removing_a_gate_over_http(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=("a", "b"))))
    ops = [
        {"op": "test", "path": "/spec/schedulingGates/0/name", "value": "a"},
        {"op": "remove", "path": "/spec/schedulingGates/0"},
    ]
    patched = sim.core.patch_namespaced_pod("web-1", "default", ops)
    assert [g.name for g in patched.spec.scheduling_gates] == ["b"]


def test_failed_json_patch_test_is_422(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=("a",))))
    ops = [{"op": "test", "path": "/spec/schedulingGates/0/name", "value": "zzz"}]
    code, status = http(
        sim.server.url,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-1",
        ops,
        content_type="application/json-patch+json",
    )
    assert code == 422 and status["kind"] == "Status"


def test_unknown_patch_type_is_415(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    code, _ = http(
        sim.server.url,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-1",
        {},
        content_type="text/plain",
    )
    assert code == 415


def test_labels_and_annotations_by_strategic_merge(sim):
    sim.core.create_namespace(body(namespace("team-a")))
    patch = {
        "metadata": {
            "labels": {"scheduling.volcano.sh/queue-allocation-gate": "true"},
            "annotations": {"a": "b"},
        }
    }
    patched = sim.core.patch_namespace("team-a", patch, _content_type=SMP)
    assert patched.metadata.labels["scheduling.volcano.sh/queue-allocation-gate"] == "true"
    assert patched.metadata.annotations == {"a": "b"}


def test_queue_merge_patch(sim):
    sim.custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", body(queue("q1", weight=1))
    )
    sim.custom.patch_cluster_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "q1",
        {"spec": {"weight": 5}},
        _content_type="application/merge-patch+json",
    )
    assert (
        sim.custom.get_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", "q1")[
            "spec"
        ]["weight"]
        == 5
    )
