"""Fuzz POST /webhooks/mutate-pods: whatever the body, never a 500 and never Django's page.

Kubernetes' webhook contract: kube-apiserver sends a well-formed AdmissionReview and reads an
AdmissionReview back whose ``response.uid`` is the request's. So a review with its envelope
right gets 200 and an answer, always ``allowed`` (this webhook never blocks a pod; one whose
fields do not read is let through untouched with a warning naming the field); anything else
(no review, or an envelope field of the wrong type) gets a 4xx ``Status`` naming the field.
Requests go through the whole Django stack (middleware included) with DEBUG on, as under
``make run``; only the cluster's namespace lookup is replaced.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest
from django.test import Client, override_settings
from hypothesis import example, given
from hypothesis import strategies as st

from dashboard import webhooks
from tests.builders import GATE
from tests.fuzz.strategies import dotted, fuzz_settings, json_values, replaced, replacements

URL = "/webhooks/mutate-pods"

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "job-0", "namespace": "team-a", "annotations": {GATE: "true"}},
    "spec": {
        "schedulerName": "volcano",
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
        ],
    },
}

REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": "team-a",
        "operation": "CREATE",
        "userInfo": {"username": "kubernetes-admin"},
        "object": POD,
        "oldObject": None,
        "dryRun": False,
    },
}

ENVELOPE_PATHS: list[tuple[Any, ...]] = [
    ("apiVersion",),
    ("kind",),
    ("request",),
    ("request", "uid"),
    ("request", "kind"),
    ("request", "kind", "kind"),
    ("request", "kind", "group"),
    ("request", "kind", "version"),
    ("request", "operation"),
    ("request", "namespace"),
    ("request", "name"),
    ("request", "object"),
    ("request", "userInfo"),
    ("request", "dryRun"),
]
POD_PATHS: list[tuple[Any, ...]] = [
    ("request", "object", "metadata"),
    ("request", "object", "metadata", "name"),
    ("request", "object", "metadata", "generateName"),
    ("request", "object", "metadata", "namespace"),
    ("request", "object", "metadata", "annotations"),
    ("request", "object", "metadata", "annotations", GATE),
    ("request", "object", "spec"),
    ("request", "object", "spec", "schedulerName"),
    ("request", "object", "spec", "nodeName"),
    ("request", "object", "spec", "schedulingGates"),
    ("request", "object", "spec", "containers"),
    ("request", "object", "spec", "containers", 0),
    ("request", "object", "spec", "containers", 0, "resources"),
    ("request", "object", "spec", "containers", 0, "resources", "requests"),
    ("request", "object", "spec", "containers", 0, "resources", "requests", "cpu"),
    ("request", "object", "spec", "initContainers"),
    ("request", "object", "spec", "overhead"),
]


@pytest.fixture(autouse=True)
def namespaces(monkeypatch):
    """The cluster's namespace labels (the one lookup the webhook makes)."""
    labels = {"team-a": {}, "opted-in": {GATE: "true"}}

    def lookup(name: str) -> dict[str, str]:
        if name not in labels:
            raise RuntimeError(f'namespaces "{name}" not found')
        return labels[name]

    monkeypatch.setattr(webhooks.kube, "namespace_labels", lookup)


def post(body: bytes, content_type: str = "application/json"):
    # A real server's answer: the exception a view raised becomes the 500 a caller would see.
    client = Client(raise_request_exception=False)
    with override_settings(DEBUG=True):
        return client.post(URL, data=body, content_type=content_type)


def check_answer(response, review: Any = None) -> dict:
    """What every answer must be; returns the JSON body."""
    text = response.content[:2000].decode(errors="replace")
    assert response.status_code < 500, (response.status_code, text)
    assert response["Content-Type"] == "application/json", text
    assert "Traceback" not in text and "<html" not in text.lower(), text
    body = response.json()
    if response.status_code == 200:
        assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
        answer = body["response"]
        assert answer["uid"] == review["request"]["uid"]
        assert answer["allowed"] is True
        if "patch" in answer:
            assert answer["patchType"] == "JSONPatch"
            patch = json.loads(base64.b64decode(answer["patch"]))
            gated = jsonpatch.apply_patch(review["request"]["object"], patch)
            assert {"name": GATE} in gated["spec"]["schedulingGates"]
    else:
        assert response.status_code in (400, 413, 415), text
        assert body["kind"] == "Status" and body["code"] == response.status_code
        assert body["message"].startswith("AdmissionReview: ")
    return body


@fuzz_settings(300)
@given(st.binary(max_size=200))
@example(b"")
@example(b"\xff\xfe")
@example(b"null")
@example(b"1" * 5000)  # past Python's int digit limit: a ValueError, not a JSONDecodeError
def test_any_bytes_get_a_4xx_or_an_answer(body):
    check_answer(post(body))


@fuzz_settings(150)
@given(json_values)
def test_any_json_gets_a_4xx_or_an_answer(value):
    check_answer(post(json.dumps(value).encode()), value)


def _mutated(changes) -> tuple[dict, list]:
    review = copy.deepcopy(REVIEW)
    applied = [path for path, value in changes if replaced(review, path, value)]
    return review, applied


@fuzz_settings(400)
@given(replacements(ENVELOPE_PATHS + POD_PATHS))
@example([(("request", "kind"), "Pod")])
@example([(("request", "object", "metadata"), [])])
@example([(("request", "object", "metadata"), ["name", "job-0"])])
@example([(("request", "object", "spec", "containers"), "oops")])
def test_a_review_with_fields_of_any_type(changes):
    review, applied = _mutated(changes)
    body = check_answer(post(json.dumps(review).encode()), review)
    changed = [dotted(path) for path in applied]
    if body.get("kind") == "Status":
        message = body["message"]
        if "apiVersion/kind" not in message:
            assert _names_a_changed_field(message, "AdmissionReview: ", changed), message
    for warning in body.get("response", {}).get("warnings", []):
        assert _names_a_changed_field(warning, "sluice: pod not gated: ", changed), warning


def _names_a_changed_field(message: str, prefix: str, changed: list[str]) -> bool:
    """The field the message names is one that changed, inside one, or holds one."""
    assert message.startswith(prefix) and " must be " in message, message
    field = message[len(prefix) :].split(" must be ")[0]
    return any(
        field == path or field.startswith((f"{path}.", f"{path}[")) or path.startswith(f"{field}.")
        for path in changed
    )


@fuzz_settings(300)
@given(replacements(POD_PATHS))
def test_a_pod_that_does_not_read_is_admitted_never_refused(changes):
    """Only the pod changed: the envelope is right, so the answer is 200 and allowed, a
    warning naming the field when the webhook could not read it."""
    review, _ = _mutated(changes)
    response = post(json.dumps(review).encode())
    assert response.status_code == 200, response.content[:500]
    check_answer(response, review)


@fuzz_settings(60)
@given(
    st.integers(min_value=1, max_value=200_000),
    st.sampled_from(["[", '{"a":']),
    st.booleans(),
)
@example(100_000, "[", True)
@example(900, '{"a":', True)
def test_deeply_nested_json(depth, opener, inside_review):
    closer = "]" if opener == "[" else "}"
    nested = opener * depth + "1" + closer * depth
    if inside_review:
        head = json.dumps(REVIEW)[:-2]  # cut the request's and the review's closing braces
        body = head.replace('"object": ', '"object": {"metadata": ' + nested + "}, ", 1) + "}}"
    else:
        body = nested
    response = post(body.encode())
    check_answer(response, json.loads(json.dumps(REVIEW)) if response.status_code == 200 else None)


@fuzz_settings(40)
@given(
    st.sampled_from(
        ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]
    ),
    st.binary(max_size=50),
)
def test_a_body_that_is_not_json_by_its_content_type_gets_415(content_type, body):
    response = post(body, content_type)
    assert response.status_code == 415
    check_answer(response)


def test_a_request_kind_of_the_wrong_type_is_a_400_naming_it():
    review = copy.deepcopy(REVIEW)
    review["request"]["kind"] = "Pod"

    response = post(json.dumps(review).encode())

    assert response.status_code == 400
    assert check_answer(response)["message"] == "AdmissionReview: request.kind must be an object"


def test_a_pod_with_a_list_as_metadata_is_admitted_with_a_warning_naming_it():
    review = copy.deepcopy(REVIEW)
    review["request"]["object"]["metadata"] = ["name", "job-0"]

    body = check_answer(post(json.dumps(review).encode()), review)

    assert body["response"]["warnings"] == [
        "sluice: pod not gated: request.object.metadata must be an object"
    ]
    assert "patch" not in body["response"]


def test_a_body_over_3_mib_gets_413_unread():
    response = post(b" " * (webhooks.MAX_REVIEW_BYTES + 1))

    assert response.status_code == 413
    check_answer(response)


def test_a_review_larger_than_djangos_upload_limit_is_still_answered():
    """Django refuses bodies over DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) with its debug page;
    a pod kube-apiserver accepts can be larger, and is answered."""
    review = copy.deepcopy(REVIEW)
    review["request"]["object"]["metadata"]["annotations"]["big"] = "x" * 2_800_000
    body = json.dumps(review).encode()
    assert 2_621_440 < len(body) <= webhooks.MAX_REVIEW_BYTES

    answer = check_answer(post(body), review)

    assert "patch" in answer["response"]


def test_a_well_formed_review_is_gated_as_before():
    body = check_answer(post(json.dumps(REVIEW).encode()), REVIEW)

    assert "patch" in body["response"] and "warnings" not in body["response"]
