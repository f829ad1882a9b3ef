"""Field and label selectors on lists, through the API: each form kube-apiserver accepts for
the fields it selects on, alone and together (simcluster.api.selectors)."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from tests.builders import body, node


def _event(sim, name: str, reason: str, component: str, kind: str = "Pod") -> None:
    sim.core.create_namespaced_event("default", {
        "metadata": {"name": name, "namespace": "default", "labels": {"by": component}},
        "involvedObject": {"kind": kind, "name": "x", "namespace": "default"},
        "reason": reason, "message": "m", "type": "Normal", "source": {"component": component},
    })  # fmt: skip


def _names(items) -> list[str]:  # noqa: ANN001
    return sorted(i.metadata.name for i in items)


def test_event_selectors_by_reason_source_kind_and_labels(sim):
    _event(sim, "up", "TriggeredScaleUp", "cluster-autoscaler")
    _event(sim, "no", "NotTriggerScaleUp", "cluster-autoscaler")
    _event(sim, "bound", "Scheduled", "volcano", kind="PodGroup")

    def listed(fields: str | None = None, labels: str | None = None) -> list[str]:
        return _names(sim.core.list_event_for_all_namespaces(
            field_selector=fields, label_selector=labels).items)  # fmt: skip

    assert listed("reason=TriggeredScaleUp") == ["up"]
    assert listed("reason!=TriggeredScaleUp") == ["bound", "no"]
    assert listed("source=cluster-autoscaler") == ["no", "up"]  # source is its component
    assert listed("source=cluster-autoscaler,reason==NotTriggerScaleUp") == ["no"]
    assert listed("involvedObject.kind=PodGroup") == ["bound"]
    assert listed("reason=Scheduled", "by=cluster-autoscaler") == []
    assert listed("metadata.name=up", "by in (cluster-autoscaler, volcano)") == ["up"]
    assert listed(labels="by=volcano") == ["bound"]
    assert listed() == ["bound", "no", "up"]
    with pytest.raises(ApiException) as refused:
        listed("message=m")
    assert (
        refused.value.status == 400 and "field label not supported: message" in refused.value.body
    )


def test_a_boolean_field_is_selected_by_its_text(sim):
    sim.core.create_node(body(node("free")))
    cordoned = body(node("cordoned"))
    cordoned["spec"] = {"unschedulable": True}
    sim.core.create_node(cordoned)
    assert _names(sim.core.list_node(field_selector="spec.unschedulable=true").items) == [
        "cordoned"
    ]
    assert _names(sim.core.list_node(field_selector="spec.unschedulable!=true").items) == ["free"]
