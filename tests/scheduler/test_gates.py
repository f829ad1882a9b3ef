"""Pod Scheduling Readiness (seed 003) and the queue-allocation gate (seed 000)."""

from scheduler.api.task_info import TaskInfo
from scheduler.cache import RecordingClusterClient, SchedulerCache
from tests.scheduler.uthelper import (
    GATE,
    Scenario,
    binds,
    conditions,
    node,
    pg_status,
    pod,
    podgroup,
    queue,
    waiting,
)

FOREIGN = "example.com/quota"


def test_pod_with_foreign_gate_is_skipped_and_keeps_its_condition():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", gates=[FOREIGN])])
    report, client = scenario.run()
    assert binds(client) == {}
    assert client.of("patch_pod_condition") == []  # never Unschedulable
    assert client.of("remove_scheduling_gate") == []
    assert FOREIGN in waiting(report)["ns/p"]
    assert next(q for q in report.queues if q.name == "default").counts["gated"] == 1


def test_our_gate_is_removed_when_the_queue_has_room_then_the_pod_binds():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", gates=[GATE], opt_in=True)])
    report, client = scenario.run()
    assert [c[0] for c in client.calls] == ["remove_scheduling_gate", "bind"]
    assert [(t.from_status, t.to_status) for t in report.transitions] == [
        ("Gated", "Pending"),
        ("Pending", "Binding"),
    ]


def test_our_gate_stays_when_the_queue_is_full_and_no_unschedulable():
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "1"})],
        pods=[pod("run", "1", queue="q", node_name="n1"),
              pod("p", "1", queue="q", gates=[GATE], opt_in=True)],
    )  # fmt: skip
    report, client = scenario.run()
    assert client.of("remove_scheduling_gate") == []
    assert client.of("patch_pod_condition") == []
    assert waiting(report)["ns/p"] == "queue resource quota insufficient: insufficient cpu"


def test_gate_removed_but_no_node_fits_reports_unschedulable():
    # The autoscaler must see this one: the queue has room, the cluster does not.
    scenario = Scenario(
        nodes=[node("n1")],
        pods=[pod("p", gates=[GATE], opt_in=True, selector={"pool": "new"})],
    )
    report, client = scenario.run()
    assert len(client.of("remove_scheduling_gate")) == 1
    cond = conditions(client)["ns/p"]
    assert cond["reason"] == "Unschedulable"
    assert "didn't match Pod's node affinity/selector" in cond["message"]
    reserved = next(q for q in report.queues if q.name == "default").reserved
    assert reserved == {"cpu": 1000, "memory": 2**30}


def test_ungated_pending_pod_reserves_queue_capacity_for_itself():
    # Seed 000's race: pod-2 was ungated but waits for a node; pod-3 must not take its place.
    pod2 = pod("pod-2", "1", queue="q", opt_in=True, selector={"pool": "new"}, created=1)
    pod3 = pod("pod-3", "1", queue="q", opt_in=True, gates=[GATE], created=2)
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "1"})],
        podgroups=[podgroup("g2", 1, queue="q", phase="Inqueue"),
                   podgroup("g3", 1, queue="q", phase="Inqueue")],
        pods=[_in_group(pod2, "g2"), _in_group(pod3, "g3")],
    )  # fmt: skip
    report, client = scenario.run()
    assert binds(client) == {}
    assert client.of("remove_scheduling_gate") == []
    assert "queue q capability exceeded" in waiting(report)["ns/pod-3"]
    assert "ns/pod-3" not in conditions(client)  # still gated: no Unschedulable


def _in_group(p: dict, group: str) -> dict:
    p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = group
    return p


def test_foreign_gated_resources_are_deducted_from_inqueue():
    # Job a is admitted (4 CPU) but its pods are gated by someone else: b may still enter.
    scenario = _two_jobs(gates=[FOREIGN], opt_in=False)
    _, client = scenario.run()
    assert pg_status(client)["ns/b"]["phase"] in ("Inqueue", "Running")


def test_pods_gated_only_by_our_gate_still_count_in_inqueue():
    scenario = _two_jobs(gates=[GATE], opt_in=True, queue_cpu="4")
    report, client = scenario.run()
    assert "ns/b" not in pg_status(client) or pg_status(client)["ns/b"]["phase"] == "Pending"
    assert waiting(report)["ns/b0"] == "queue resource quota insufficient: insufficient cpu"


def _two_jobs(gates, opt_in, queue_cpu="4") -> Scenario:
    return Scenario(
        nodes=[node("n1", cpu="16")],
        queues=[queue("q", capability={"cpu": queue_cpu})],
        podgroups=[
            podgroup("a", 1, queue="q", min_resources={"cpu": "4"}, phase="Inqueue"),
            podgroup("b", 1, queue="q", min_resources={"cpu": "4"}, created=1),
        ],
        pods=[
            pod("a0", "4", group="a", gates=gates, opt_in=opt_in),
            pod("b0", "4", group="b"),
        ],
    )


def test_job_blocked_only_by_gates_says_so():
    scenario = Scenario(
        nodes=[node("n1")],
        podgroups=[podgroup("g", 2, phase="Inqueue")],
        pods=[pod("g0", group="g"), pod("g1", group="g", gates=[FOREIGN])],
    )
    _, client = scenario.run()
    cond = pg_status(client)["ns/g"]["conditions"][-1]
    assert cond["reason"] == "SchedulingGated"
    assert cond["message"] == (
        "2/2 tasks in gang unschedulable: 1 task(s) waiting for scheduling gates "
        f"to be removed: {FOREIGN}"
    )
    assert binds(client) == {}
    # The ungated member was placed then discarded with the gang: it is Unschedulable, the
    # gated one keeps SchedulingGated.
    assert set(conditions(client)) == {"ns/g0"}


def test_backfill_skips_gated_best_effort_pods():
    scenario = Scenario(
        nodes=[node("n1")],
        pods=[
            pod("be", cpu=None, memory=None),
            pod("be-gated", cpu=None, memory=None, gates=[FOREIGN]),
        ],
    )
    _, client = scenario.run()
    assert binds(client) == {"ns/be": "n1"}


def test_bind_removes_our_gate_synchronously_when_still_present():
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    gated = pod("p", gates=[GATE], opt_in=True)
    cache.add_pod(gated)
    client = RecordingClusterClient()
    cache.bind(TaskInfo(gated), "n1", client)
    assert [c[0] for c in client.calls] == ["remove_scheduling_gate", "bind"]


def test_get_sch_gated_pod_resources_excludes_pods_gated_only_by_us():
    cache = SchedulerCache()
    cache.add_podgroup(podgroup("g", 1, phase="Inqueue"))
    cache.add_pod(pod("ours", "1", group="g", gates=[GATE], opt_in=True))
    cache.add_pod(pod("both", "2", group="g", gates=[GATE, FOREIGN], opt_in=True))
    cache.add_pod(pod("foreign", "4", group="g", gates=[FOREIGN]))
    cache.add_pod(pod("free", "8", group="g"))
    job = cache.snapshot().jobs["ns/g"]
    assert job.get_sch_gated_pod_resources().get("cpu") == 6000
    from scheduler.api.resource import Resource

    assert job.deduct_sch_gated_resources(Resource({"cpu": 10000})).get("cpu") == 4000
    assert job.deduct_sch_gated_resources(Resource({"cpu": 1000})).get("cpu") == 0


def test_opted_in_pod_with_a_foreign_gate_too_keeps_both_gates():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", gates=[GATE, FOREIGN], opt_in=True)])
    report, client = scenario.run()
    assert client.calls == []
    assert FOREIGN in waiting(report)["ns/p"]


def test_observe_mode_removes_no_gate_but_reports_it():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", gates=[GATE], opt_in=True)])
    report, client = scenario.run(act=False)
    assert client.calls == []
    assert [(t.from_status, t.to_status) for t in report.transitions] == [
        ("Gated", "Pending"),
        ("Pending", "Binding"),
    ]
