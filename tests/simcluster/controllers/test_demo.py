"""The built-in demo keeps the promises issue 5 and 6 rely on."""

from __future__ import annotations

from scheduler.api.node_matching import node_accepts
from scheduler.api.quantity import parse_resource_list
from simcluster.catalog import resolve

GATE = "scheduling.volcano.sh/queue-allocation-gate"


def requests(pod: dict) -> dict[str, int]:
    rl = pod["spec"]["containers"][0]["resources"]["requests"]
    return parse_resource_list(rl, obj="pod", field="requests")


def pods_named(scenario, prefix: str) -> list[dict]:
    return [
        p for a in scenario.arrivals for p in a.pods if p["metadata"]["name"].startswith(prefix)
    ]


def capability(scenario, queue: str) -> dict[str, int]:
    (spec,) = [q["spec"] for q in scenario.queues if q["metadata"]["name"] == queue]
    return parse_resource_list(spec.get("capability"), obj=queue, field="capability")


def test_every_demo_pod_opts_in_to_the_gate():
    demo = resolve("demo")
    pods = [p for a in demo.arrivals for p in a.pods]
    assert all(p["metadata"]["annotations"].get(GATE) == "true" for p in pods)


def test_research_asks_more_than_its_queue_allows():
    demo = resolve("demo")
    notebooks = pods_named(demo, "notebook")
    asked = sum(requests(p)["cpu"] for p in notebooks)
    assert asked > capability(demo, "research")["cpu"] >= requests(notebooks[0])["cpu"]


def test_highmem_pods_fit_only_the_node_group_template():
    demo = resolve("demo")
    (group,) = demo.node_groups
    for pod in pods_named(demo, "highmem"):
        assert not any(node_accepts(pod, node)[0] for node in demo.nodes)
        assert node_accepts(pod, group.template())[0]


def test_too_big_fits_its_queue_but_no_node_shape():
    demo = resolve("demo")
    (pod,) = pods_named(demo, "too-big")
    cpu = requests(pod)["cpu"]
    assert cpu <= capability(demo, "prod")["cpu"]
    shapes = [
        parse_resource_list(n["status"]["allocatable"], obj="n", field="a") for n in demo.nodes
    ]
    shapes += [g.allocatable for g in demo.node_groups]
    assert all(cpu > shape["cpu"] for shape in shapes)


def test_the_gang_arrives_when_free_capacity_is_short_of_it():
    demo = resolve("demo")
    total = sum(
        parse_resource_list(n["status"]["allocatable"], obj="n", field="a")["cpu"]
        for n in demo.nodes
    )
    early = [p for a in demo.arrivals if a.at < 30 for p in a.pods]
    running = (
        sum(requests(p)["cpu"] for p in pods_named(demo, "etl"))
        + capability(demo, "research")["cpu"]
    )
    gang = sum(requests(p)["cpu"] for p in pods_named(demo, "web"))
    assert early and total - running < gang  # so reclaim must free a node: pipelined pods


def test_the_gang_cannot_use_the_dedicated_highmem_nodes():
    demo = resolve("demo")
    (group,) = demo.node_groups
    assert not any(node_accepts(p, group.template())[0] for p in pods_named(demo, "web"))
