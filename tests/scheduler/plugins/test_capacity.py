"""capacity: capability, guarantee, deserved, enqueue admission, allocatable, hierarchy."""

import pytest

from scheduler import registry
from scheduler.api.queue_info import QueueCycleError, QueueInfo
from scheduler.api.resource import INFINITE, Resource
from scheduler.config import DEFAULT_CONFIG_YAML
from scheduler.plugins.queue_tree import build_flat, build_tree
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.uthelper import Scenario, binds, pg_status, waiting


def pods_in(q: str, count: int, cpu: str = "1", prefix: str = "p") -> list[dict]:
    return [pod(f"{prefix}{i}", cpu, "1Gi", queue=q, created=i) for i in range(count)]


def flat():
    """Sluice's default configuration with capacity as in Volcano's default: no hierarchy."""
    text = DEFAULT_CONFIG_YAML.replace("    enableHierarchy: true\n", "")
    assert text != DEFAULT_CONFIG_YAML
    return registry.load(text)


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        ({"cpu": "2"}, 2),
        ({"cpu": "3", "memory": "2Gi"}, 2),  # memory binds first
        ({"cpu": "0"}, 5),  # a CPU capability <= 0 means unlimited
        (None, 5),
    ],
)
def test_queue_capability_limits_allocation(capability, expected):
    scenario = Scenario(
        nodes=[node("n1", cpu="8", memory="16Gi")],
        queues=[queue("q", capability=capability)],
        pods=pods_in("q", 5),
    )
    _, client = scenario.run()
    assert len(binds(client)) == expected


def test_allocatable_refusal_names_the_queue_limit():
    # An admitted podgroup without minResources: the limit is met at allocation, not enqueue.
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "1"})],
        podgroups=[podgroup("g", 1, queue="q", phase="Inqueue")],
        pods=[pod(f"p{i}", "1", group="g", created=i) for i in range(2)],
    )
    report, _ = scenario.run()
    reason = waiting(report)["ns/p1"]
    assert reason.startswith("queue q capability exceeded: insufficient cpu")


def test_enqueue_refuses_podgroup_over_capability_with_volcano_message():
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "2"})],
        podgroups=[podgroup("big", 1, queue="q", min_resources={"cpu": "3"})],
        pods=[pod("b0", "3", group="big")],
    )
    report, client = scenario.run()
    assert binds(client) == {}
    assert waiting(report)["ns/b0"] == "queue resource quota insufficient: insufficient cpu"
    assert pg_status(client)["ns/big"]["phase"] == "Pending"


def test_enqueue_counts_inqueue_jobs_and_admits_jobs_without_min_resources():
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", capability={"cpu": "4"})],
        podgroups=[
            podgroup("a", 1, queue="q", min_resources={"cpu": "3"}, phase="Inqueue", created=0),
            podgroup("b", 1, queue="q", min_resources={"cpu": "2"}, created=1),
            podgroup("c", 1, queue="q", created=2),
        ],
        pods=[pod("a0", "3", group="a"), pod("b0", "2", group="b"), pod("c0", "100m", group="c")],
    )
    report, client = scenario.run()
    assert "ns/b0" not in binds(client)
    assert waiting(report)["ns/b0"] == "queue resource quota insufficient: insufficient cpu"
    assert {"ns/a0", "ns/c0"} <= set(binds(client))


@pytest.mark.parametrize(("hierarchy", "expected"), [(False, 2), (True, 4)])
def test_guarantee_of_other_queues_is_not_available(hierarchy, expected):
    # 8 CPU cluster, queue "other" guarantees 6. Flat (Volcano's default), "q" can reach only
    # 8 - 6 = 2. With the hierarchy root is unlimited, so q's real capability is too: the
    # guarantee holds by reclaim ("other"'s pods are never victims below it), as in Volcano.
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q"), queue("other", guarantee={"cpu": "6"})],
        pods=pods_in("q", 4),
        config=None if hierarchy else flat(),
    )
    _, client = scenario.run()
    assert len(binds(client)) == expected


def test_closed_queue_allocates_nothing():
    scenario = Scenario(
        nodes=[node("n1")], queues=[queue("q", state="Closed")], pods=pods_in("q", 1)
    )
    report, client = scenario.run()
    assert binds(client) == {}
    assert "not open" in waiting(report)["ns/p0"]


def test_higher_priority_queue_goes_first():
    scenario = Scenario(
        nodes=[node("n1", cpu="2")],
        queues=[queue("low", priority=1), queue("high", priority=10)],
        pods=pods_in("low", 2, prefix="l") + pods_in("high", 2, prefix="h"),
    )
    _, client = scenario.run()
    assert sorted(binds(client)) == ["ns/h0", "ns/h1"]


def test_lower_share_goes_first_at_equal_priority():
    running = [pod(f"r{i}", "1", queue="busy", node_name="n1") for i in range(2)]
    scenario = Scenario(
        nodes=[node("n1", cpu="4")],
        queues=[queue("busy", deserved={"cpu": "4"}), queue("idle", deserved={"cpu": "4"})],
        pods=running + pods_in("busy", 1, prefix="b") + pods_in("idle", 2, prefix="i"),
    )
    _, client = scenario.run()
    assert sorted(binds(client)) == ["ns/i0", "ns/i1"]


# --- hierarchy -------------------------------------------------------------------------------


def test_child_inherits_parent_capability_and_is_checked_with_ancestors():
    scenario = Scenario(
        nodes=[node("n1", cpu="16", memory="64Gi")],
        queues=[queue("dept", capability={"cpu": "3"}), queue("team", parent="dept")],
        pods=pods_in("team", 5),
    )
    report, client = scenario.run()
    assert len(binds(client)) == 3
    team = next(q for q in report.queues if q.name == "team")
    assert team.capability["cpu"] == 3000


def test_child_real_capability_excludes_sibling_guarantees():
    scenario = Scenario(
        nodes=[node("n1", cpu="16", memory="64Gi")],
        queues=[
            queue("dept", capability={"cpu": "6"}),
            queue("a", parent="dept"),
            queue("b", parent="dept", guarantee={"cpu": "4"}),
        ],
        pods=pods_in("a", 5),
    )
    _, client = scenario.run()
    assert len(binds(client)) == 2  # 6 - 4 guaranteed to b


def test_jobs_in_a_parent_queue_are_not_scheduled():
    scenario = Scenario(
        nodes=[node("n1")],
        queues=[queue("dept"), queue("team", parent="dept")],
        pods=pods_in("dept", 1),
    )
    report, client = scenario.run()
    assert binds(client) == {}
    assert "not a leaf queue" in waiting(report)["ns/p0"]


def test_queue_cycle_is_left_out_of_the_tree_and_its_jobs_refused():
    queues = {
        "root": QueueInfo.implicit("root"),
        "a": QueueInfo(queue("a", parent="b")),
        "b": QueueInfo(queue("b", parent="a")),
        "c": QueueInfo(queue("c", parent="gone")),
        "ok": QueueInfo(queue("ok")),
    }
    attrs, problems = build_tree(queues, Resource({"cpu": 8000}))
    assert sorted(attrs) == ["ok", "root"]
    assert problems["a"] == "queue a: spec.parent forms a cycle: a -> b -> a"
    assert problems["c"] == "queue c: spec.parent: queue 'gone' does not exist"


def test_cache_rejects_a_queue_update_that_closes_a_cycle():
    from scheduler.cache import SchedulerCache

    cache = SchedulerCache()
    cache.add_queue(queue("a"))
    cache.add_queue(queue("b", parent="a"))
    with pytest.raises(QueueCycleError, match="queue a: spec.parent forms a cycle: a -> b -> a"):
        cache.add_queue(queue("a", parent="b"))


def test_jobs_in_a_queue_with_a_missing_parent_wait_with_the_reason():
    scenario = Scenario(nodes=[node("n1")], queues=[queue("orphan", parent="gone")],
                        pods=pods_in("orphan", 1))  # fmt: skip
    report, client = scenario.run()
    assert client.binds() == {}
    assert waiting(report)["ns/p0"] == "queue orphan: spec.parent: queue 'gone' does not exist"


def test_tree_chain_runs_leaf_to_root():
    queues = {
        "root": QueueInfo.implicit("root"),
        "dept": QueueInfo(queue("dept", capability={"cpu": "2"})),
        "team": QueueInfo(queue("team", parent="dept")),
    }
    attrs, _ = build_tree(queues, Resource({"cpu": 8000, "memory": 2**30}))
    assert [a.name for a in attrs["team"].chain] == ["team", "dept", "root"]
    # team inherits dept's CPU and root's unlimited memory
    assert attrs["team"].capability == Resource({"cpu": 2000, "memory": INFINITE})
    assert attrs["team"].real_capability.to_dict() == {"cpu": 2000}  # inf is not reported
    assert attrs["root"].real_capability.get("cpu") == INFINITE
    assert not attrs["dept"].is_leaf and attrs["team"].is_leaf


def test_flat_mode_ignores_parents_and_caps_every_queue_at_the_cluster():
    queues = {
        "root": QueueInfo.implicit("root"),
        "dept": QueueInfo(queue("dept", capability={"cpu": "2"})),
        "team": QueueInfo(queue("team", parent="dept", guarantee={"cpu": "1"})),
        "gpu-free": QueueInfo(queue("gpu-free", capability={"nvidia.com/gpu": "0"})),
    }
    total = Resource({"cpu": 8000, "nvidia.com/gpu": 4000})
    attrs, problems = build_flat(queues, total)
    assert problems == {}
    assert [a.name for a in attrs["team"].chain] == ["team"]
    assert attrs["team"].real_capability.get("cpu") == 8000  # 8 - 1 guaranteed + its own 1
    assert attrs["dept"].real_capability.get("cpu") == 2000
    assert attrs["root"].real_capability.get("cpu") == 7000
    # An explicit zero forbids the resource; an unset one does not limit.
    assert attrs["gpu-free"].real_capability.get("nvidia.com/gpu") == 0
    assert attrs["dept"].real_capability.get("nvidia.com/gpu") == 4000


def test_a_capability_of_zero_gpus_forbids_gpus_in_both_modes():
    for config in (None, flat()):
        scenario = Scenario(
            nodes=[node("n1", cpu="8", gpu="4")],
            queues=[queue("cpu-only", capability={"nvidia.com/gpu": "0"})],
            pods=[pod("g", "1", gpu="1", queue="cpu-only"), pod("c", "1", queue="cpu-only")],
            config=config,
        )
        report, client = scenario.run()
        assert binds(client) == {"ns/c": "n1"}
        assert "insufficient nvidia.com/gpu" in waiting(report)["ns/g"]


def test_a_root_capability_limits_only_what_it_names():
    # Volcano would take {gpu: 8} as root's whole capability, leaving it no CPU.
    scenario = Scenario(
        nodes=[node("n1", cpu="8", gpu="8")],
        queues=[queue("root", capability={"nvidia.com/gpu": "2"}), queue("team")],
        pods=[pod(f"g{i}", "1", gpu="1", queue="team", created=i) for i in range(3)],
    )
    report, client = scenario.run()
    assert sorted(binds(client)) == ["ns/g0", "ns/g1"]  # CPU unlimited, GPUs 2
    # team inherits root's 2 GPUs: its own limit refuses the third
    assert waiting(report)["ns/g2"].endswith("insufficient nvidia.com/gpu")


def test_parent_limit_is_checked_at_allocation_across_siblings():
    running = [pod(f"r{i}", "1", queue="team-a", node_name="n1") for i in range(2)]
    scenario = Scenario(
        nodes=[node("n1", cpu="16", memory="64Gi")],
        queues=[
            queue("dept", capability={"cpu": "3"}),
            queue("team-a", parent="dept"),
            queue("team-b", parent="dept"),
        ],
        podgroups=[podgroup("g", 1, queue="team-b", phase="Inqueue")],
        pods=running + [pod(f"b{i}", "1", group="g", created=i) for i in range(2)],
    )
    report, client = scenario.run()
    assert list(binds(client)) == ["ns/b0"]
    assert "queue dept capability exceeded" in waiting(report)["ns/b1"]


def test_elastic_part_of_running_jobs_does_not_block_admission():
    # Job a runs 3 CPU with minResources 1 CPU: 2 CPU are elastic. b (min 2) fits: 2+3-2 <= 4.
    running = [pod(f"a{i}", "1", group="a", node_name="n1") for i in range(3)]
    scenario = Scenario(
        nodes=[node("n1", cpu="16")],
        queues=[queue("q", capability={"cpu": "4"})],
        podgroups=[
            podgroup("a", 1, queue="q", min_resources={"cpu": "1"}, phase="Running"),
            podgroup("b", 1, queue="q", min_resources={"cpu": "2"}, created=1),
        ],
        pods=[*running, pod("b0", "1", group="b")],
    )
    _, client = scenario.run()
    assert pg_status(client)["ns/b"]["phase"] == "Inqueue"  # Running once b0 is bound
    assert binds(client) == {"ns/b0": "n1"}


def test_enqueue_checks_parent_queues_too():
    # team-b alone could take 2 CPU, but its sibling already uses 3 of dept's 4.
    scenario = Scenario(
        nodes=[node("n1", cpu="16")],
        queues=[queue("dept", capability={"cpu": "4"}), queue("team-a", parent="dept"),
                queue("team-b", parent="dept")],
        podgroups=[podgroup("g", 1, queue="team-b", min_resources={"cpu": "2"})],
        pods=[*(pod(f"a{i}", "1", queue="team-a", node_name="n1") for i in range(3)),
              pod("g0", "2", group="g")],
    )  # fmt: skip
    report, _ = scenario.run()
    assert waiting(report)["ns/g0"] == (
        "queue resource quota insufficient: insufficient cpu (parent queue dept)"
    )


@pytest.mark.parametrize(
    ("deserved", "guarantee", "capability", "expected_cpu"),
    [
        ({"cpu": "2"}, {"cpu": "3"}, None, 3000),  # raised to the guarantee
        ({"cpu": "6"}, None, {"cpu": "4"}, 4000),  # lowered to the real capability
        ({"cpu": "2"}, None, None, 2000),
    ],
)
def test_deserved_is_clamped_between_guarantee_and_real_capability(
    deserved, guarantee, capability, expected_cpu
):
    # Flat, as Volcano's buildQueueAttrs; with the hierarchy deserved is only raised to the
    # guarantee (checkHierarchicalQueue), never lowered.
    scenario = Scenario(
        nodes=[node("n1", cpu="8")],
        queues=[queue("q", deserved=deserved, guarantee=guarantee, capability=capability)],
        config=flat(),
    )
    report, _ = scenario.run()
    q = next(x for x in report.queues if x.name == "q")
    assert q.deserved["cpu"] == expected_cpu
