"""The simulated cluster's PriorityClasses and ConfigMaps against kube-apiserver's rules
(issue 14: the simulated cluster serves them "validated as kube-apiserver"; README: kubectl
works against it). Each test names the kube-apiserver code whose refusal is missing."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from tests.adversary.helpers import make_pod, scheduling

PRIORITY_CLASS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
description: batch work that matters
"""


def refused(call) -> ApiException:
    with pytest.raises(ApiException) as caught:
        call()
    return caught.value


@pytest.mark.kubectl
def test_kubectl_apply_cannot_change_a_priority_class_value(sim, kubectl):
    """kube-apiserver: ValidatePriorityClassUpdate (pkg/apis/scheduling/validation) —
    "value: Forbidden: may not be changed in an update." A class's value is what every pod
    admitted under it carries in spec.priority; changing it would leave old and new pods of
    one class with different priorities. The simulated cluster lets ``kubectl apply`` change
    it (``priorityclass.scheduling.k8s.io/high configured``)."""
    kubectl("apply", "-f", "-", stdin=PRIORITY_CLASS)
    result = kubectl("apply", "-f", "-", stdin=PRIORITY_CLASS.replace("1000", "2000"), check=False)
    assert result.returncode != 0, result.stdout
    assert scheduling(sim).read_priority_class("high").value == 1000


def test_a_priority_class_preemption_policy_is_immutable(sim):
    """kube-apiserver: ValidatePriorityClassUpdate — preemptionPolicy is immutable
    (ValidateImmutableField). The simulated cluster accepts the patch."""
    api = scheduling(sim)
    api.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    error = refused(lambda: api.patch_priority_class("high", {"preemptionPolicy": "Never"}))
    assert error.status == 422
    assert api.read_priority_class("high").preemption_policy == "PreemptLowerPriority"


def test_only_one_priority_class_can_become_the_global_default_by_update(sim):
    """kube-apiserver's Priority admission plugin validates a PriorityClass on create *and
    update*: "PriorityClass a is already marked as default. Only one default can exist"
    (plugin/pkg/admission/priority, validatePriorityClass). The simulated cluster checks on
    create only, so a patch makes two defaults — after which its own Priority admission gives
    new pods the first default's value while the scheduler's cache takes the last one's."""
    api = scheduling(sim)
    api.create_priority_class({"metadata": {"name": "a"}, "value": 10, "globalDefault": True})
    api.create_priority_class({"metadata": {"name": "b"}, "value": 20})
    error = refused(lambda: api.patch_priority_class("b", {"globalDefault": True}))
    assert error.status in (403, 422)
    defaults = [pc.metadata.name for pc in api.list_priority_class().items if pc.global_default]
    assert defaults == ["a"]


def test_a_user_priority_class_cannot_be_raised_above_one_billion_by_update(sim):
    """kube-apiserver: a user-defined class's value is at most HighestUserDefinablePriority
    (1,000,000,000); the value is also immutable. The simulated cluster refuses 2e9 on create
    but accepts it through a patch, giving a user class a system-critical priority."""
    api = scheduling(sim)
    api.create_priority_class({"metadata": {"name": "b"}, "value": 20})
    error = refused(lambda: api.patch_priority_class("b", {"value": 2_000_000_000}))
    assert error.status in (403, 422)
    assert api.read_priority_class("b").value == 20


def test_the_system_prefix_is_reserved(sim):
    """kube-apiserver: ValidatePriorityClass — "priority class names with 'system-' prefix are
    reserved for system use only" (metadata.name: Forbidden, 422)."""
    api = scheduling(sim)
    error = refused(
        lambda: api.create_priority_class({"metadata": {"name": "system-mine"}, "value": 5})
    )
    assert error.status == 422


def test_the_system_priority_classes_cannot_be_deleted(sim):
    """kube-apiserver: the PriorityClass REST storage refuses to delete a system class —
    403 "this is a system priority class and cannot be deleted"
    (pkg/registry/scheduling/priorityclass/storage). Deleted in the simulated cluster, every
    later pod naming system-node-critical (kube-proxy, CNI daemons) is refused admission."""
    api = scheduling(sim)
    error = refused(lambda: api.delete_priority_class("system-node-critical"))
    assert error.status == 403
    assert api.read_priority_class("system-node-critical").value == 2_000_001_000


def test_a_pod_cannot_contradict_its_class_preemption_policy(sim):
    """kube-apiserver's Priority admission: "the string value of PreemptionPolicy (Never) must
    not be provided in pod spec; priority admission controller computed PreemptLowerPriority
    from the given PriorityClass name" (403). The simulated cluster keeps the pod's own
    ``preemptionPolicy: Never``, which Sluice's preempt and reclaim then honour — a pod no
    real cluster would admit."""
    scheduling(sim).create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    error = refused(
        lambda: make_pod(sim, "p", priority_class="high", spec={"preemptionPolicy": "Never"})
    )
    assert error.status == 403


def test_a_config_map_larger_than_one_mebibyte_is_refused(sim):
    """kube-apiserver: ValidateConfigMap — the data and binaryData together must hold at most
    1 MiB (core.MaxSecretSize): "Too long: must have at most 1048576 bytes" (422). A scheduler
    configuration that loads in the simulated cluster must be one a real cluster would store."""
    body = {"metadata": {"name": "big"}, "data": {"volcano-scheduler.conf": "#" * (2 << 20)}}
    error = refused(lambda: sim.core.create_namespaced_config_map("default", body))
    assert error.status == 422


def test_a_config_map_key_cannot_be_in_data_and_binary_data(sim):
    """kube-apiserver: ValidateConfigMap — "duplicate of key present in binaryData" (422)."""
    body = {
        "metadata": {"name": "dup"},
        "data": {"volcano-scheduler.conf": "actions: allocate"},
        "binaryData": {"volcano-scheduler.conf": "eA=="},
    }
    error = refused(lambda: sim.core.create_namespaced_config_map("default", body))
    assert error.status == 422
