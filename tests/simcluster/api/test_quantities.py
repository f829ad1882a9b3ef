"""Resource quantities through the simulated API server, refused as kube-apiserver refuses
them: 400 when the body does not decode ("abc"), 422 when it does not validate ("-1Gi"), and
taken when it does, whatever the size ("1e400"). Custom resources by their CRD's pattern."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from tests.builders import body, node, pod, podgroup

FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def error_of(call, *args) -> tuple[int, dict]:
    with pytest.raises(ApiException) as caught:
        call(*args)
    return caught.value.status, json.loads(caught.value.body)


def test_a_quantity_that_does_not_decode_is_a_bad_request(sim):
    code, status = error_of(sim.core.create_namespaced_pod, "default", body(pod("p", "abc")))

    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == f'Pod in version "v1" cannot be handled as a Pod: {FORMAT_ERROR}'
    code, status = error_of(sim.core.create_namespaced_pod, "default", body(pod("p", "1K")))
    assert code == 400 and status["message"].endswith("unable to parse quantity's suffix")
    code, _ = error_of(sim.core.create_node, body(node("n9", cpu="abc")))
    assert code == 400


def test_a_negative_request_is_invalid(sim):
    code, status = error_of(
        sim.core.create_namespaced_pod, "default", body(pod("p", memory="-1Gi"))
    )

    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'Pod "p" is invalid: spec.containers[0].resources.requests[memory]: Invalid value: '
        '"-1Gi": must be greater than or equal to 0'
    )
    (cause,) = status["details"]["causes"]
    assert cause["field"] == "spec.containers[0].resources.requests[memory]"


@pytest.mark.parametrize("cpu", ["1e400", "99999999999999999999999"])
def test_any_size_is_taken_as_kube_apiserver_takes_it(sim, cpu):
    created = sim.core.create_namespaced_pod("default", body(pod("p", cpu)))

    assert created.spec.containers[0].resources.requests["cpu"] == cpu


def test_a_podgroup_quantity_must_match_the_crd_pattern_which_lets_a_negative_in(sim):
    bad = body(podgroup("g", namespace="default", min_resources={"cpu": "abc"}))
    code, status = error_of(
        sim.custom.create_namespaced_custom_object, *VOLCANO, "default", "podgroups", bad
    )

    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(
        'PodGroup.scheduling.volcano.sh "g" is invalid: spec.minResources.cpu: Invalid value: '
        '"abc": spec.minResources.cpu in body should match'
    )
    negative = body(podgroup("g", namespace="default", min_resources={"memory": "-1Gi"}))
    sim.custom.create_namespaced_custom_object(*VOLCANO, "default", "podgroups", negative)
