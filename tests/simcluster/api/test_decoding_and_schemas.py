"""What the simulated API server answers for objects kube-apiserver would not take: 400 when a
field has the wrong JSON type for its Go type (worded as encoding/json), 422 naming every field
against a Pod's rules or a Volcano CRD's schema, and the CRD's defaults on what it takes."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

VOLCANO = "/apis/scheduling.volcano.sh/v1beta1"


def call(sim, method: str, path: str, body: object, content_type: str = "application/json"):
    request = urllib.request.Request(
        sim.server.url + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": content_type},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def pod(**spec) -> dict:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"containers": "oops"},
            "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of "
            "type []v1.Container",
        ),
        (
            {"priority": 2**31},
            "json: cannot unmarshal number 2147483648 into Go struct field PodSpec.spec.priority "
            "of type int32",
        ),
        (
            {"tolerations": [{"effect": ["NoSchedule"]}]},
            "json: cannot unmarshal array into Go struct field Toleration.spec.tolerations.effect "
            "of type v1.TaintEffect",
        ),
        (
            {"containers": [{"name": 1}]},
            "json: cannot unmarshal number into Go struct field Container.spec.containers.name "
            "of type string",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_a_400_worded_as_the_go_decoder(sim, spec, message):
    code, status = call(sim, "POST", "/api/v1/namespaces/default/pods", pod(**spec))

    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == f'Pod in version "v1" cannot be handled as a Pod: {message}'
    (cause,) = status["details"]["causes"]
    assert cause["field"] in message


def test_a_quantity_error_wins_over_an_earlier_type_error_as_the_decoder_stops_there(sim):
    body = pod(priority="high", overhead={"cpu": "abc"})

    code, status = call(sim, "POST", "/api/v1/namespaces/default/pods", body)

    assert code == 400 and "quantities must match the regular expression" in status["message"]
    assert status["details"]["causes"][0]["field"] == "spec.overhead"


def test_nulls_are_zero_values_and_not_stored(sim):
    body = pod(nodeSelector=None, tolerations=[None])

    code, created = call(sim, "POST", "/api/v1/namespaces/default/pods", body)

    assert code == 201
    assert "nodeSelector" not in created["spec"] and created["spec"]["tolerations"] == [{}]


def test_container_names_are_dns_labels_unique_across_init_containers(sim):
    body = pod(
        containers=[{"name": "main", "image": "a"}, {"name": "main", "image": "a"}],
        initContainers=[
            {"name": "Main_1", "image": "a"},
            {"name": "main", "image": "a"},
            {"image": "a"},
        ],
    )

    code, status = call(sim, "POST", "/api/v1/namespaces/default/pods", body)

    assert (code, status["reason"]) == (422, "Invalid")
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [
        ("spec.containers[1].name", "FieldValueDuplicate"),
        ("spec.initContainers[0].name", "FieldValueInvalid"),
        ("spec.initContainers[1].name", "FieldValueDuplicate"),
        ("spec.initContainers[2].name", "FieldValueRequired"),
    ]
    assert 'spec.containers[1].name: Duplicate value: "main"' in status["message"]


def test_a_queue_is_held_to_volcanos_crd_schema(sim):
    spec = {
        "weight": -3,
        "capability": {"cpu": True, "memory": "abc"},
        "dequeueStrategy": "random",
        "parent": "Not_A_Name",
        "priority": 1.5,
    }

    code, status = call(sim, "POST", f"{VOLCANO}/queues", {"metadata": {"name": "q"}, "spec": spec})

    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith('Queue.scheduling.volcano.sh "q" is invalid: [')
    messages = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert messages == {
        "spec.weight": "Invalid value: -3: spec.weight in body should be greater than or equal to 1",
        "spec.capability.cpu": 'Invalid value: "boolean": spec.capability.cpu in body must be of '
        'type integer,string: "boolean"',
        "spec.capability.memory": messages["spec.capability.memory"],
        "spec.dequeueStrategy": 'Unsupported value: "random": supported values: "fifo", "traverse"',
        "spec.parent": messages["spec.parent"],
        "spec.priority": 'Invalid value: "number": spec.priority in body must be of type '
        'integer: "number"',
    }
    assert "should match" in messages["spec.capability.memory"]
    assert "should match" in messages["spec.parent"]


def test_a_podgroup_min_member_below_zero_is_invalid(sim):
    body = {"metadata": {"name": "g"}, "spec": {"minMember": -1}}

    code, status = call(sim, "POST", f"{VOLCANO}/namespaces/default/podgroups", body)

    assert code == 422
    assert status["message"] == (
        'PodGroup.scheduling.volcano.sh "g" is invalid: spec.minMember: Invalid value: -1: '
        "spec.minMember in body should be greater than or equal to 0"
    )


def test_the_crd_defaults_are_applied_and_nulls_dropped(sim):
    _, queue = call(sim, "POST", f"{VOLCANO}/queues", {"metadata": {"name": "q"}, "spec": {}})
    body = {"metadata": {"name": "g"}, "spec": {"minMember": 1, "queue": None}}
    _, group = call(sim, "POST", f"{VOLCANO}/namespaces/default/podgroups", body)

    assert queue["spec"] == {"weight": 1, "dequeueStrategy": "traverse"}
    assert group["spec"] == {"minMember": 1, "queue": "default"}


def test_an_update_is_not_refused_for_a_value_it_did_not_change(sim):
    """CRD validation ratcheting: a Queue stored with weight 0 (before the rule, or by hand)
    can still have its capability changed; changing the weight to another bad value fails."""
    sim.store.create(
        "queues",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "old"},
            "spec": {"weight": 0},
        },
    )
    patch = "application/merge-patch+json"

    code, _ = call(
        sim, "PATCH", f"{VOLCANO}/queues/old", {"spec": {"capability": {"cpu": "2"}}}, patch
    )
    assert code == 200
    code, status = call(sim, "PATCH", f"{VOLCANO}/queues/old", {"spec": {"weight": -1}}, patch)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.weight"


def test_a_custom_resource_metadata_field_that_does_not_decode_is_a_bad_request(sim):
    """apiextensions-apiserver drops malformed metadata only when reading from storage
    (dropInvalidMetadata); a request body's is the decoder's 400."""
    body = {"metadata": {"name": "q2", "labels": ["a"]}, "spec": {}}

    code, status = call(sim, "POST", f"{VOLCANO}/queues", body)

    assert code == 400
    assert "Go struct field ObjectMeta.labels of type map[string]string" in status["message"]
    assert sim.store.peek("queues", "", "q2") is None
    code, status = call(sim, "POST", f"{VOLCANO}/queues", {"metadata": {"name": 7}})
    assert code == 400 and status["details"]["causes"][0]["field"] == "metadata.name"
