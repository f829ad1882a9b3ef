from __future__ import annotations

import json

from scheduler.api.labels import SCALE_UP_ANNOTATION
from simcluster.autoscaler import ClusterAutoscaler
from tests.simcluster.controllers.helpers import START, cluster, events, group, node, pod, run


def node_names(store) -> list[str]:
    return [n["metadata"]["name"] for n in store.list("nodes")[0]]


def bind(store, name: str, node_name: str) -> None:
    def change(obj: dict) -> None:
        obj["spec"]["nodeName"] = node_name
        obj["status"] = {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
        }

    store.mutate("pods", "team", name, change)


def test_scans_every_ten_seconds_and_the_node_appears_after_the_provision_delay():
    store, clock = cluster()
    ca = ClusterAutoscaler(store, [group(delay=30)])
    run(ca.tick, clock, until=3)  # first scan at 0 finds nothing
    pod(store, "p", cpu="2")
    run(ca.tick, clock, until=9)
    assert ca.ledger.scale_ups == []
    run(ca.tick, clock, until=10)
    (record,) = ca.ledger.scale_ups
    assert record.time == START + 10 and record.node_name == "big-1"
    run(ca.tick, clock, until=39)
    assert node_names(store) == []
    run(ca.tick, clock, until=40)
    assert node_names(store) == ["big-1"]
    assert record.node_ready_at == START + 40


def test_no_second_scale_up_while_the_first_node_is_provisioning_or_when_pods_fit():
    store, clock = cluster()
    node(store, "roomy", cpu="8", pool="big")
    pod(store, "fits-existing", cpu="2")
    pod(store, "needs-new", cpu="12", node_selector={"pool": "big"})
    ca = ClusterAutoscaler(store, [group(delay=120)])
    run(ca.tick, clock, until=100)
    assert [r.pods[0].name for r in ca.ledger.scale_ups] == ["needs-new"]


def test_bin_packs_pods_onto_template_nodes_and_respects_max_size():
    store, clock = cluster()
    for i in range(4):
        pod(store, f"small-{i}", cpu="4")
    for i in range(3):
        pod(store, f"whole-{i}", cpu="15")
    ca = ClusterAutoscaler(store, [group(cpu="16", max_size=3)])
    ca.tick(START)
    packed = sorted(sorted(p.name for p in r.pods) for r in ca.ledger.scale_ups)
    assert len(packed) == 3  # max size 3: the rest waits
    assert ["small-0", "small-1", "small-2", "small-3"] in packed  # 4 x 4 CPU share 16 CPU
    left = {e["involvedObject"]["name"] for e in events(store, "NotTriggerScaleUp")}
    assert left and all(
        "max node group size reached" in e["message"] for e in events(store, "NotTriggerScaleUp")
    )


def test_chooses_the_group_whose_labels_and_taints_the_pod_accepts():
    store, clock = cluster()
    gpu = group("gpu", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    pod(store, "wants-gpu", node_selector={"pool": "gpu"})
    ca = ClusterAutoscaler(store, [group("cpu"), gpu])
    ca.tick(START)
    assert ca.ledger.scale_ups == []  # the gpu pool is tainted and the pod has no toleration
    assert (
        "gpu: pod does not fit the template node"
        in events(store, "NotTriggerScaleUp")[0]["message"]
    )

    def tolerate(obj: dict) -> None:
        obj["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]

    store.mutate("pods", "team", "wants-gpu", tolerate)
    ca.tick(START + 10)
    assert [r.node_group for r in ca.ledger.scale_ups] == ["gpu"]


def test_a_pod_too_big_for_every_group_triggers_nothing_and_says_so_once():
    store, clock = cluster()
    pod(store, "huge", cpu="64")
    ca = ClusterAutoscaler(store, [group()])
    run(ca.tick, clock, until=60)
    assert ca.ledger.scale_ups == []
    (event,) = events(store, "NotTriggerScaleUp")
    assert event["message"].startswith("pod didn't trigger scale-up")


def test_scale_up_is_published_as_events_and_a_node_annotation():
    store, clock = cluster()
    pod(store, "p", cpu="2")
    ca = ClusterAutoscaler(store, [group(delay=5)])
    run(ca.tick, clock, until=5)
    (on_pod,) = [
        e for e in events(store, "TriggeredScaleUp") if e["involvedObject"]["kind"] == "Pod"
    ]
    assert on_pod["involvedObject"]["name"] == "p"
    assert on_pod["message"] == "pod triggered scale-up: [{big 0->1 (max: 3)}] new node big-1"
    assert on_pod["source"]["component"] == "cluster-autoscaler"
    (on_node,) = [
        e for e in events(store, "TriggeredScaleUp") if e["involvedObject"]["kind"] == "Node"
    ]
    assert on_node["involvedObject"]["name"] == "big-1" and "team/p" in on_node["message"]
    published = json.loads(
        store.get("nodes", "", "big-1")["metadata"]["annotations"][SCALE_UP_ANNOTATION]
    )
    assert published["autoscaler"] == "cluster-autoscaler"
    assert published["pods"][0]["name"] == "p"
    assert published["false_scale_up"] is False


def test_scale_down_after_ten_minutes_unneeded_ignoring_daemonset_pods():
    store, clock = cluster()
    pod(store, "p", cpu="2")
    ca = ClusterAutoscaler(store, [group(delay=0)])
    run(ca.tick, clock, until=10, every=10)
    assert node_names(store) == ["big-1"]
    pod(store, "ds", state="running", node_name="big-1", owner="DaemonSet")
    bind(store, "p", "big-1")
    run(ca.tick, clock, until=100, every=10)
    store.delete("pods", "team", "p")  # from t=110 only the DaemonSet pod is left
    run(ca.tick, clock, until=700, every=10)
    assert node_names(store) == ["big-1"]
    run(ca.tick, clock, until=710, every=10)
    assert node_names(store) == []
    (down,) = ca.ledger.scale_downs
    assert down.time == START + 710 and down.node_name == "big-1"
    assert events(store, "ScaleDown")[0]["involvedObject"]["name"] == "big-1"
    assert store.list("pods")[0] == []  # the DaemonSet pod went with its node


def test_scale_down_never_goes_below_min_size_nor_touches_nodes_outside_groups():
    store, clock = cluster()
    node(store, "static", cpu="4")
    store.create("nodes", group(min_size=1).make_node("big-kept", "cluster-autoscaler"))
    ca = ClusterAutoscaler(store, [group(min_size=1)])
    run(ca.tick, clock, until=3600, every=10)
    assert sorted(node_names(store)) == ["big-kept", "static"]


def test_one_group_expands_per_scan_and_the_others_follow_on_the_next_scans():
    store, clock = cluster()
    pod(store, "a-0", node_selector={"pool": "a"})
    pod(store, "b-0", node_selector={"pool": "b"})
    pod(store, "b-1", cpu="15", node_selector={"pool": "b"})
    ca = ClusterAutoscaler(store, [group("a"), group("b")])
    ca.tick(START)
    assert [(r.node_group, len(r.pods)) for r in ca.ledger.scale_ups] == [("b", 2)]
    ca.tick(START + 10)
    assert [r.node_group for r in ca.ledger.scale_ups] == ["b", "a"]
    assert events(store, "NotTriggerScaleUp") == []
