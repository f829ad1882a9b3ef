"""predicates: resources, pod count, nodeSelector, required affinity, taints and tolerations."""

import pytest

from tests.builders import node, pod
from tests.scheduler.uthelper import Scenario, binds, conditions

TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
AFFINITY_ZONE_B = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b"]}]}]}}}  # fmt: skip
NODES = [
    node("a-plain", labels={"zone": "a"}),
    node("b-tainted", labels={"zone": "b"}, taints=TAINT),
    node("c-zone-b", labels={"zone": "b", "disk": "ssd"}),
]


@pytest.mark.parametrize(
    ("pod_kwargs", "expected_node"),
    [
        ({}, "a-plain"),
        ({"selector": {"disk": "ssd"}}, "c-zone-b"),
        ({"affinity": AFFINITY_ZONE_B}, "c-zone-b"),
        ({"selector": {"zone": "b"}, "tolerations": TOLERATE, "cpu": "3"}, "b-tainted"),
        ({"selector": {"zone": "nowhere"}}, None),
    ],
)
def test_node_constraints_pick_the_node(pod_kwargs, expected_node):
    # Fill c-zone-b a little so "leastallocated" prefers the tainted node when tolerated.
    running = pod("filler", "2", node_name="c-zone-b")
    scenario = Scenario(nodes=NODES, pods=[running, pod("p", **{"cpu": "1", **pod_kwargs})])
    _, client = scenario.run()
    assert binds(client).get("ns/p") == expected_node


def test_taint_without_toleration_is_reported():
    scenario = Scenario(nodes=[node("t", taints=TAINT)], pods=[pod("p")])
    _, client = scenario.run()
    assert binds(client) == {}
    cond = conditions(client)["ns/p"]
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == (
        "0/1 nodes are unavailable: 1 node(s) had untolerated taint {dedicated: gpu}."
    )


def test_message_counts_each_failing_predicate():
    scenario = Scenario(
        nodes=[node("small", cpu="1", labels={"x": "y"}), node("t", taints=TAINT), node("other")],
        pods=[pod("p", "2", selector={"x": "y"})],
    )
    _, client = scenario.run()
    message = conditions(client)["ns/p"]["message"]
    assert "1 Insufficient cpu" in message
    assert "1 node(s) had untolerated taint {dedicated: gpu}" in message
    assert "1 node(s) didn't match Pod's node affinity/selector" in message


def test_pod_count_limit():
    scenario = Scenario(
        nodes=[node("n", pods="2")], pods=[pod(f"p{i}", "100m", "1Mi", created=i) for i in range(3)]
    )
    _, client = scenario.run()
    assert len(binds(client)) == 2
    assert "Too many pods" in conditions(client)["ns/p2"]["message"]


def test_unschedulable_node_is_skipped():
    scenario = Scenario(nodes=[node("cordoned", unschedulable=True), node("ok")], pods=[pod("p")])
    _, client = scenario.run()
    assert binds(client) == {"ns/p": "ok"}


def test_extended_resource_gpu():
    scenario = Scenario(
        nodes=[node("cpu-only"), node("gpu", gpu="2")],
        pods=[pod("p", gpu="1")],
    )
    _, client = scenario.run()
    assert binds(client) == {"ns/p": "gpu"}
