"""POST /webhooks/mutate-pods with real AdmissionReview JSON, as kube-apiserver sends it."""

from __future__ import annotations

import base64
import json
import logging
import uuid

import jsonpatch
import pytest

from dashboard import webhooks
from tests.builders import GATE, pod


def admission_review(pod: dict, *, operation: str = "CREATE") -> dict:
    namespace = pod["metadata"].get("namespace", "default")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": pod,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


@pytest.fixture
def labelled_namespaces(monkeypatch):
    """Namespace labels as the cluster would return them (the lookup is the only stub)."""
    labels: dict[str, dict[str, str]] = {"team-a": {}, "opted-in": {GATE: "true"}}

    def lookup(name: str) -> dict[str, str]:
        if name not in labels:
            raise RuntimeError(f'namespaces "{name}" not found')
        return labels[name]

    monkeypatch.setattr(webhooks.kube, "namespace_labels", lookup)
    return labels


def post_review(client, review) -> dict:
    response = client.post(
        "/webhooks/mutate-pods", data=json.dumps(review), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == review["request"]["uid"]
    assert body["response"]["allowed"] is True
    return body["response"]


def patched(pod: dict, response: dict) -> dict:
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    return jsonpatch.apply_patch(pod, patch)


def test_it_adds_the_gate_to_an_annotated_pod(client, labelled_namespaces):
    p = pod("job-0", "1", None, namespace="team-a", annotations={GATE: "true"})

    response = post_review(client, admission_review(p))

    patch = json.loads(base64.b64decode(response["patch"]))
    assert patch == [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GATE}]}]
    assert patched(p, response)["spec"]["schedulingGates"] == [{"name": GATE}]


def test_it_gates_and_annotates_every_pod_of_ours_in_an_opted_in_namespace(
    client, labelled_namespaces
):
    p = pod("job-0", "1", None, namespace="opted-in", annotations={"team": "ml"})

    result = patched(p, post_review(client, admission_review(p)))

    assert result["spec"]["schedulingGates"] == [{"name": GATE}]
    assert result["metadata"]["annotations"] == {"team": "ml", GATE: "true"}


def test_namespace_opt_in_works_for_a_pod_without_annotations(client, labelled_namespaces):
    p = pod("job-0", "1", None, namespace="opted-in")

    result = patched(p, post_review(client, admission_review(p)))

    assert result["metadata"]["annotations"] == {GATE: "true"}


def test_it_keeps_existing_gates_with_a_replace(client, labelled_namespaces):
    p = pod(
        "job-0",
        "1",
        None,
        namespace="team-a",
        annotations={GATE: "true"},
        gates=["example.com/quota"],
    )

    response = post_review(client, admission_review(p))

    patch = json.loads(base64.b64decode(response["patch"]))
    assert patch[0]["op"] == "replace"
    assert patched(p, response)["spec"]["schedulingGates"] == [
        {"name": "example.com/quota"},
        {"name": GATE},
    ]


def test_it_never_adds_the_gate_twice(client, labelled_namespaces):
    p = pod("job-0", "1", None, namespace="team-a", annotations={GATE: "true"}, gates=[GATE])

    response = post_review(client, admission_review(p))

    assert "patch" not in response


@pytest.mark.parametrize("scheduler", ["default-scheduler", "kueue", None])
def test_it_leaves_other_schedulers_pods_alone(client, labelled_namespaces, scheduler):
    p = pod(
        "job-0", "1", None, scheduler=scheduler, namespace="opted-in", annotations={GATE: "true"}
    )

    response = post_review(client, admission_review(p))

    assert "patch" not in response


def test_it_leaves_pods_that_did_not_opt_in_alone(client, labelled_namespaces):
    p = pod("job-0", "1", None, namespace="team-a", annotations={GATE: "false"})

    assert "patch" not in post_review(client, admission_review(p))


def test_it_skips_a_pod_that_names_its_node(client, labelled_namespaces):
    p = pod("job-0", "1", None, namespace="team-a", annotations={GATE: "true"}, node_name="node-1")

    assert "patch" not in post_review(client, admission_review(p))


def test_its_own_failure_admits_the_pod_unpatched_and_logs_why(client, labelled_namespaces, caplog):
    caplog.set_level(logging.WARNING, logger="scheduler.admission.mutate")  # a worker raised root
    p = pod("job-0", "1", None, namespace="unknown-namespace")

    response = post_review(client, admission_review(p))

    assert "patch" not in response
    assert 'namespaces "unknown-namespace" not found' in caplog.text
    assert "pod unknown-namespace/job-0" in [getattr(r, "object", "") for r in caplog.records]


def test_updates_are_not_mutated(client, labelled_namespaces):
    p = pod("job-0", "1", None, namespace="team-a", annotations={GATE: "true"})

    assert "patch" not in post_review(client, admission_review(p, operation="UPDATE"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "body is not JSON"),
        (b"[]", "body must be a JSON object"),
        (json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(), "apiVersion/kind must be"),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "request must be an object",
        ),
        (
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}
            ).encode(),
            "request.uid must be a string",
        ),
    ],
)
def test_a_malformed_review_gets_400_with_a_clear_message(client, body, message):
    response = client.post("/webhooks/mutate-pods", data=body, content_type="application/json")

    assert response.status_code == 400
    assert message in response.json()["message"]


def test_it_only_accepts_post(client):
    assert client.get("/webhooks/mutate-pods").status_code == 405
