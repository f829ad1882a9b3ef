"""Kubernetes' rules, each with a test that fails if the rule is dropped."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from tests.builders import binding, body, namespace, pod
from tests.simcluster.api.helpers import http

GATE = "scheduling.volcano.sh/queue-allocation-gate"
SMP = "application/strategic-merge-patch+json"


def error_of(call, *args, **kwargs) -> tuple[int, dict]:
    with pytest.raises(ApiException) as caught:
        call(*args, **kwargs)
    return caught.value.status, json.loads(caught.value.body)


def condition(pod_object, condition_type: str):
    return next(c for c in pod_object.status.conditions if c.type == condition_type)


def test_stale_resource_version_on_update_is_a_conflict(sim):
    first = sim.core.create_namespaced_pod("default", body(pod("web-1")))
    sim.core.patch_namespaced_pod(
        "web-1", "default", {"metadata": {"labels": {"a": "1"}}}, _content_type=SMP
    )
    first.metadata.labels = {"b": "2"}
    code, status = error_of(sim.core.replace_namespaced_pod, "web-1", "default", first)
    assert code == 409 and status["reason"] == "Conflict"
    assert 'pods "web-1"' in status["message"] and "has been modified" in status["message"]


def test_stale_resource_version_on_patch_is_a_conflict(sim):
    first = sim.core.create_namespaced_pod("default", body(pod("web-1")))
    sim.core.patch_namespaced_pod(
        "web-1", "default", {"metadata": {"labels": {"a": "1"}}}, _content_type=SMP
    )
    stale = {"metadata": {"resourceVersion": first.metadata.resource_version, "labels": {"b": "2"}}}
    code, _ = error_of(sim.core.patch_namespaced_pod, "web-1", "default", stale, _content_type=SMP)
    assert code == 409
    current = {
        "metadata": {
            "resourceVersion": sim.core.read_namespaced_pod(
                "web-1", "default"
            ).metadata.resource_version
        }
    }
    sim.core.patch_namespaced_pod("web-1", "default", current, _content_type=SMP)


def test_gated_pod_gets_scheduling_gated_condition_and_pending_phase(sim):
    created = sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    assert created.status.phase == "Pending"
    scheduled = condition(created, "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "SchedulingGated")


def test_adding_a_scheduling_gate_is_invalid(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    patch = {"spec": {"schedulingGates": [{"name": GATE}, {"name": "example.com/other"}]}}
    code, status = error_of(
        sim.core.patch_namespaced_pod, "web-1", "default", patch, _content_type=SMP
    )
    assert code == 422 and status["reason"] == "Invalid"
    assert "only deletion is allowed" in status["message"]
    assert status["details"]["causes"][0]["field"] == "spec.schedulingGates"


def test_adding_a_gate_to_an_ungated_pod_is_invalid(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    patch = [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GATE}]}]
    code, status = error_of(sim.core.patch_namespaced_pod, "web-1", "default", patch)
    assert code == 422 and "only deletion is allowed" in status["message"]


def test_removing_a_scheduling_gate_is_allowed(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    patch = {"spec": {"schedulingGates": [{"$patch": "delete", "name": GATE}]}}
    patched = sim.core.patch_namespaced_pod("web-1", "default", patch, _content_type=SMP)
    assert not patched.spec.scheduling_gates


def test_binding_a_gated_pod_is_a_conflict(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    code, status = http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods/web-1/binding",
        binding("web-1", "node-1"),
    )
    assert code == 409 and status["reason"] == "Conflict"
    assert "pod web-1 has non-empty .spec.schedulingGates" in status["message"]
    assert sim.core.read_namespaced_pod("web-1", "default").spec.node_name is None


def test_binding_sets_node_name_and_pod_scheduled(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    code, status = http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods/web-1/binding",
        binding("web-1", "node-1"),
    )
    assert (code, status["status"]) == (201, "Success")
    bound = sim.core.read_namespaced_pod("web-1", "default")
    assert bound.spec.node_name == "node-1"
    assert condition(bound, "PodScheduled").status == "True"


def test_binding_through_the_client(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    sim.core.create_namespaced_pod_binding(
        "web-1", "default", binding("web-1", "node-1"), _preload_content=False
    )
    assert sim.core.read_namespaced_pod("web-1", "default").spec.node_name == "node-1"


def test_binding_a_bound_pod_is_a_conflict(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    code, status = http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods/web-1/binding",
        binding("web-1", "node-2"),
    )
    assert code == 409 and "already assigned" in status["message"]


def test_pod_with_node_name_and_gates_is_rejected(sim):
    code, status = error_of(
        sim.core.create_namespaced_pod,
        "default",
        body(pod("web-1", gates=(GATE,), node_name="node-1")),
    )
    assert code == 422
    assert (
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"
        in status["message"]
    )


def test_node_name_cannot_be_changed_by_a_patch(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    code, status = error_of(
        sim.core.patch_namespaced_pod,
        "web-1",
        "default",
        {"spec": {"nodeName": "node-1"}},
        _content_type=SMP,
    )
    assert code == 422 and "pod updates may not change fields" in status["message"]


def test_objects_need_an_existing_namespace(sim):
    code, status = error_of(sim.core.create_namespaced_pod, "nowhere", body(pod("web-1")))
    assert code == 404 and status["message"] == 'namespaces "nowhere" not found'


@pytest.mark.parametrize("name", ["Web_1", "-web", "a" * 254])
def test_pod_names_must_be_dns_1123_subdomains(sim, name):
    code, status = error_of(sim.core.create_namespaced_pod, "default", body(pod(name)))
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "metadata.name"


def test_namespace_names_must_be_dns_1123_labels(sim):
    code, status = error_of(sim.core.create_namespace, {"metadata": {"name": "team.a"}})
    assert code == 422 and "RFC 1123 label" in status["message"]


@pytest.mark.parametrize(
    ("method", "path", "raw", "content_type"),
    [
        ("POST", "/api/v1/namespaces/default/pods", b"{not json", "application/json"),
        ("POST", "/api/v1/namespaces/default/pods", b"[1, 2]", "application/json"),
        ("PUT", "/api/v1/namespaces/default/pods/web-1", b"\xff\xfe", "application/json"),
        (
            "PATCH",
            "/api/v1/namespaces/default/pods/web-1",
            b"{oops",
            "application/merge-patch+json",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/pods/web-1",
            b'{"a": 1}',
            "application/json-patch+json",
        ),
        ("POST", "/api/v1/namespaces/default/pods/web-1/binding", b"nope", "application/json"),
        ("GET", "/api/v1/pods?labelSelector=a%20in%20(", None, "application/json"),
    ],
)
def test_malformed_requests_are_bad_requests(sim, method, path, raw, content_type):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    code, status = http(sim.server.url, method, path, raw=raw, content_type=content_type)
    assert code == 400 and status["kind"] == "Status" and status["reason"] == "BadRequest"


def test_mismatched_kind_is_a_bad_request(sim):
    code, status = http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods",
        {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "x"}},
    )
    assert code == 400


def test_a_handler_crash_is_a_500_status_and_the_server_keeps_serving(sim, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(sim.cluster, "get", explode)
    code, status = http(sim.server.url, "GET", "/api/v1/namespaces/default/pods/web-1")
    assert code == 500 and status["reason"] == "InternalError"
    monkeypatch.undo()
    assert sim.core.list_namespace().items[0].metadata.name == "default"


def test_status_subresource_changes_only_status(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", labels={"app": "web"})))
    patch = {"status": {"nominatedNodeName": "node-2"}, "metadata": {"labels": {"ignored": "yes"}}}
    patched = sim.core.patch_namespaced_pod_status("web-1", "default", patch, _content_type=SMP)
    assert patched.status.nominated_node_name == "node-2"
    assert patched.status.phase == "Pending" and not patched.metadata.labels.get("ignored")


def test_main_resource_update_does_not_change_status(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    patched = sim.core.patch_namespaced_pod(
        "web-1", "default", {"status": {"phase": "Running"}}, _content_type=SMP
    )
    assert patched.status.phase == "Pending"


def test_status_conditions_merge_by_type(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "queue full",
    }
    extra = {"type": "Example", "status": "True"}
    patch = {"status": {"conditions": [unschedulable, extra]}}
    patched = sim.core.patch_namespaced_pod_status("web-1", "default", patch, _content_type=SMP)
    assert [(c.type, c.reason) for c in patched.status.conditions] == [
        ("PodScheduled", "Unschedulable"),
        ("Example", None),
    ]


def test_deleting_an_unbound_pod_removes_it_at_once(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    sim.core.delete_namespaced_pod("web-1", "default")
    assert sim.store.list("pods")[0] == []


def test_deleting_a_bound_pod_sets_a_deletion_timestamp(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    sim.core.delete_namespaced_pod("web-1", "default", grace_period_seconds=20)
    pending = sim.core.read_namespaced_pod("web-1", "default")
    assert pending.metadata.deletion_timestamp is not None
    assert pending.metadata.deletion_grace_period_seconds == 20


def test_deleting_a_bound_pod_with_zero_grace_removes_it(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    sim.core.delete_namespaced_pod("web-1", "default", grace_period_seconds=0)
    assert sim.store.list("pods")[0] == []


def test_eviction_marks_a_bound_pod_for_deletion(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-1", "namespace": "default"},
    }
    sim.core.create_namespaced_pod_eviction("web-1", "default", eviction)
    evicted = sim.core.read_namespaced_pod("web-1", "default")
    assert evicted.metadata.deletion_timestamp is not None
    assert evicted.metadata.deletion_grace_period_seconds == 30


def test_binding_a_pod_being_deleted_is_a_conflict(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    sim.core.delete_namespaced_pod("web-1", "default")
    code, status = http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods/web-1/binding",
        binding("web-1", "node-2"),
    )
    assert code == 409


def test_a_protobuf_body_that_does_not_decode_is_a_bad_request_not_a_crash(sim):
    """Protobuf is read for the kinds kubectl's generators send (test_protobuf.py); a body cut
    short is refused."""
    code, status = http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces",
        raw=b"k8s\x00\n\x0f",
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert code == 400 and status["reason"] == "BadRequest"


def test_the_bindings_collection_binds_like_the_subresource(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    code, status = error_of(
        sim.core.create_namespaced_binding, "default", binding("web-1", "node-1")
    )
    assert code == 409 and "non-empty .spec.schedulingGates" in status["message"]
    sim.core.create_namespaced_pod("default", body(pod("web-2")))
    sim.core.create_namespaced_binding(
        "default", binding("web-2", "node-1"), _preload_content=False
    )
    assert sim.core.read_namespaced_pod("web-2", "default").spec.node_name == "node-1"


def test_concurrent_patches_without_a_version_all_apply(sim):
    from concurrent.futures import ThreadPoolExecutor

    sim.core.create_namespaced_pod("default", body(pod("web-1")))

    def label(index: int) -> None:
        patch = {"metadata": {"labels": {f"l{index}": "x"}}}
        http(
            sim.server.url,
            "PATCH",
            "/api/v1/namespaces/default/pods/web-1",
            patch,
            content_type=SMP,
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(label, range(24)))
    labels = sim.core.read_namespaced_pod("web-1", "default").metadata.labels
    assert {f"l{i}" for i in range(24)} <= set(labels)


@pytest.mark.parametrize(
    "labels", [{"bad key!": "x"}, {"app": "not valid!"}, {"a/b/c": "x"}, {"app": "x" * 64}]
)
def test_invalid_labels_are_rejected_on_create_and_patch(sim, labels):
    code, _ = error_of(
        sim.core.create_namespaced_pod,
        "default",
        body(pod("web-1")) | {"metadata": {"name": "web-1", "labels": labels}},
    )
    assert code == 422
    sim.core.create_namespace(body(namespace("team-a")))
    code, _ = error_of(
        sim.core.patch_namespace, "team-a", {"metadata": {"labels": labels}}, _content_type=SMP
    )
    assert code == 422


@pytest.mark.parametrize(
    ("gates", "field"),
    [
        (("a", "a"), "spec.schedulingGates[1].name"),
        (("not a gate!",), "spec.schedulingGates[0].name"),
    ],
)
def test_gate_names_must_be_unique_qualified_names(sim, gates, field):
    code, status = error_of(
        sim.core.create_namespaced_pod, "default", body(pod("web-1", gates=gates))
    )
    assert code == 422 and status["details"]["causes"][0]["field"] == field


def test_create_ignores_a_client_sent_uid_and_creation_timestamp(sim):
    sent = body(pod("web-1"))
    sent["metadata"].update(uid="client-chosen", creationTimestamp="2001-01-01T00:00:00Z")
    created = sim.core.create_namespaced_pod("default", sent)
    assert created.metadata.uid != "client-chosen"
    assert created.metadata.creation_timestamp.year > 2001
