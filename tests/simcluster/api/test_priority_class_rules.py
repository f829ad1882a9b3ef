"""PriorityClasses, pod priority admission and ConfigMap limits, answered word for word as
kube-apiserver v1.32 answers them (pkg/apis/scheduling/validation, plugin/pkg/admission/priority,
pkg/registry/scheduling/priorityclass/storage, pkg/apis/core/validation ValidateConfigMap)."""

from __future__ import annotations

import base64

import pytest

from tests.simcluster.api.conftest import Sim
from tests.simcluster.api.helpers import http

CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def make_class(sim: Sim, name: str, value: int, **fields: object) -> tuple[int, dict]:
    return http(
        sim.server.url, "POST", CLASSES, {"metadata": {"name": name}, "value": value, **fields}
    )


def merge_patch(sim: Sim, path: str, patch: dict) -> tuple[int, dict]:
    return http(sim.server.url, "PATCH", path, patch, content_type="application/merge-patch+json")


def test_a_new_class_is_defaulted_as_the_v1_api_does(sim: Sim) -> None:
    code, created = make_class(sim, "high", 1000)
    assert code == 201
    assert created["preemptionPolicy"] == "PreemptLowerPriority"
    assert "globalDefault" not in created  # omitempty
    code, zero = http(sim.server.url, "POST", CLASSES, {"metadata": {"name": "zero"}})
    assert code == 201 and zero["value"] == 0


def test_value_and_preemption_policy_are_immutable(sim: Sim) -> None:
    make_class(sim, "high", 1000)
    code, status = merge_patch(sim, f"{CLASSES}/high", {"value": 2000})
    assert code == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        'PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: may not be '
        "changed in an update."
    )
    assert status["details"]["group"] == "scheduling.k8s.io"
    assert status["details"]["kind"] == "PriorityClass"
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be changed in an update.",
            "field": "value",
        }
    ]
    code, status = merge_patch(sim, f"{CLASSES}/high", {"preemptionPolicy": "Never"})
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "Never": field is immutable',
            "field": "preemptionPolicy",
        }
    ]
    # Everything else may change; a body without the policy gets the default: no change.
    body = {"metadata": {"name": "high"}, "value": 1000, "description": "more"}
    code, updated = http(sim.server.url, "PUT", f"{CLASSES}/high", body)
    assert code == 200 and updated["description"] == "more"
    assert updated["preemptionPolicy"] == "PreemptLowerPriority"


def test_the_value_of_a_user_class_is_bounded_on_create(sim: Sim) -> None:
    code, status = make_class(sim, "huge", 1_000_000_001)
    assert code == 422
    assert status["message"] == (
        'PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum allowed '
        "value of a user defined priority is 1000000000"
    )
    assert make_class(sim, "top", 1_000_000_000)[0] == 201


def test_the_system_prefix_is_reserved_for_the_system_classes(sim: Sim) -> None:
    code, status = make_class(sim, "system-mine", 5)
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: priority class names with 'system-' prefix are reserved for "
            "system use only. error: system-mine is not a known system priority class",
            "field": "metadata.name",
        }
    ]
    code, status = make_class(sim, "system-node-critical", 5)
    assert code == 422 and status["message"].endswith(
        "error: value of system-node-critical PriorityClass must be 2000001000"
    )
    # Exactly a system class passes validation, then meets the one that exists.
    assert make_class(sim, "system-node-critical", 2_000_001_000)[0] == 409


def test_an_unsupported_policy_and_an_undecodable_value(sim: Sim) -> None:
    code, status = make_class(sim, "odd", 1, preemptionPolicy="Sometimes")
    assert code == 422
    assert status["details"]["causes"][0]["message"] == (
        'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'
    )
    code, status = make_class(sim, "odd", "1")
    assert code == 400
    assert status["message"] == (
        'PriorityClass in version "v1" cannot be handled as a PriorityClass: json: cannot '
        "unmarshal string into Go struct field PriorityClass.value of type int32"
    )
    code, status = make_class(sim, "odd", 3_000_000_000)
    assert code == 400 and "unmarshal number 3000000000 into" in status["message"]


def test_one_global_default_on_create_and_on_update(sim: Sim) -> None:
    assert make_class(sim, "a", 10, globalDefault=True)[0] == 201
    code, status = make_class(sim, "b", 20, globalDefault=True)
    assert code == 403 and status["reason"] == "Forbidden"
    assert status["message"] == (
        'priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already '
        "marked as default. Only one default can exist"
    )
    assert status["details"] == {
        "name": "b",
        "group": "scheduling.k8s.io",
        "kind": "priorityclasses",
    }
    make_class(sim, "b", 20)
    code, status = merge_patch(sim, f"{CLASSES}/b", {"globalDefault": True})
    assert code == 403 and "PriorityClass a is already marked as default" in status["message"]
    # The default itself may be updated, and once it steps down another may take its place.
    assert merge_patch(sim, f"{CLASSES}/a", {"description": "x"})[0] == 200
    assert merge_patch(sim, f"{CLASSES}/a", {"globalDefault": False})[0] == 200
    assert merge_patch(sim, f"{CLASSES}/b", {"globalDefault": True})[0] == 200


def test_an_invalid_label_names_the_group_of_the_kind(sim: Sim) -> None:
    """errors.NewInvalid takes a GroupKind: the message qualifies the kind, details carry the
    group apart (kubectl prints "The PriorityClass ... is invalid")."""
    code, status = http(
        sim.server.url,
        "POST",
        CLASSES,
        {"metadata": {"name": "odd", "labels": {"a b": "x"}}, "value": 1},
    )
    assert code == 422
    assert status["message"].startswith(
        'PriorityClass.scheduling.k8s.io "odd" is invalid: metadata.labels: Invalid value: "a b"'
    )
    assert (status["details"]["group"], status["details"]["kind"]) == (
        "scheduling.k8s.io",
        "PriorityClass",
    )


def test_a_custom_resource_invalid_status_also_carries_its_group_apart(sim: Sim) -> None:
    path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
    group = {"metadata": {"name": "g"}, "spec": {"minResources": {"cpu": "abc"}}}
    code, status = http(sim.server.url, "POST", path, group)
    assert code == 422
    assert status["message"].startswith('PodGroup.scheduling.volcano.sh "g" is invalid: ')
    assert (status["details"]["group"], status["details"]["kind"]) == (
        "scheduling.volcano.sh",
        "PodGroup",
    )


def test_the_system_classes_cannot_be_deleted(sim: Sim) -> None:
    for name in ("system-node-critical", "system-cluster-critical"):
        code, status = http(sim.server.url, "DELETE", f"{CLASSES}/{name}")
        assert code == 403
        assert status["message"] == (
            f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a system '
            "priority class and cannot be deleted"
        )
    make_class(sim, "mine", 1)
    assert http(sim.server.url, "DELETE", f"{CLASSES}/mine")[0] == 200


HIGH = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
"""


@pytest.mark.kubectl
def test_kubectl_prints_the_refusals_as_from_kube_apiserver(sim: Sim, kubectl) -> None:
    """kubectl words a 422 from its details ("The <kind> <name> is invalid: ...") and any
    other Status as "Error from server (<reason>): ..."."""
    kubectl("apply", "-f", "-", stdin=HIGH)
    changed = kubectl("apply", "-f", "-", stdin=HIGH.replace("1000", "2000"), check=False)
    assert changed.returncode == 1
    assert changed.stderr.strip() == (
        'The PriorityClass "high" is invalid: value: Forbidden: may not be changed in an update.'
    )
    kept = kubectl("get", "priorityclass", "high", "-o", "jsonpath={.value}")
    assert kept.stdout == "1000"
    deleted = kubectl("delete", "priorityclass", "system-node-critical", check=False)
    assert deleted.returncode == 1
    assert deleted.stderr.strip() == (
        'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical"'
        " is forbidden: this is a system priority class and cannot be deleted"
    )
    reserved = HIGH.replace("high", "system-mine")
    created = kubectl("apply", "-f", "-", stdin=reserved, check=False)
    assert created.stderr.strip() == (
        'The PriorityClass "system-mine" is invalid: metadata.name: Forbidden: priority class '
        "names with 'system-' prefix are reserved for system use only. error: system-mine is "
        "not a known system priority class"
    )


def pod(name: str, **spec: object) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


def test_a_pod_takes_its_class_preemption_policy_and_may_not_contradict_it(sim: Sim) -> None:
    make_class(sim, "calm", 100, preemptionPolicy="Never")
    code, created = http(sim.server.url, "POST", PODS, pod("a", priorityClassName="calm"))
    assert code == 201 and created["spec"]["preemptionPolicy"] == "Never"
    code, created = http(
        sim.server.url,
        "POST",
        PODS,
        pod("b", priorityClassName="calm", preemptionPolicy="Never"),
    )
    assert code == 201
    code, status = http(
        sim.server.url,
        "POST",
        PODS,
        pod("c", priorityClassName="calm", preemptionPolicy="PreemptLowerPriority"),
    )
    assert code == 403
    assert status["message"] == (
        'pods "c" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) '
        "must not be provided in pod spec; priority admission controller computed Never from "
        "the given PriorityClass name"
    )
    assert status["details"] == {"name": "c", "kind": "pods"}
    # No class and no default: the plugin computes PreemptLowerPriority.
    code, status = http(sim.server.url, "POST", PODS, pod("d", preemptionPolicy="Never"))
    assert code == 403 and "computed PreemptLowerPriority" in status["message"]
    code, created = http(sim.server.url, "POST", PODS, pod("e"))
    assert code == 201 and created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


def config_map(name: str, **sections: dict) -> dict:
    return {"metadata": {"name": name}, **sections}


def test_a_config_map_holds_at_most_one_mebibyte(sim: Sim) -> None:
    half = "x" * (1 << 19)
    exact = config_map(
        "exact", data={"a": half}, binaryData={"b": base64.b64encode(half.encode()).decode()}
    )
    assert http(sim.server.url, "POST", CONFIG_MAPS, exact)[0] == 201
    over = config_map("over", data={"a": half + "x"}, binaryData=exact["binaryData"])
    code, status = http(sim.server.url, "POST", CONFIG_MAPS, over)
    assert code == 422
    assert status["message"] == (
        'ConfigMap "over" is invalid: []: Too long: may not be more than 1048576 bytes'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 1048576 bytes",
            "field": "[]",
        }
    ]
    code, _ = merge_patch(sim, f"{CONFIG_MAPS}/exact", {"data": {"a": half + "x"}})
    assert code == 422


def test_a_config_map_key_is_in_data_or_binary_data_not_both(sim: Sim) -> None:
    body = config_map("dup", data={"k": "v"}, binaryData={"k": "eA=="})
    code, status = http(sim.server.url, "POST", CONFIG_MAPS, body)
    assert code == 422
    assert status["message"] == (
        'ConfigMap "dup" is invalid: data[k]: Invalid value: "k": duplicate of key present in '
        "binaryData"
    )


def test_binary_data_is_decoded_as_go_decodes_base64(sim: Sim) -> None:
    prefix = 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
    for value, offset in (("eA=", 3), ("e!==", 1), ("eA==eA==", 4), ("eAb", 0), ("AAAA=", 4)):
        code, status = http(
            sim.server.url, "POST", CONFIG_MAPS, config_map("bin", binaryData={"k": value})
        )
        assert code == 400, value
        assert status["message"] == f"{prefix}illegal base64 data at input byte {offset}"
    # Go skips CR and LF anywhere.
    body = config_map("bin", binaryData={"k": "eA\r\n=="})
    assert http(sim.server.url, "POST", CONFIG_MAPS, body)[0] == 201
