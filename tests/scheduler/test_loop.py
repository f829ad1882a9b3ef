"""run_cycle: the report, observe mode, determinism, backfill, nodeorder and priority."""

import json
import random

from scheduler.api.report import CycleReport, TransitionKind
from scheduler.config import SchedulerConfig
from scheduler.loop import run_cycle
from tests.builders import node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import Scenario, binds, waiting


def mixed_scenario(order_seed: int | None = None) -> Scenario:
    nodes = [node(f"n{i}", cpu="2", memory="4Gi") for i in range(4)]
    pods = [pod(f"p{i}", "500m", "512Mi", created=i % 7) for i in range(12)]
    pods += [pod(f"g{i}", "1", "1Gi", group="gang", created=3) for i in range(3)]
    scenario = Scenario(nodes=nodes, pods=pods, podgroups=[podgroup("gang", 3, phase="Inqueue")])
    if order_seed is not None:
        rng = random.Random(order_seed)
        rng.shuffle(scenario.nodes)
        rng.shuffle(scenario.pods)
    return scenario


def test_same_input_same_binds_whatever_the_event_order():
    first = binds(mixed_scenario().run()[1])
    assert len(first) >= 10
    for seed in range(5):
        assert binds(mixed_scenario(seed).run()[1]) == first


def test_report_is_json_serialisable_and_complete():
    scenario = Scenario(
        nodes=[node("n1", cpu="2")],
        queues=[queue("q", capability={"cpu": "1"})],
        pods=[pod("a", queue="q"), pod("b", queue="q", created=1),
              pod("c", queue="q", gates=["x/y"], created=2)],
    )  # fmt: skip
    report, _ = scenario.run()
    data = json.loads(json.dumps(report.to_json()))
    assert CycleReport.from_json(data) == report  # one schema, both ways
    assert set(data) >= {"started_at", "duration_s", "action_durations_s", "queues",
                         "transitions", "waiting", "mode"}  # fmt: skip
    assert set(data["action_durations_s"]) == {
        "enqueue",
        "allocate",
        "preempt",
        "reclaim",
        "backfill",
    }
    q = next(x for x in data["queues"] if x["name"] == "q")
    assert q["capability"]["cpu"] == 1000 and q["allocated"] == {"cpu": 1000, "memory": 2**30}
    # b waits for its queue's capability, c for a foreign gate: neither lacks a node.
    assert q["counts"]["gated"] == 1 and q["counts"]["waiting"] == 1
    assert q["counts"]["unschedulable"] == 0
    assert data["transitions"] == [{"namespace": "ns", "name": "a", "uid": "uid-ns-a",
                                    "kind": "allocated", "from_state": "waiting",
                                    "to_state": "binding", "node": "n1", "message": "allocated",
                                    "queue": "q"}]  # fmt: skip
    assert set(waiting(report)) == {"ns/b", "ns/c"}


def test_observe_mode_writes_nothing_but_reports_the_same_decisions():
    scenario = mixed_scenario()
    acted, _ = scenario.run(act=True)
    observed, client = scenario.run(act=False)
    assert client.calls == []
    assert observed.mode == "observe"
    assert [t.to_json() for t in observed.transitions] == [t.to_json() for t in acted.transitions]


def test_a_bound_pod_is_not_bound_again_next_cycle():
    from scheduler.loop import run_cycle
    from tests.fakes import RecordingClusterClient

    cache = Scenario(nodes=[node("n1")], pods=[pod("p")]).cache()
    client = RecordingClusterClient()
    run_cycle(cache, None, client, now=0)
    run_cycle(cache, None, client, now=1)
    assert len(client.of("bind")) == 1


def test_pods_of_other_schedulers_are_ignored_but_their_usage_counts():
    scenario = Scenario(
        nodes=[node("n1", cpu="2")],
        pods=[pod("theirs", "2", scheduler="default-scheduler", node_name="n1"),
              pod("pending-theirs", "1", scheduler="default-scheduler"),
              pod("ours", "1")],
    )  # fmt: skip
    report, client = scenario.run()
    assert binds(client) == {}
    assert "Insufficient cpu" in waiting(report)["ns/ours"]
    assert "ns/pending-theirs" not in waiting(report)


def test_backfill_places_best_effort_pods():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("be", cpu=None, memory=None)])
    _, client = scenario.run()
    assert binds(client) == {"ns/be": "n1"}


def test_allocate_does_not_place_best_effort_pods_without_backfill():
    config = SchedulerConfig.from_dict({"actions": "enqueue, allocate",
                                        "tiers": [{"plugins": [{"name": "gang"}]}]})  # fmt: skip
    scenario = Scenario(nodes=[node("n1")], pods=[pod("be", cpu=None, memory=None)], config=config)
    _, client = scenario.run()
    assert binds(client) == {}


def test_leastallocated_spreads_and_binpack_packs():
    nodes = [node("n1", cpu="4"), node("n2", cpu="4")]
    pods = [pod(f"p{i}", "1", created=i) for i in range(2)]
    spread = Scenario(nodes=nodes, pods=pods)
    assert sorted(binds(spread.run()[1]).values()) == ["n1", "n2"]
    packing = SchedulerConfig.from_dict({
        "actions": "enqueue, allocate",
        "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": "capacity"},
                               {"name": "binpack"}]}],
    })  # fmt: skip
    packed = Scenario(nodes=nodes, pods=pods, config=packing)
    assert sorted(binds(packed.run()[1]).values()) == ["n1", "n1"]


def test_priority_class_orders_jobs_then_creation_time():
    scenario = Scenario(
        nodes=[node("n1", cpu="2")],
        priority_classes={"high": 1000},
        pods=[
            pod("old", created=0),
            pod("newer", created=5),
            pod("vip", created=9, priority_class="high"),
        ],
    )
    _, client = scenario.run()
    assert sorted(binds(client)) == ["ns/old", "ns/vip"]


def test_pipelined_when_only_releasing_resources_fit():
    terminating = pod("old", "2", node_name="n1", deletion="2024-01-01T00:00:00Z")
    scenario = Scenario(nodes=[node("n1", cpu="2")], pods=[terminating, pod("new", "2")])
    report, client = scenario.run()
    assert binds(client) == {}
    assert client.of("patch_nominated_node") == [("patch_nominated_node", "ns/new", "n1")]
    assert [(t.kind, t.node) for t in report.transitions] == [(TransitionKind.PIPELINED, "n1")]
    cond = [c for c in client.of("patch_pod_condition") if c[1] == "ns/new"][0][2]
    assert "once resource is released" in cond["message"]


def test_pods_of_a_missing_podgroup_are_reported_waiting_with_the_reason():
    scenario = Scenario(nodes=[node("n1")], pods=[pod("orphan", group="nowhere")])
    report, client = scenario.run()
    # Its condition says why — and not Unschedulable: no node would help it.
    assert client.calls == [
        ("patch_pod_condition", "ns/orphan", {"type": "PodScheduled", "status": "False",
         "reason": "SchedulingSkipped", "message": "podgroup ns/nowhere does not exist"})
    ]  # fmt: skip
    assert waiting(report)["ns/orphan"] == "podgroup ns/nowhere does not exist"


def test_failed_bind_is_reported_and_retried_next_cycle():
    from scheduler.loop import run_cycle
    from tests.fakes import RecordingClusterClient

    cache = Scenario(nodes=[node("n1")], pods=[pod("p")]).cache()
    client = RecordingClusterClient(fail={("bind", "ns/p")})
    report = run_cycle(cache, None, client, now=0)
    assert report.errors and "bind ns/p to n1" in report.errors[0]
    assert report.transitions[0].kind is TransitionKind.BIND_FAILED
    assert report.transitions[0].message.startswith("bind failed")
    client.fail.clear()
    run_cycle(cache, None, client, now=1)
    assert client.binds() == {"ns/p": "n1"}


def test_not_ready_nodes_are_skipped():
    sick = node("a-sick", ready=False)
    scenario = Scenario(nodes=[sick, node("b-ok")], pods=[pod("p")])
    _, client = scenario.run()
    assert binds(client) == {"ns/p": "b-ok"}


def test_higher_priority_task_of_a_job_is_placed_first():
    scenario = Scenario(
        nodes=[node("n1", cpu="1")],
        podgroups=[podgroup("g", 1, phase="Inqueue")],
        pods=[pod("low", group="g", priority=1, created=0),
              pod("high", group="g", priority=100, created=5)],
    )  # fmt: skip
    _, client = scenario.run()
    assert binds(client) == {"ns/high": "n1"}


def test_a_refused_status_write_is_recorded_and_the_cycle_goes_on():
    # The PodGroup was deleted between the snapshot and its status write (404): the cycle
    # still binds what it placed and reports the refusal, naming the object.
    scenario = Scenario(
        nodes=[node("n1")],
        podgroups=[podgroup("g", 1, queue="default")],
        pods=[pod("a", group="g"), pod("b")],
    )
    client = RecordingClusterClient(fail={("patch_podgroup_status", "ns/g")})
    report = run_cycle(scenario.cache(), None, client, now=0)
    assert client.binds() == {"ns/a": "n1", "ns/b": "n1"}
    assert any(e.startswith("podgroup ns/g: update status:") for e in report.errors)
