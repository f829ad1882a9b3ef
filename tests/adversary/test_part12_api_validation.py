"""The simulated cluster's API against kube-apiserver's validation (Part 12: "The simulated
cluster answers like kube-apiserver … 422 naming the field"). Each test names the
kube-apiserver code whose refusal the simulated cluster is missing: it answers 201 today."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.adversary.helpers import make_node, make_pod


def refused(call) -> ApiException:
    with pytest.raises(ApiException) as caught:
        call()
    return caught.value


def bare_pod(name: str, **spec) -> dict:
    container = spec.pop("container", {"name": "c", "image": "busybox"})
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def test_a_lease_duration_beyond_int32_is_refused(sim):
    """LeaseSpec.leaseDurationSeconds is an *int32 (k8s.io/api/coordination/v1): the JSON
    decoder refuses 3000000000 with 400 ("cannot unmarshal number 3000000000 into Go struct
    field LeaseSpec.spec.leaseDurationSeconds of type int32"), as the simulated cluster already
    does for a PriorityClass's value. It stores it (201)."""
    api = client.CoordinationV1Api(sim.api_client)
    body = {"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 3_000_000_000}}
    error = refused(lambda: api.create_namespaced_lease("default", body))
    assert error.status == 400
    assert "leaseDurationSeconds" in error.body


def test_a_lease_transitions_beyond_int32_is_refused(sim):
    """LeaseSpec.leaseTransitions is an *int32 too: 400 from the decoder; stored today."""
    api = client.CoordinationV1Api(sim.api_client)
    body = {"metadata": {"name": "l"}, "spec": {"leaseTransitions": 3_000_000_000}}
    error = refused(lambda: api.create_namespaced_lease("default", body))
    assert error.status == 400
    assert "leaseTransitions" in error.body


def test_an_invalid_annotation_key_is_refused(sim):
    """apimachinery ValidateAnnotations (ValidateObjectMeta): annotation keys are qualified
    names — "a b" gives 422 metadata.annotations. Accepted today."""
    pod = bare_pod("p")
    pod["metadata"]["annotations"] = {"a b": "v"}
    error = refused(lambda: sim.core.create_namespaced_pod("default", pod))
    assert error.status == 422
    assert "metadata.annotations" in error.body


def test_a_container_without_image_is_refused(sim):
    """pkg/apis/core/validation validateContainers: "spec.containers[0].image: Required
    value". Accepted today."""
    pod = bare_pod("p", container={"name": "c"})
    error = refused(lambda: sim.core.create_namespaced_pod("default", pod))
    assert error.status == 422
    assert "spec.containers[0].image" in error.body


def test_an_unsupported_restart_policy_is_refused(sim):
    """validateRestartPolicy: "spec.restartPolicy: Unsupported value: "Sometimes": supported
    values: "Always", "OnFailure", "Never"". Accepted today."""
    error = refused(
        lambda: sim.core.create_namespaced_pod("default", bare_pod("p", restartPolicy="Sometimes"))
    )
    assert error.status == 422
    assert "spec.restartPolicy" in error.body


def test_requests_above_limits_are_refused(sim):
    """ValidateResourceRequirements: "spec.containers[0].resources.requests: Invalid value:
    "2": must be less than or equal to cpu limit of 1". Accepted today — and the scheduler
    then counts a request (2) the kubelet would never grant."""
    container = {
        "name": "c",
        "image": "busybox",
        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
    }
    error = refused(
        lambda: sim.core.create_namespaced_pod("default", bare_pod("p", container=container))
    )
    assert error.status == 422
    assert "resources.requests" in error.body


def test_an_unsupported_toleration_operator_is_refused(sim):
    """ValidateTolerations: "spec.tolerations[0].operator: Unsupported value: "Maybe"".
    Accepted today (and the scheduler's taint matching then sees an operator it does not
    know)."""
    pod = bare_pod("p", tolerations=[{"key": "k", "operator": "Maybe"}])
    error = refused(lambda: sim.core.create_namespaced_pod("default", pod))
    assert error.status == 422
    assert "spec.tolerations[0].operator" in error.body


def test_an_invalid_node_selector_value_is_refused(sim):
    """ValidatePodSpec validates spec.nodeSelector as labels (ValidateLabels): "bad value!"
    gives 422 spec.nodeSelector. Accepted today."""
    pod = bare_pod("p", nodeSelector={"a": "bad value!"})
    error = refused(lambda: sim.core.create_namespaced_pod("default", pod))
    assert error.status == 422
    assert "spec.nodeSelector" in error.body


def test_a_binding_to_something_other_than_a_node_is_refused(sim):
    """ValidatePodBinding: "target.kind: Unsupported value: "Pod": supported values: "Node",
    "<empty>"". The simulated cluster binds the pod to "node" n1 (201)."""
    make_node(sim, "n1")
    make_pod(sim, "p")
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p"),
        target=client.V1ObjectReference(kind="Pod", name="n1"),
    )
    error = refused(
        lambda: sim.core.create_namespaced_pod_binding(
            "p", "default", binding, _preload_content=False
        )
    )
    assert error.status == 422
    assert "target.kind" in error.body
    assert not (sim.store.get("pods", "default", "p").get("spec") or {}).get("nodeName")


def post(sim, path: str, body: object) -> tuple[int, str]:
    """A raw JSON POST (the Python client would refuse these bodies before sending them)."""
    import json

    import urllib3

    cfg = sim.api_client.configuration
    headers = {"Content-Type": "application/json", **sim.api_client.default_headers}
    if cfg.api_key.get("authorization"):
        headers["Authorization"] = cfg.api_key["authorization"]
    response = urllib3.PoolManager().request(
        "POST", cfg.host + path, body=json.dumps(body), headers=headers
    )
    return response.status, response.data.decode()


def test_a_binding_whose_target_is_a_string_is_a_400_not_a_500(sim):
    """kube-apiserver's decoder: "Binding in version "v1" cannot be handled as a Binding: json:
    cannot unmarshal string into Go struct field Binding.target" (400). The simulated cluster
    answers 500 Internal error."""
    make_node(sim, "n1")
    make_pod(sim, "p1")
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"}, "target": "n1"}
    status, text = post(sim, "/api/v1/namespaces/default/pods/p1/binding", body)
    assert status == 400, (status, text)


def test_an_eviction_whose_delete_options_is_a_string_is_a_400_not_a_500(sim):
    """Eviction.deleteOptions is a *DeleteOptions: a string is the decoder's 400. The
    simulated cluster answers 500."""
    make_node(sim, "n1")
    make_pod(sim, "p1")
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p1"},
        "deleteOptions": "x",
    }
    status, text = post(sim, "/api/v1/namespaces/default/pods/p1/eviction", body)
    assert status == 400, (status, text)


def test_an_eviction_whose_metadata_is_a_list_evicts_nothing(sim):
    """kube-apiserver: a list as metadata is the decoder's 400 (and a nameless Eviction is
    "name in URL does not match name in Eviction object", 400 — EvictionREST.Create). The
    simulated cluster answers 201 Success."""
    make_node(sim, "n1")
    make_pod(sim, "p1")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": []}
    status, text = post(sim, "/api/v1/namespaces/default/pods/p1/eviction", body)
    assert status == 400, (status, text)


@pytest.mark.parametrize(
    "metadata",
    [
        {"name": "q1", "labels": ["a"]},
        {"name": "q1", "annotations": {"a": 1}},
        {"name": "q1", "finalizers": {"a": 1}},
        {"name": "q1", "ownerReferences": "x"},
    ],
)
def test_a_queue_with_mistyped_metadata_is_refused(sim, metadata):
    """A custom resource's metadata is decoded into ObjectMeta by kube-apiserver (apiextensions
    ``getObjectMetaWithOptions``): labels that are a list, an annotation that is a number,
    finalizers that are a map or ownerReferences that are a string are refused (400/422). The
    simulated cluster stores the Queue (201) — and the scheduler's cache then reads labels that
    are not a map."""
    body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": metadata}
    status, text = post(sim, "/apis/scheduling.volcano.sh/v1beta1/queues", body)
    assert status in (400, 422), (status, text)
