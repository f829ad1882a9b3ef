"""Risk classes for the dashboard, for workloads of any QoS class."""

from __future__ import annotations

from scheduler.admission.node_groups import NodeGroup
from scheduler.admission.risk import RiskClass, assess_risk
from tests.builders import node, pod
from tests.scheduler.admission.helpers import story1_snapshot

BIG_GROUP = NodeGroup("big", node("template-big", "8", "32Gi"), max_size=3, current_size=0)
SMALL_GROUP = NodeGroup("small", node("template-small", "2", "4Gi"), max_size=10, current_size=0)


def test_fits_now():
    risk = assess_risk([pod("p", "2", namespace="ml", guaranteed=True)], story1_snapshot())
    assert risk.risk is RiskClass.FITS_NOW and risk.certain
    assert risk.explanation.startswith("all 1 pod(s) fit")


def test_burstable_pod_is_sized_by_requests_where_limits_are_absent():
    burstable = pod("b", None, None, requests={"cpu": "3", "memory": "1Gi"}, namespace="ml")
    risk = assess_risk([burstable], story1_snapshot())
    assert risk.risk is RiskClass.FITS_NO_NODE_SHAPE
    assert "3 CPU" in risk.explanation


def test_fits_after_scale_up_names_group_and_count():
    risk = assess_risk(
        [pod("p", "3", namespace="ml", guaranteed=True)],
        story1_snapshot(),
        node_groups=[SMALL_GROUP, BIG_GROUP],
    )
    assert risk.risk is RiskClass.FITS_AFTER_SCALE_UP
    assert risk.new_nodes == {"big": 1}
    assert "1 node(s) to group big" in risk.explanation
    assert "no suitable node has 3 CPU free" in risk.explanation


def test_scale_up_respects_max_size():
    full = NodeGroup("big", BIG_GROUP.template, max_size=3, current_size=3)
    risk = assess_risk(
        [pod("p", "3", namespace="ml", guaranteed=True)], story1_snapshot(), node_groups=[full]
    )
    assert risk.risk is RiskClass.FITS_NO_NODE_SHAPE
    assert "no node group can add a node it fits" in risk.explanation


def test_gang_may_need_several_groups_together():
    one_each = [
        NodeGroup("big", BIG_GROUP.template, max_size=1),
        NodeGroup("other", node("template-other", "8", "32Gi"), max_size=1),
    ]
    risk = assess_risk(
        [pod(f"w{i}", "6", namespace="ml", guaranteed=True) for i in range(2)],
        story1_snapshot(),
        node_groups=one_each,
    )
    assert risk.risk is RiskClass.FITS_AFTER_SCALE_UP
    assert risk.new_nodes == {"big": 1, "other": 1}


def test_fits_no_node_shape_when_nothing_is_big_enough():
    risk = assess_risk(
        [pod("p", "16", namespace="ml", guaranteed=True)],
        story1_snapshot(),
        node_groups=[BIG_GROUP, SMALL_GROUP],
    )
    assert risk.risk is RiskClass.FITS_NO_NODE_SHAPE
    assert risk.new_nodes is None


def test_waiting_for_queue_keeps_the_evaluation():
    risk = assess_risk(
        [pod("p", "2", namespace="ml", guaranteed=True)], story1_snapshot(), queue_has_room=False
    )
    assert risk.risk is RiskClass.WAITING_FOR_QUEUE
    assert risk.evaluation.fits
    assert risk.explanation.startswith("the queue has no room for it yet")


def test_bound_pods_of_an_admitted_workload_are_skipped():
    running = pod("w0", "2", "2Gi", node_name="node-0", namespace="ml", guaranteed=True)
    risk = assess_risk(
        [running, pod("w1", "2", namespace="ml", guaranteed=True)], story1_snapshot()
    )
    assert risk.risk is RiskClass.FITS_NOW
    assert list(risk.evaluation.placement) == ["ml/w1"]
