"""gang: all or nothing, minMember, validity, PodGroup conditions."""

import pytest

from tests.builders import node, pod, podgroup
from tests.scheduler.uthelper import Scenario, binds, pg_status


def gang_pods(group: str, count: int, cpu: str = "1") -> list[dict]:
    return [pod(f"{group}-{i}", cpu, "1Gi", group=group, created=i) for i in range(count)]


@pytest.mark.parametrize(
    ("min_member", "pods", "node_cpu", "expected_binds"),
    [
        (3, 3, "4", 3),  # fits: all three bind
        (3, 3, "2", 0),  # only two fit: nothing binds (all or nothing)
        (2, 3, "2", 2),  # minMember 2 of 3: two bind, the job is ready
        (1, 4, "2", 2),  # minMember 1: as many as fit
    ],
)
def test_gang_is_all_or_nothing(min_member, pods, node_cpu, expected_binds):
    scenario = Scenario(
        nodes=[node("n1", cpu=node_cpu)],
        podgroups=[podgroup("job", min_member, phase="Inqueue")],
        pods=gang_pods("job", pods),
    )
    _, client = scenario.run()
    assert len(binds(client)) == expected_binds


def test_unready_gang_gets_unschedulable_condition_with_counts():
    # 6 CPU in the cluster (the queue allows all three) but each node holds one 2-CPU pod.
    scenario = Scenario(
        nodes=[node("n1", cpu="3"), node("n2", cpu="3")],
        podgroups=[podgroup("job", 3, phase="Inqueue")],
        pods=gang_pods("job", 3, cpu="2"),
    )
    _, client = scenario.run()
    status = pg_status(client)["ns/job"]
    cond = status["conditions"][-1]
    assert (cond["type"], cond["reason"]) == ("Unschedulable", "NotEnoughResources")
    assert cond["message"].startswith("3/3 tasks in gang unschedulable: ")
    assert "Insufficient cpu" in cond["message"]
    assert status["phase"] == "Inqueue"
    events = client.of("record_event")
    assert events and events[0][3] == "Unschedulable"


def test_ready_gang_gets_scheduled_condition_and_running_phase():
    scenario = Scenario(
        nodes=[node("n1")],
        podgroups=[podgroup("job", 2, phase="Inqueue")],
        pods=gang_pods("job", 2),
    )
    _, client = scenario.run()
    status = pg_status(client)["ns/job"]
    # Volcano's getPodGroupPhase: sent to bind is not scheduled yet; Running comes with the
    # pods bound, the next cycle.
    assert status["phase"] == "Inqueue"
    cond = status["conditions"][-1]
    assert (cond["type"], cond["reason"]) == (
        "Scheduled",
        "tasks in gang are ready to be scheduled",
    )
    bound = Scenario(
        nodes=[node("n1")],
        podgroups=[podgroup("job", 2, phase="Inqueue", conditions=status["conditions"])],
        pods=[{**p, "spec": {**p["spec"], "nodeName": "n1"}} for p in gang_pods("job", 2)],
    )
    _, client = bound.run()
    assert pg_status(client)["ns/job"]["phase"] == "Running"


def test_job_with_fewer_valid_tasks_than_min_member_is_not_scheduled():
    scenario = Scenario(
        nodes=[node("n1")],
        podgroups=[podgroup("job", 3, phase="Inqueue")],
        pods=gang_pods("job", 2),
    )
    report, client = scenario.run()
    assert binds(client) == {}
    cond = pg_status(client)["ns/job"]["conditions"][-1]
    assert cond["reason"] == "NotEnoughTasks"
    assert cond["message"] == "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"


def test_discarded_gang_frees_nodes_for_the_next_job():
    scenario = Scenario(
        nodes=[node("n1", cpu="2")],
        podgroups=[
            podgroup("big", 3, phase="Inqueue", created=0),
            podgroup("small", 2, phase="Inqueue", created=1),
        ],
        pods=gang_pods("big", 3) + gang_pods("small", 2),
    )
    _, client = scenario.run()
    assert sorted(binds(client)) == ["ns/small-0", "ns/small-1"]
