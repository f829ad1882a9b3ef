"""The RBAC attributes of a request, as kube-apiserver's RequestInfoFactory derives them."""

from __future__ import annotations

import pytest
from kubernetes import client

from simcluster.api.audit import RequestAttributes, request_attributes
from tests.builders import body, pod
from tests.simcluster.api.conftest import Sim


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/pods", {}, RequestAttributes("list", "", "pods")),
        ("GET", "/api/v1/pods", {"watch": "true"}, RequestAttributes("watch", "", "pods")),
        ("GET", "/api/v1/watch/nodes", {}, RequestAttributes("watch", "", "nodes")),
        (
            "GET",
            "/api/v1/namespaces/a/pods/p",
            {},
            RequestAttributes("get", "", "pods", "a", "p"),
        ),
        (
            "POST",
            "/api/v1/namespaces/a/pods/p/binding",
            {},
            RequestAttributes("create", "", "pods/binding", "a", "p"),
        ),
        (
            "PATCH",
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/a/podgroups/g/status",
            {},
            RequestAttributes("patch", "scheduling.volcano.sh", "podgroups/status", "a", "g"),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/team",
            {},
            RequestAttributes("patch", "", "namespaces", "team", "team"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/a/pods",
            {},
            RequestAttributes("deletecollection", "", "pods", "a"),
        ),
        ("PUT", "/api/v1/nodes/n", {}, RequestAttributes("update", "", "nodes", "", "n")),
        ("GET", "/version", {}, RequestAttributes("get", path="/version")),
        (
            "GET",
            "/apis/scheduling.volcano.sh/v1beta1",
            {},
            RequestAttributes("get", path="/apis/scheduling.volcano.sh/v1beta1"),
        ),
    ],
)
def test_request_attributes(method, path, query, expected):
    assert request_attributes(method, path, query) == expected


def test_the_api_server_records_each_request_before_serving_it(sim: Sim):
    seen: list[RequestAttributes] = []
    sim.server.recorder = seen.append
    core = client.CoreV1Api(sim.api_client)
    core.create_namespaced_pod("default", body(pod("p", namespace="default")))
    core.read_namespaced_pod("p", "default")
    try:
        core.read_namespaced_pod("absent", "default")
    except client.ApiException as error:
        assert error.status == 404
    assert seen == [
        RequestAttributes("create", "", "pods", "default"),
        RequestAttributes("get", "", "pods", "default", "p"),
        RequestAttributes("get", "", "pods", "default", "absent"),
    ]
