"""drf: dominant resource fairness — job order by dominant share, kept up to date by the event
handlers, and preemptable victims whose job keeps at least the preemptor's share (Volcano's
drf.go at ed72c7c8); enableHierarchy (hdrf) is refused."""

import pytest

from scheduler.config import ConfigError
from scheduler.framework.statement import Statement
from tests.builders import node, pod, podgroup
from tests.scheduler.plugins.sessions import configuration, open_session, task_named
from tests.scheduler.uthelper import Scenario, binds

GIB = 2**30


def drf_config(actions: str = "enqueue, allocate, backfill"):
    return configuration(["priority", "gang"], ["drf", "predicates", "proportion"], actions=actions)


def test_dominant_share_is_the_largest_fraction_of_the_cluster_held():
    # 10 CPU, 20Gi: "cpu-heavy" holds 4 CPU, 2Gi (0.4); "mem-heavy" 1 CPU, 10Gi (0.5).
    scenario = Scenario(
        nodes=[node("n1", cpu="10", memory="20Gi")],
        podgroups=[
            podgroup("cpu-heavy", 1, phase="Running"),
            podgroup("mem-heavy", 1, phase="Running"),
        ],
        pods=[
            pod("c0", "4", "2Gi", group="cpu-heavy", node_name="n1"),
            pod("m0", "1", "10Gi", group="mem-heavy", node_name="n1"),
        ],
    )
    ssn = open_session(scenario, drf_config())
    drf = next(p for p in ssn.plugins if p.name == "drf")
    assert drf.shares == {"ns/cpu-heavy": 0.4, "ns/mem-heavy": 0.5}
    jobs = sorted(ssn.jobs.values(), key=ssn.job_order_key)
    assert [j.name for j in jobs] == ["cpu-heavy", "mem-heavy"]


def test_the_job_with_the_smaller_share_goes_first_and_shares_follow_allocations():
    # Two jobs of four pods in one queue, room for four: DRF alternates between them.
    scenario = Scenario(
        nodes=[node("n1", cpu="4", memory="16Gi")],
        podgroups=[podgroup("a", 1, created=0), podgroup("b", 1, created=1)],
        pods=[pod(f"{g}{i}", "1", group=g, created=i) for g in "ab" for i in range(4)],
        config=drf_config(),
    )
    _, client = scenario.run()
    placed = sorted(binds(client))
    assert placed == ["ns/a0", "ns/a1", "ns/b0", "ns/b1"]


def test_allocating_and_undoing_move_the_share():
    scenario = Scenario(
        nodes=[node("n1", cpu="4", memory="4Gi")],
        podgroups=[podgroup("g", 1)],
        pods=[pod("g0", "1", "1Gi", group="g")],
    )
    ssn = open_session(scenario, drf_config())
    drf = next(p for p in ssn.plugins if p.name == "drf")
    stmt = Statement(ssn)
    stmt.allocate(task_named(ssn, "g0"), ssn.nodes["n1"])
    assert drf.shares["ns/g"] == 0.25
    stmt.discard()
    assert drf.shares["ns/g"] == 0


def preempt_scenario() -> Scenario:
    # 4 CPU, 16Gi: "big" holds 3 CPU in three pods (0.75), "small" 1 CPU (0.25); "new" has none.
    return Scenario(
        nodes=[node("n1", cpu="4", memory="16Gi")],
        podgroups=[
            podgroup("big", 1, phase="Running"),
            podgroup("small", 1, phase="Running"),
            podgroup("new", 1, phase="Inqueue"),
        ],
        pods=[
            *(pod(f"big{i}", "1", "1Gi", group="big", node_name="n1") for i in range(3)),
            pod("small0", "1", "1Gi", group="small", node_name="n1"),
            pod("new0", "1", "1Gi", group="new"),
        ],
    )


def test_victims_are_tasks_whose_job_keeps_at_least_the_preemptors_share():
    ssn = open_session(preempt_scenario(), configuration(["drf"]))
    preemptor = task_named(ssn, "new0")
    candidates = [task_named(ssn, n) for n in ("small0", "big0", "big1", "big2")]
    # With new0 placed, "new" holds 0.25. small0 would leave "small" at 0: not a victim.
    # big loses one task after another: 0.5, 0.25 (equal: still a victim), 0.
    victims = ssn.preemptable(preemptor, candidates)
    assert [t.name for t in victims] == ["big0", "big1"]


def test_preempt_takes_from_the_job_with_the_larger_share():
    scenario = preempt_scenario()
    scenario.config = configuration(
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion"],
        actions="enqueue, allocate, preempt",
    )
    _, client = scenario.run()
    evicted = [c[1] for c in client.of("evict")]
    assert len(evicted) == 1 and evicted[0].startswith("ns/big")


def test_hierarchical_drf_is_a_configuration_error():
    raw = {"name": "drf", "enableHierarchy": True}
    with pytest.raises(ConfigError, match=r"drf enableHierarchy \(hdrf\) is not implemented"):
        configuration([raw])
    assert configuration([{"name": "drf", "enableHierarchy": False}])
