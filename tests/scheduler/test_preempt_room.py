"""preempt skips, before listing victims, the nodes where evicting could never make room
(scheduler.actions.eviction.may_hold_after_evictions, preempt's _VictimRoom); these cases sit
at the edge of those bounds, where a node must still be tried."""

from __future__ import annotations

from scheduler.api.report import CycleReport, QueueReport
from scheduler.config import SchedulerConfig
from tests.builders import node, pod, podgroup, queue
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


def _one_victim_on_n2() -> Scenario:
    """n1 holds 3 CPU of a low-priority pod that may not be preempted; n2 has 1 CPU idle and a
    2-CPU pod to evict: only n2's future idle plus its victim holds the 3-CPU preemptor."""
    return Scenario(
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


def test_victims_of_the_preemptors_queue_make_the_room_on_the_node_that_holds_them():
    scenario = _one_victim_on_n2()
    assert _evicted(scenario) == ["ns/low1"]


def test_each_node_whose_victims_would_do_is_a_preemption_attempt():
    """Volcano's RegisterPreemptionAttempts (actions/preempt/preempt.go, normalPreempt): once
    per node whose victims pass ValidateVictims. n1's victim is not preemptable, so n1 is no
    attempt; n2's is: one attempt, reported for volcano_total_preemption_attempts."""
    scenario = _one_victim_on_n2()
    scenario.config = SchedulerConfig.from_yaml(CONFIG, source="test")
    scenario.priority_classes = {"low": 1, "high": 100}
    report, _ = scenario.run()
    assert report.preemption_attempts == 1
    assert CycleReport.from_json(report.to_json()).preemption_attempts == 1


def test_a_queue_request_is_its_placed_and_pending_tasks_up_the_hierarchy():
    """Volcano's capacity plugin attr.request (plugins/capacity/capacity.go): every allocated
    and pending task's request, added to each ancestor with enableHierarchy."""
    scenario = Scenario(
        nodes=[node("n1", cpu="4", memory="64Gi")],
        queues=[
            queue("parent", capability={"cpu": "8"}),
            queue("child", parent="parent", weight=3),
        ],
        podgroups=[
            podgroup("running", 1, queue="child", phase="Running"),
            podgroup("waiting", 2, queue="child", phase="Inqueue"),
        ],
        pods=[
            pod("r0", "1", "1Gi", group="running", node_name="n1"),
            pod("w0", "2", "1Gi", group="waiting"),
            pod("w1", "2", "1Gi", group="waiting"),
        ],
    )
    scenario.config = SchedulerConfig.from_yaml(CONFIG, source="test")
    report, _ = scenario.run(act=False)
    by_name = {q.name: q for q in report.queues}
    assert by_name["child"].request["cpu"] == 5000
    assert by_name["parent"].request["cpu"] == 5000
    assert by_name["child"].weight == 3
    assert QueueReport.from_json(by_name["child"].to_json()).request == by_name["child"].request
