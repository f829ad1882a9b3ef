"""Volcano's pod scheduling readiness design and its queue-allocation gate (the gate-controlled
scheduling design)."""

import copy

import pytest

from scheduler.api.report import PodState, TransitionKind
from scheduler.api.task_info import TaskInfo
from scheduler.cache import SchedulerCache
from scheduler.config import SchedulerConfig, default_config
from scheduler.loop import run_cycle
from tests.builders import GATE, node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import Scenario, binds, conditions, pg_status, waiting

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
    assert [(t.kind, t.from_state, t.to_state) for t in report.transitions] == [
        (TransitionKind.GATE_REMOVED, PodState.GATED, PodState.WAITING),
        (TransitionKind.ALLOCATED, PodState.WAITING, PodState.BINDING),
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
    cache = scenario.cache()
    client = RecordingClusterClient()
    report = run_cycle(cache, default_config(), client, now=0.0)
    assert len(client.of("remove_scheduling_gate")) == 1
    # The pod still carries the gate until the watch says otherwise: no Unschedulable yet.
    assert client.of("patch_pod_condition") == []
    reserved = next(q for q in report.queues if q.name == "default").reserved
    assert reserved == {"cpu": 1000, "memory": 2**30}

    ungated = copy.deepcopy(scenario.pods[0])
    ungated["spec"]["schedulingGates"] = []
    cache.update_pod(ungated)  # the watch event of the removal
    report = run_cycle(cache, default_config(), client, now=1.0)
    assert len(client.of("remove_scheduling_gate")) == 1  # not removed twice
    cond = conditions(client)["ns/p"]
    assert cond["reason"] == "Unschedulable"
    assert "didn't match Pod's node affinity/selector" in cond["message"]
    reserved = next(q for q in report.queues if q.name == "default").reserved
    assert reserved == {"cpu": 1000, "memory": 2**30}


def test_a_pod_ungated_and_bound_by_one_statement_has_its_gate_lifted_once_by_its_bind():
    """The bind leaves as its statement commits and lifts the gate just before (the bind
    path's synchronous removal): queueing the asynchronous removal too would PATCH the pod
    twice, and a reservation stamped on a pod being bound holds nothing."""
    queued = []
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", gates=[GATE], opt_in=True)])
    client = RecordingClusterClient()
    report = run_cycle(
        scenario.cache(), default_config(), client, now=0.0,
        gate_remover=lambda ns, name, uid, since: queued.append((ns, name, uid)),
    )  # fmt: skip
    assert queued == []
    assert [c[0] for c in client.calls] == ["remove_scheduling_gate", "bind"]
    assert report.gates == {"queued": 0, "at_bind": 1}
    assert [t.kind.value for t in report.transitions] == ["gate_removed", "allocated"]


def test_a_gate_its_bind_failed_to_lift_is_lifted_again_by_the_next_cycle():
    """The bind lifts the gate of a pod its statement ungated and bound; when that removal is
    refused, the pod is still gated, and the next cycle must ungate it again — here, with no
    node left, through the queued removal. (Noting the removal before it happened made the
    cache take the pod as ungated: no removal was sent again, and the pod kept the bind's
    SchedulerError while it fit no node: simulation seed 154.)"""
    scenario = Scenario(nodes=[node("n1")], pods=[pod("p", gates=[GATE], opt_in=True)])
    cache = scenario.cache()
    refused = RecordingClusterClient(fail={("remove_scheduling_gate", "ns/p")})
    first = run_cycle(cache, default_config(), refused, now=0.0,
                      gate_remover=lambda *args: None)  # fmt: skip
    assert [t.kind.value for t in first.transitions] == ["gate_removed", "bind_failed"]
    cache.delete_node(node("n1"))
    queued = []
    run_cycle(cache, default_config(), RecordingClusterClient(), now=1.0,
              gate_remover=lambda ns, name, uid, since: queued.append(name))  # fmt: skip
    assert queued == ["p"]


def test_a_pod_ungated_without_a_node_has_its_removal_queued_not_awaited():
    """Its queue has room, no node has: the removal is queued (never awaited by the cycle)
    and its reservation stamped on the pod meanwhile."""
    queued = []
    scenario = Scenario(nodes=[node("n1")],
                        pods=[pod("p", gates=[GATE], opt_in=True, selector={"pool": "new"})])  # fmt: skip
    client = RecordingClusterClient()
    report = run_cycle(
        scenario.cache(), default_config(), client, now=0.0,
        gate_remover=lambda ns, name, uid, since: queued.append((ns, name, uid)),
    )  # fmt: skip
    assert [q[:2] for q in queued] == [("ns", "p")]
    assert [c[0] for c in client.calls] == ["stamp_reservation"]
    assert report.gates == {"queued": 1, "at_bind": 0}


def test_a_gate_removal_the_watch_never_confirms_lapses_and_is_queued_again():
    queued = []
    scenario = Scenario(
        nodes=[node("n1")], pods=[pod("p", gates=[GATE], opt_in=True, selector={"pool": "new"})]
    )
    cache, client = scenario.cache(), RecordingClusterClient()

    def cycle(now):
        remover = lambda ns, name, uid, since: queued.append(name)  # noqa: E731
        return run_cycle(cache, default_config(), client, now=now, gate_remover=remover)

    cycle(0.0)
    cycle(1.0)
    assert queued == ["p"]  # trusted while the confirmation may still come
    cache.ungate_confirm_timeout = 0.0
    cycle(2.0)
    assert queued == ["p", "p"]


def test_ungated_pending_pod_reserves_queue_capacity_for_itself():
    # The gate-controlled scheduling design's race: pod-2 was ungated but waits for a node; pod-3 must not take its place.
    pod2 = pod(
        "pod-2", "1", group="g2", queue="q", opt_in=True, selector={"pool": "new"}, created=1
    )
    pod3 = pod("pod-3", "1", group="g3", queue="q", opt_in=True, gates=[GATE], created=2)
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "1"})],
        podgroups=[podgroup("g2", 1, queue="q", phase="Inqueue"),
                   podgroup("g3", 1, queue="q", phase="Inqueue")],
        pods=[pod2, pod3],
    )  # fmt: skip
    report, client = scenario.run()
    assert binds(client) == {}
    assert client.of("remove_scheduling_gate") == []
    assert "queue q capability exceeded" in waiting(report)["ns/pod-3"]
    assert "ns/pod-3" not in conditions(client)  # still gated: no Unschedulable


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
    assert [(t.kind, t.from_state, t.to_state) for t in report.transitions] == [
        (TransitionKind.GATE_REMOVED, PodState.GATED, PodState.WAITING),
        (TransitionKind.ALLOCATED, PodState.WAITING, PodState.BINDING),
    ]


def _race_scenario(**capacity_args) -> Scenario:
    pod2 = pod(
        "pod-2", "1", group="g2", queue="q", opt_in=True, selector={"pool": "new"}, created=1
    )
    pod3 = pod("pod-3", "1", group="g3", queue="q", opt_in=True, gates=[GATE], created=2)
    config = default_config()
    if capacity_args:
        config = with_capacity_arguments(config, capacity_args)
    return Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "1"})],
        podgroups=[podgroup("g2", 1, queue="q", phase="Inqueue"),
                   podgroup("g3", 1, queue="q", phase="Inqueue")],
        pods=[pod2, pod3],
        config=config,
    )  # fmt: skip


def with_capacity_arguments(config, arguments: dict):
    raw = config.to_dict()
    for tier in raw["tiers"]:
        for plugin in tier["plugins"]:
            if plugin["name"] == "capacity":
                plugin["arguments"] = {**plugin["arguments"], **arguments}
    return SchedulerConfig.from_dict(raw)


def test_without_reservations_the_seed_race_happens():
    report, client = _race_scenario(gateReservation=False).run()
    assert binds(client) == {"ns/pod-3": "n1"}  # pod-3 took the capacity pod-2 was waiting for


def test_a_reservation_held_past_its_limit_is_released_with_an_event_and_a_notice():
    scenario = _race_scenario(reservationTimeout=600)
    cache, client = scenario.cache(), RecordingClusterClient()
    config = scenario.config
    report = run_cycle(cache, config, client, now=1000.0)
    assert binds(client) == {} and report.notices == []
    report = run_cycle(cache, config, client, now=1599.0)
    assert binds(client) == {} and report.notices == []  # held 599 s: still reserved

    report = run_cycle(cache, config, client, now=1600.0)
    assert report.notices == [
        "pod ns/pod-2: reservation of 1 CPU, 1Gi memory in queue q released after 10m0s "
        "without a node (limit 10m0s)"
    ]
    events = [c for c in client.of("record_event") if c[3] == "QueueReservationExpired"]
    assert [e[1] for e in events] == ["ns/pod-2"]
    assert binds(client) == {"ns/pod-3": "n1"}  # the queue is free for others again

    report = run_cycle(cache, config, client, now=1700.0)
    assert report.notices == []  # released once, never re-reserved
    assert len([c for c in client.of("record_event") if c[3] == "QueueReservationExpired"]) == 1


def test_capacity_arguments_are_checked():
    scenario = _race_scenario(gateReservation="yes")
    with pytest.raises(ValueError, match="argument gateReservation: expected true or false"):
        scenario.run()


def test_an_opted_in_gang_that_exactly_fills_its_queue_is_placed_whole():
    # Each placed member's share is held by its allocation, no longer also by its reservation:
    # counting both made the second member overflow a queue the gang exactly fits.
    report, client = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "2", "memory": "8Gi"})],
        podgroups=[podgroup("g", 2, queue="q", phase="Inqueue")],
        pods=[pod(f"g{i}", group="g", opt_in=True, created=i) for i in range(2)],
    ).run()
    assert binds(client) == {"ns/g0": "n1", "ns/g1": "n1"}
    assert {q.name: q.reserved for q in report.queues}["q"] == {}


def test_the_report_says_how_much_of_inqueue_gate_reservations_already_hold():
    # Both pods are admitted (inqueue) and fit no node; only the opted-in one holds a gate
    # reservation, so 1 of the 2 CPU in inqueue is also in reserved.
    scenario = Scenario(
        nodes=[node("n1")],
        pods=[pod("ours", gates=[GATE], opt_in=True, selector={"pool": "new"}),
              pod("plain", selector={"pool": "new"})],
    )  # fmt: skip
    report, _ = scenario.run()
    default = next(q for q in report.queues if q.name == "default")
    assert default.inqueue == {"cpu": 2000, "memory": 2 * 2**30}
    assert default.reserved == {"cpu": 1000, "memory": 2**30}
    assert default.inqueue_reserved == {"cpu": 1000, "memory": 2**30}


def test_a_parent_queue_reports_its_childrens_reservations_like_their_inqueue():
    scenario = Scenario(
        nodes=[node("n1")],
        queues=[queue("dept"), queue("team", parent="dept")],
        pods=[pod("ours", queue="team", gates=[GATE], opt_in=True, selector={"pool": "new"})],
    )
    report, _ = scenario.run()
    by_name = {q.name: q for q in report.queues}
    one_pod = {"cpu": 1000, "memory": 2**30}
    for name in ("team", "dept"):
        assert by_name[name].inqueue == one_pod
        assert by_name[name].reserved == one_pod
        assert by_name[name].inqueue_reserved == one_pod
