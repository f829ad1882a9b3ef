"""proportion: deserved shares by weighted water-filling, queue order, overused, allocatable,
enqueue against the real capability, reclaim, event handlers, report figures, and Sluice's
gate reservations shared with capacity (Volcano's proportion.go at ed72c7c8)."""

import pytest

from scheduler.api.resource import Resource
from scheduler.api.status import Code
from scheduler.framework.statement import Statement
from scheduler.loop import run_cycle
from scheduler.plugins.proportion_shares import (
    ProportionAttr,
    exceeds,
    fill_deserved,
    insufficient,
    queue_share,
    real_capability,
)
from tests.builders import GATE, node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient
from tests.scheduler.plugins.sessions import configuration, open_session, task_named
from tests.scheduler.uthelper import Scenario, binds, pg_status, waiting

GIB = 2**30


def proportion_config(actions: str = "enqueue, allocate, backfill", **arguments):
    plugin = {"name": "proportion", "arguments": arguments} if arguments else "proportion"
    return configuration(
        ["priority", "gang", "conformance"],
        ["drf", "predicates", plugin, "nodeorder"],
        actions=actions,
    )


def attrs(total: Resource, *specs: dict) -> list[ProportionAttr]:
    """Queue attributes as the plugin builds them: name, weight, request, guarantee,
    capability (CPU in millicores)."""
    out = []
    for spec in specs:
        capability = spec.get("capability")
        attr = ProportionAttr(
            spec["name"],
            "root",
            Resource(spec.get("guarantee") or {}),
            Resource(),
            Resource(capability) if capability else None,
        )
        attr.weight = spec.get("weight", 1)
        attr.request = Resource(spec.get("request") or {})
        out.append(attr)
    total_guarantee = Resource()
    for attr in out:
        total_guarantee.add(attr.guarantee)
    for attr in out:
        attr.real_capability = real_capability(total, total_guarantee, attr)
    return out


def deserved_cpu(queues: list[ProportionAttr]) -> dict[str, float]:
    return {a.name: a.deserved.get("cpu") for a in queues}


# --- water-filling ----------------------------------------------------------------------------


def test_what_a_queue_does_not_request_goes_to_the_others():
    queues = attrs(
        Resource({"cpu": 10000}),
        {"name": "a", "request": {"cpu": 2000}},
        {"name": "b", "request": {"cpu": 20000}},
    )
    fill_deserved(queues, Resource({"cpu": 10000}))
    assert deserved_cpu(queues) == {"a": 2000, "b": 8000}


def test_shares_follow_weights():
    total = Resource({"cpu": 8000})
    queues = attrs(
        total,
        {"name": "a", "weight": 1, "request": {"cpu": 8000}},
        {"name": "b", "weight": 3, "request": {"cpu": 8000}},
    )
    fill_deserved(queues, total)
    assert deserved_cpu(queues) == {"a": 2000, "b": 6000}


def test_a_capability_stops_a_queue_and_the_rest_is_shared_again():
    total = Resource({"cpu": 12000})
    queues = attrs(
        total,
        {"name": "a", "request": {"cpu": 10000}, "capability": {"cpu": 2000}},
        {"name": "b", "request": {"cpu": 10000}},
    )
    fill_deserved(queues, total)
    assert deserved_cpu(queues) == {"a": 2000, "b": 10000}


def test_a_guarantee_is_deserved_and_kept_out_of_the_other_queues_real_capability():
    total = Resource({"cpu": 10000})
    queues = attrs(
        total,
        {"name": "a", "request": {"cpu": 1000}, "guarantee": {"cpu": 4000}},
        {"name": "b", "request": {"cpu": 10000}},
    )
    assert [a.real_capability.get("cpu") for a in queues] == [10000, 6000]
    fill_deserved(queues, total)
    assert deserved_cpu(queues) == {"a": 4000, "b": 6000}


def test_a_queue_of_weight_zero_deserves_nothing():
    total = Resource({"cpu": 10000, "pods": 110})
    queues = attrs(
        total,
        {"name": "a", "weight": 0, "request": {"cpu": 5000}},
        {"name": "b", "request": {"cpu": 5000}},
    )
    fill_deserved(queues, total)
    assert deserved_cpu(queues) == {"a": 0, "b": 5000}


def test_an_empty_deserved_share_has_share_zero():
    # Volcano's updateQueueAttrShare loops over the deserved share's dimensions: none, 0.
    assert queue_share(Resource({"cpu": 1000}), Resource()) == 0.0
    assert queue_share(Resource({"cpu": 1000}), Resource({"cpu": 4000, "memory": GIB})) == 0.25


def test_comparisons_name_only_the_requested_dimensions_as_volcano_words_them():
    used = Resource({"cpu": 3000, "memory": 3 * GIB, "nvidia.com/gpu": 2000, "pods": 9})
    limit = Resource({"cpu": 2000, "memory": 2 * GIB, "pods": 1})
    assert exceeds(used, limit, Resource({"memory": GIB, "pods": 1})) == ["memory"]
    names = exceeds(used, limit, used)
    assert names == ["cpu", "memory", "nvidia.com/gpu"]
    assert insufficient("queue resource quota insufficient", "insufficient", names) == (
        "queue resource quota insufficient: insufficient cpu, insufficient memory, "
        "insufficient nvidia.com/gpu"
    )


# --- figures and order in a session ---------------------------------------------------------


def two_queue_scenario(**extra) -> Scenario:
    return Scenario(
        nodes=[node("n1", cpu="4", memory="8Gi")],
        queues=[queue("a", created=1), queue("b", created=2)],
        pods=[
            pod("a-run", "1", queue="a", node_name="n1"),
            pod("a-wait", "2", queue="a", created=1),
            pod("b-wait", "1", queue="b", created=2),
        ],
        **extra,
    )


def test_session_figures_and_report_per_queue():
    ssn = open_session(two_queue_scenario(), proportion_config())
    a, b = ssn.queue_attrs["a"], ssn.queue_attrs["b"]
    # 4 CPU: 2 each; b requests only 1, the rest goes to a (which requests 3).
    assert (a.deserved.get("cpu"), b.deserved.get("cpu")) == (3000, 1000)
    assert a.allocated == Resource({"cpu": 1000, "memory": GIB})
    assert a.share == 0.5 and b.share == 0  # memory: 1Gi of the 2Gi it deserves
    assert a.real_capability.get("cpu") == 4000
    # Queues without jobs take no part in the sharing, and have figures for the report.
    assert ssn.queue_attrs["default"].deserved == Resource()


def test_the_cycle_report_carries_the_plugins_figures():
    scenario = two_queue_scenario(config=proportion_config())
    report, client = scenario.run()
    assert binds(client) == {"ns/a-wait": "n1", "ns/b-wait": "n1"}
    a = next(q for q in report.queues if q.name == "a")
    assert a.capability == {"cpu": 4000, "memory": 8 * GIB, "pods": 110}
    assert a.deserved == {"cpu": 3000, "memory": 2 * GIB}
    assert a.allocated == {"cpu": 3000, "memory": 2 * GIB}
    assert a.share == 1.0 and not a.over_deserved
    assert (a.inqueue, a.reserved, a.inqueue_reserved) == ({}, {}, {})


def test_lower_share_first_at_equal_priority_then_priority_first():
    ssn = open_session(two_queue_scenario(), proportion_config())
    order = sorted((ssn.queues[q] for q in ("a", "b")), key=ssn.queue_order_key)
    assert [q.name for q in order] == ["b", "a"]
    scenario = two_queue_scenario()
    scenario.queues = [queue("a", priority=10), queue("b")]
    ssn = open_session(scenario, proportion_config())
    order = sorted((ssn.queues[q] for q in ("a", "b")), key=ssn.queue_order_key)
    assert [q.name for q in order] == ["a", "b"]


def test_equal_shares_fall_to_creation_time_whatever_the_deserved_share():
    # "be" requests nothing (best effort): its deserved share is empty, its share 0, as b's.
    scenario = Scenario(
        nodes=[node("n1")],
        queues=[queue("b", created=2), queue("be", created=1)],
        pods=[pod("b0", queue="b"), pod("be0", cpu=None, memory=None, queue="be")],
    )
    ssn = open_session(scenario, proportion_config())
    assert ssn.queue_attrs["be"].deserved == Resource()
    order = sorted((ssn.queues[q] for q in ("b", "be")), key=ssn.queue_order_key)
    assert [q.name for q in order] == ["be", "b"]


def test_allocation_events_move_the_share_and_undoing_them_moves_it_back():
    ssn = open_session(two_queue_scenario(), proportion_config())
    b = ssn.queue_attrs["b"]
    stmt = Statement(ssn)
    stmt.allocate(task_named(ssn, "b-wait"), ssn.nodes["n1"])
    assert b.share == 1.0 and b.allocated.get("cpu") == 1000
    assert ssn.overused(ssn.queues["b"])
    stmt.discard()
    assert b.share == 0 and not ssn.overused(ssn.queues["b"])


def test_allocatable_refuses_beyond_the_deserved_share_and_says_so():
    scenario = Scenario(
        nodes=[node("n1", cpu="4")],
        queues=[queue("a"), queue("b")],
        pods=[pod(f"a{i}", "1", queue="a", created=i) for i in range(4)]
        + [pod(f"b{i}", "1", queue="b", created=i) for i in range(4)],
        config=proportion_config(),
    )
    report, client = scenario.run()
    assert sorted(binds(client)) == ["ns/a0", "ns/a1", "ns/b0", "ns/b1"]
    why = {w.name: w.status for w in report.waiting}
    assert why["a2"].code is Code.QUEUE_FULL and why["a2"].plugin == "proportion"
    assert why["a2"].message.startswith(
        "queue a deserved share exceeded: insufficient cpu (allocated 2 CPU, 2Gi memory; "
    )


def test_a_closed_queue_admits_and_allocates_nothing():
    scenario = Scenario(
        nodes=[node("n1")],
        queues=[queue("q", state="Closed")],
        podgroups=[podgroup("g", 1, queue="q", min_resources={"cpu": "1"})],
        pods=[pod("g0", group="g")],
    )
    ssn = open_session(scenario, proportion_config())
    verdict = ssn.job_enqueueable(ssn.jobs["ns/g"])
    assert (verdict.code, verdict.message) == (Code.QUEUE_CLOSED, "queue q is not open")
    assert ssn.allocatable(ssn.queues["q"], task_named(ssn, "g0")).code is Code.QUEUE_CLOSED


# --- enqueue ---------------------------------------------------------------------------------


def test_enqueue_measures_min_resources_against_the_cluster_less_other_guarantees():
    scenario = Scenario(
        nodes=[node("n1", cpu="4")],
        queues=[queue("kept", guarantee={"cpu": "3"}), queue("q")],
        podgroups=[podgroup("g", 1, queue="q", min_resources={"cpu": "2"})],
        pods=[pod("g0", "2", group="g")],
        config=proportion_config(),
    )
    report, client = scenario.run()
    assert "ns/g" not in pg_status(client) or pg_status(client)["ns/g"]["phase"] == "Pending"
    assert waiting(report)["ns/g0"] == "queue resource quota insufficient: insufficient cpu"


def test_enqueue_counts_admitted_jobs_and_admits_jobs_without_min_resources():
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "3"})],
        podgroups=[
            podgroup("first", 1, queue="q", min_resources={"cpu": "2"}),
            podgroup("second", 1, queue="q", min_resources={"cpu": "2"}, created=1),
            podgroup("free", 1, queue="q", created=2),
        ],
        pods=[
            pod("f0", "2", group="first"),
            pod("s0", "2", group="second"),
            pod("x0", "1", group="free"),
        ],
        config=proportion_config(actions="enqueue"),
    )
    _, client = scenario.run()
    phases = {k: v.get("phase") for k, v in pg_status(client).items()}
    assert phases["ns/first"] == "Inqueue" and phases["ns/free"] == "Inqueue"
    assert phases.get("ns/second", "Pending") == "Pending"


def test_the_elastic_part_of_running_jobs_does_not_block_admission():
    # A running job holds 3 CPU with minResources of 1: 2 of them are elastic.
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "4"})],
        podgroups=[
            podgroup("run", 1, queue="q", min_resources={"cpu": "1"}, phase="Running"),
            podgroup("new", 1, queue="q", min_resources={"cpu": "3"}),
        ],
        pods=[
            *(pod(f"r{i}", "1", group="run", node_name="n1") for i in range(3)),
            pod("n0", "3", group="new"),
        ],
        config=proportion_config(actions="enqueue"),
    )
    _, client = scenario.run()
    assert pg_status(client)["ns/new"]["phase"] == "Inqueue"


def test_an_inqueue_job_with_binding_tasks_is_not_counted_twice():
    # Volcano's TestNoDoubleCountingForInqueueJobWithBindingTasks: pgA's tasks bound in the
    # first cycle are Binding and pgA still Inqueue; pgB must still enter and run.
    scenario = Scenario(
        nodes=[node("n1", cpu="4", memory="8Gi")],
        queues=[queue("q", capability={"cpu": "4", "memory": "8Gi"})],
        podgroups=[
            podgroup(
                "pga", 3, queue="q", min_resources={"cpu": "3", "memory": "3Gi"}, phase="Inqueue"
            )
        ],
        pods=[pod(f"pa{i}", "1", "1Gi", group="pga") for i in range(3)],
    )
    cache, client, config = scenario.cache(), RecordingClusterClient(), proportion_config()
    run_cycle(cache, config, client, now=0.0)
    assert len(binds(client)) == 3
    cache.add_podgroup(podgroup("pgb", 1, queue="q", min_resources={"cpu": "1", "memory": "1Gi"}))
    cache.add_pod(pod("pb", "1", "1Gi", group="pgb"))
    run_cycle(cache, config, client, now=1.0)
    assert binds(client)["ns/pb"] == "n1"


# --- reclaim ---------------------------------------------------------------------------------


def reclaim_scenario() -> Scenario:
    return Scenario(
        nodes=[node("n1", cpu="4", memory="8Gi")],
        queues=[queue("busy"), queue("starved")],
        pods=[
            *(pod(f"b{i}", "1", queue="busy", node_name="n1", created=i) for i in range(4)),
            pod("s0", "1", queue="starved"),
        ],
        config=proportion_config(actions="enqueue, allocate, reclaim"),
    )


def test_reclaim_takes_from_a_queue_above_its_deserved_share_until_it_is_back():
    # busy requests 4 and starved 1 of 4 CPU: busy deserves 3 and holds 4, so one pod goes.
    report, client = reclaim_scenario().run()
    assert len(client.of("evict")) == 1
    assert client.of("evict")[0][1].startswith("ns/b")
    assert [w.name for w in report.waiting if w.state.value == "pipelined"] == ["s0"]


def test_reclaimable_and_preemptive_answers():
    # proportion alone: with gang and conformance in the first tier, as in Volcano's default
    # configuration, their answer (every candidate) would decide, tier by tier.
    ssn = open_session(reclaim_scenario(), configuration(["proportion"]))
    starved = task_named(ssn, "s0")
    busy = [task_named(ssn, f"b{i}") for i in range(4)]
    assert ssn.reclaimable(starved, busy) == busy[:1]
    assert ssn.preemptive(ssn.queues["starved"], starved).ok
    refusal = ssn.preemptive(ssn.queues["busy"], starved)
    assert refusal.code is Code.QUEUE_FULL
    assert refusal.message.startswith("queue busy would exceed its deserved share (cpu, memory:")


# --- gate reservations (shared with capacity) ------------------------------------------------


def race_scenario(**arguments) -> Scenario:
    """2 CPU, two queues of equal weight that each request more than 1: q deserves 1 CPU.
    pod-2 passes q's check first (its gate is gone) but no node takes it (its selector);
    pod-3, still gated, must not take the share pod-2 holds."""
    return Scenario(
        nodes=[node("n1", cpu="2")],
        queues=[queue("q"), queue("other")],
        podgroups=[
            podgroup("g2", 1, queue="q", phase="Inqueue"),
            podgroup("g3", 1, queue="q", phase="Inqueue"),
        ],
        pods=[
            pod("pod-2", "1", group="g2", opt_in=True, selector={"pool": "new"}, created=1),
            pod("pod-3", "1", group="g3", opt_in=True, gates=[GATE], created=2),
            pod("o0", "2", queue="other"),
        ],
        config=proportion_config(**arguments),
    )


def test_an_ungated_pending_pod_holds_its_share_of_the_deserved_share():
    report, client = race_scenario().run()
    assert binds(client) == {}
    assert client.of("remove_scheduling_gate") == []
    assert waiting(report)["ns/pod-3"].startswith(
        "queue q deserved share exceeded: insufficient cpu (allocated nothing; "
        "reserved 1 CPU, 1Gi memory;"
    )
    q = next(r for r in report.queues if r.name == "q")
    assert q.reserved == {"cpu": 1000, "memory": GIB}


def test_without_reservations_the_race_happens():
    _, client = race_scenario(gateReservation=False).run()
    assert binds(client) == {"ns/pod-3": "n1"}


def test_a_reservation_held_past_its_limit_is_released_once():
    scenario = race_scenario(reservationTimeout=600)
    cache, client = scenario.cache(), RecordingClusterClient()
    assert run_cycle(cache, scenario.config, client, now=1000.0).notices == []
    assert run_cycle(cache, scenario.config, client, now=1599.0).notices == []
    assert binds(client) == {}
    report = run_cycle(cache, scenario.config, client, now=1600.0)
    assert report.notices == [
        "pod ns/pod-2: reservation of 1 CPU, 1Gi memory in queue q released after 10m0s "
        "without a node (limit 10m0s)"
    ]
    assert binds(client) == {"ns/pod-3": "n1"}
    assert run_cycle(cache, scenario.config, client, now=1700.0).notices == []


def test_an_opted_in_gang_that_exactly_fills_its_deserved_share_is_placed_whole():
    report, client = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q")],
        podgroups=[podgroup("g", 2, queue="q", phase="Inqueue")],
        pods=[pod(f"g{i}", group="g", opt_in=True, created=i) for i in range(2)],
        config=proportion_config(),
    ).run()
    assert binds(client) == {"ns/g0": "n1", "ns/g1": "n1"}
    assert {q.name: q.reserved for q in report.queues}["q"] == {}


def test_the_report_says_how_much_of_inqueue_gate_reservations_already_hold():
    report, _ = Scenario(
        nodes=[node("n1")],
        pods=[
            pod("ours", gates=[GATE], opt_in=True, selector={"pool": "new"}),
            pod("plain", selector={"pool": "new"}),
        ],
        config=proportion_config(),
    ).run()
    default = next(q for q in report.queues if q.name == "default")
    assert default.inqueue == {"cpu": 2000, "memory": 2 * GIB}
    assert default.reserved == {"cpu": 1000, "memory": GIB}
    assert default.inqueue_reserved == {"cpu": 1000, "memory": GIB}


def test_reservation_arguments_are_checked_at_load():
    with pytest.raises(ValueError, match="argument gateReservation: expected true or false"):
        proportion_config(gateReservation="yes")
