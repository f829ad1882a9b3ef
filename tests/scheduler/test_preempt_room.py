"""preempt skips, before listing victims, the nodes where evicting could never make room
(scheduler.actions.eviction.may_hold_after_evictions, preempt's _VictimRoom); these cases sit
at the edge of those bounds, where a node must still be tried."""

from __future__ import annotations

from scheduler.config import SchedulerConfig
from tests.builders import node, pod, podgroup
from tests.scheduler.uthelper import Scenario

CONFIG = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: capacity, enableHierarchy: true}]
"""


def _evicted(scenario: Scenario) -> list[str]:
    scenario.config = SchedulerConfig.from_yaml(CONFIG, source="test")
    scenario.priority_classes = {"low": 1, "high": 100}
    _, client = scenario.run()
    return sorted(c[1] for c in client.of("evict"))


def test_an_overcommitted_node_is_tried_with_what_its_pods_use_not_its_allocatable():
    # Pods bound by another scheduler use 6 CPU of a 4-CPU node: idle is 0, and evicting
    # them frees 6 as Volcano counts future idle, enough for a 5-CPU preemptor.
    scenario = Scenario(
        nodes=[node("n1", cpu="4", memory="64Gi")],
        podgroups=[
            podgroup("low", 1, phase="Running", priority_class="low"),
            podgroup("high", 1, phase="Inqueue", priority_class="high"),
        ],
        pods=[
            *(pod(f"low{i}", "2", "1Gi", group="low", node_name="n1") for i in range(3)),
            pod("high0", "5", "1Gi", group="high"),
        ],
    )
    assert _evicted(scenario) == ["ns/low0", "ns/low1", "ns/low2"]


def test_victims_of_the_preemptors_queue_make_the_room_on_the_node_that_holds_them():
    # n1 holds 3 CPU of low-priority pods; n2 has 1 CPU idle and a 2-CPU pod to evict: only
    # n2's future idle plus its victim holds the 3-CPU preemptor.
    scenario = Scenario(
        nodes=[node("n1", cpu="3", memory="64Gi"), node("n2", cpu="3", memory="64Gi")],
        podgroups=[
            podgroup("low", 1, phase="Running", priority_class="low"),
            podgroup("high", 1, phase="Inqueue", priority_class="high"),
        ],
        pods=[
            pod("low0", "3", "1Gi", group="low", node_name="n1",
                annotations={"volcano.sh/preemptable": "false"}),
            pod("low1", "2", "1Gi", group="low", node_name="n2"),
            pod("high0", "3", "1Gi", group="high"),
        ],
    )  # fmt: skip
    assert _evicted(scenario) == ["ns/low1"]
