"""Fuzz the simulated cluster's API with Pods, Queues and PodGroups whose fields are anything.

Sent through the official kubernetes client to the HTTP server, as the scheduler and kubectl
send them. Whatever the spec: never a 500; a refusal is a 4xx Status that names the field (a
422's causes, or a 400's message or causes); an object taken is served back, listed, and
rendered as the table ``kubectl get`` asks for.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.strategies import DELETE, fuzz_settings, json_values, replaced
from tests.simcluster.api.conftest import start_sim

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
NAMESPACE = "fuzz"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "labels": {"app": "train"},
        "annotations": {"scheduling.volcano.sh/queue-name": "q"},
    },
    "spec": {
        "schedulerName": "volcano",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}},
            }
        ],
        "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
        "nodeSelector": {"pool": "general"},
        "tolerations": [{"key": "big", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
        "schedulingGates": [{"name": "example.com/gate"}],
        "terminationGracePeriodSeconds": 30,
        "overhead": {"cpu": "10m"},
    },
}
POD_PATHS: list[tuple[Any, ...]] = [
    ("metadata",), ("metadata", "name"), ("metadata", "labels"), ("metadata", "labels", "app"),
    ("metadata", "annotations"), ("metadata", "annotations", "scheduling.volcano.sh/queue-name"),
    ("metadata", "generateName"), ("metadata", "ownerReferences"), ("metadata", "finalizers"),
    ("spec",), ("spec", "schedulerName"), ("spec", "containers"), ("spec", "containers", 0),
    ("spec", "containers", 0, "name"), ("spec", "containers", 0, "image"),
    ("spec", "containers", 0, "resources"), ("spec", "containers", 0, "resources", "requests"),
    ("spec", "containers", 0, "resources", "requests", "cpu"),
    ("spec", "containers", 0, "resources", "limits"), ("spec", "containers", 0, "restartPolicy"),
    ("spec", "containers", 0, "ports"), ("spec", "containers", 0, "command"),
    ("spec", "initContainers"), ("spec", "initContainers", 0, "name"),
    ("spec", "initContainers", 0, "restartPolicy"), ("spec", "nodeSelector"),
    ("spec", "nodeSelector", "pool"), ("spec", "nodeName"), ("spec", "tolerations"),
    ("spec", "tolerations", 0), ("spec", "tolerations", 0, "key"),
    ("spec", "tolerations", 0, "operator"), ("spec", "tolerations", 0, "effect"),
    ("spec", "tolerations", 0, "tolerationSeconds"), ("spec", "affinity"),
    ("spec", "affinity", "nodeAffinity"),
    ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    ("spec", "schedulingGates"), ("spec", "schedulingGates", 0),
    ("spec", "schedulingGates", 0, "name"), ("spec", "priority"), ("spec", "priorityClassName"),
    ("spec", "terminationGracePeriodSeconds"), ("spec", "overhead"), ("spec", "restartPolicy"),
    ("spec", "activeDeadlineSeconds"), ("spec", "preemptionPolicy"), ("status",),
]  # fmt: skip

QUEUE: dict[str, Any] = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "q"},
    "spec": {
        "weight": 2,
        "reclaimable": True,
        "capability": {"cpu": "8", "memory": "32Gi"},
        "deserved": {"cpu": "4"},
        "guarantee": {"resource": {"cpu": "1"}},
        "parent": "root",
        "priority": 1,
    },
}
QUEUE_PATHS: list[tuple[Any, ...]] = [
    ("metadata", "name"), ("metadata", "labels"), ("spec",), ("spec", "weight"),
    ("spec", "reclaimable"), ("spec", "capability"), ("spec", "capability", "cpu"),
    ("spec", "deserved"), ("spec", "deserved", "cpu"), ("spec", "guarantee"),
    ("spec", "guarantee", "resource"), ("spec", "guarantee", "resource", "cpu"),
    ("spec", "parent"), ("spec", "priority"), ("spec", "dequeueStrategy"), ("spec", "type"),
    ("spec", "affinity"), ("spec", "extendClusters"), ("status",), ("status", "state"),
]  # fmt: skip

PODGROUP: dict[str, Any] = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "g"},
    "spec": {
        "minMember": 2,
        "queue": "q",
        "minResources": {"cpu": "2"},
        "minTaskMember": {"worker": 2},
        "priorityClassName": "",
    },
}
PODGROUP_PATHS: list[tuple[Any, ...]] = [
    ("metadata", "name"), ("metadata", "labels"), ("spec",), ("spec", "minMember"),
    ("spec", "queue"), ("spec", "minResources"), ("spec", "minResources", "cpu"),
    ("spec", "minTaskMember"), ("spec", "minTaskMember", "worker"), ("spec", "priorityClassName"),
    ("spec", "networkTopology"), ("spec", "networkTopology", "mode"), ("status",),
    ("status", "phase"),
]  # fmt: skip

_names = itertools.count()


@pytest.fixture(scope="module")
def sim():
    running = start_sim()
    running.core.create_namespace({"metadata": {"name": NAMESPACE}})
    yield running
    running.api_client.close()
    running.server.stop()


def mutations(paths):
    values = json_values | st.sampled_from([-1, -3, 0, 2**31, 2**63, 1.5, "", "oops", [], {}])
    return st.lists(st.tuples(st.sampled_from(paths), st.just(DELETE) | values), max_size=3)


def mutated(base: dict, changes) -> tuple[dict, list[tuple[Any, ...]]]:
    obj = copy.deepcopy(base)
    obj["metadata"]["name"] = f"{obj['metadata']['name']}-{next(_names)}"
    return obj, [path for path, value in changes if replaced(obj, path, value)]


def _segments(field: str) -> list[str]:
    """``spec.containers[0].resources.requests[cpu]`` as segments, indices left out."""
    parts = re.split(r"\.|\[|\]", field)
    return [p for p in parts if p and not p.isdigit()]


def _related(field: str, changed: list[tuple[Any, ...]]) -> bool:
    named = _segments(field)
    for path in changed:
        keys = [str(k) for k in path if not isinstance(k, int)]
        n = min(len(named), len(keys))
        if n and named[:n] == keys[:n]:
            return True
    return False


def send(sim, kind: str, obj: dict) -> tuple[int, dict]:
    """POST ``obj`` through the client's transport (its typed methods check a Pod's shape
    before sending, as kubectl does not): the status and the JSON answer."""
    if kind == "queues":
        url = "/apis/scheduling.volcano.sh/v1beta1/queues"
    elif kind == "podgroups":
        url = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups"
    else:
        url = f"/api/v1/namespaces/{NAMESPACE}/pods"
    response = sim.api_client.call_api(
        "POST",
        sim.server.url + url,
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=obj,
    )
    return response.status, json.loads(response.read())


def check(sim, kind: str, obj: dict, changed: list[tuple[Any, ...]]) -> None:
    code, answer = send(sim, kind, obj)
    if code == 201:
        served(sim, kind, answer["metadata"]["name"])
        return
    assert 400 <= code < 500, (code, answer)
    assert answer["kind"] == "Status" and answer["code"] == code
    if code in (403, 404, 409):
        return  # admission (a PriorityClass that is not there), a namespace, a name taken
    causes = (answer.get("details") or {}).get("causes", [])
    assert any(
        _related(c.get("field", ""), changed)
        # a name made a duplicate is reported on the other container, as kube-apiserver does
        or (c.get("reason") == "FieldValueDuplicate" and _related("spec.containers.name", changed))
        for c in causes
        if c.get("field")
    ), (answer["message"], changed)


def served(sim, kind: str, name: str) -> None:
    """Read back, listed, and as kubectl's table."""
    if kind == "pods":
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    elif kind == "queues":
        path = "/apis/scheduling.volcano.sh/v1beta1/queues"
    else:
        path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups"
    for url, accept in ((f"{path}/{name}", "application/json"), (path, TABLE)):
        request = urllib.request.Request(sim.server.url + url, headers={"Accept": accept})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 200


@fuzz_settings(300, deadline_ms=5000)
@given(mutations(POD_PATHS))
@example([(("spec", "containers"), "oops")])
@example([(("spec", "containers", 0, "name"), "init")])
@example([(("metadata", "labels"), ["app"])])
@example([(("spec", "priority"), 2**31)])
@example([(("spec", "tolerations", 0, "effect"), [])])
def test_a_pod_of_any_shape_is_taken_or_refused_with_a_4xx_naming_the_field(sim, changes):
    obj, changed = mutated(POD, changes)
    check(sim, "pods", obj, changed)


@fuzz_settings(200, deadline_ms=5000)
@given(mutations(QUEUE_PATHS))
@example([(("spec", "weight"), -3)])
@example([(("spec", "weight"), "heavy")])
@example([(("spec", "capability", "cpu"), True)])
def test_a_queue_of_any_shape_is_taken_or_refused_with_a_4xx_naming_the_field(sim, changes):
    obj, changed = mutated(QUEUE, changes)
    check(sim, "queues", obj, changed)


@fuzz_settings(200, deadline_ms=5000)
@given(mutations(PODGROUP_PATHS))
@example([(("spec", "minMember"), -1)])
@example([(("spec", "queue"), "Not A Name")])
def test_a_podgroup_of_any_shape_is_taken_or_refused_with_a_4xx_naming_the_field(sim, changes):
    obj, changed = mutated(PODGROUP, changes)
    check(sim, "podgroups", obj, changed)


@fuzz_settings(100)
@given(
    st.binary(max_size=200)
    | st.integers(min_value=1, max_value=100_000).map(lambda n: b"[" * n + b"]" * n)
    | st.integers(min_value=1, max_value=100_000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n)
)
@example(b"1" * 5000)
@example(b"\xff\xfe")
def test_a_body_that_is_no_json_object_is_a_400_and_an_object_a_4xx(sim, raw):
    request = urllib.request.Request(
        f"{sim.server.url}/api/v1/namespaces/{NAMESPACE}/pods",
        data=raw,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=10)
    except urllib.error.HTTPError as exc:
        answer = json.loads(exc.read())
        if _json_object(raw):
            assert exc.code in (400, 422), answer  # an object: decoded, then validated
        else:
            assert exc.code == 400 and answer["reason"] == "BadRequest", answer
    else:
        raise AssertionError(f"{raw[:50]!r} was taken")


def _json_object(raw: bytes) -> bool:
    if not raw:
        return True  # no body is read as {} (a DELETE's options may be left out)
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):
        return False


@pytest.mark.parametrize("depth", [150, 1_100, 100_000])
def test_a_patch_nested_past_what_the_server_walks_is_a_400(sim, depth):
    obj, _ = mutated(POD, [])
    assert send(sim, "pods", obj)[0] == 201
    raw = b'{"metadata": {"labels": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}}"
    request = urllib.request.Request(
        f"{sim.server.url}/api/v1/namespaces/{NAMESPACE}/pods/{obj['metadata']['name']}",
        data=raw,
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert "nested" in json.loads(caught.value.read())["message"]
