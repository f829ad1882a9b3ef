from __future__ import annotations

from simcluster.autoscaler import Karpenter
from tests.simcluster.controllers.helpers import START, cluster, events, group, pod, run


def test_batch_closes_after_one_idle_second():
    store, clock = cluster()
    karpenter = Karpenter(store, [group(delay=10)])
    pod(store, "p", cpu="2")
    run(karpenter.tick, clock, until=0.5, every=0.25)
    assert karpenter.ledger.scale_ups == []
    run(karpenter.tick, clock, until=1.0, every=0.25)
    (record,) = karpenter.ledger.scale_ups
    assert record.time == START + 1.0
    run(karpenter.tick, clock, until=10.75, every=0.25)
    assert store.list("nodes")[0] == []
    run(karpenter.tick, clock, until=11.0, every=0.25)
    assert [n["metadata"]["name"] for n in store.list("nodes")[0]] == ["big-1"]


def test_batch_closes_after_ten_seconds_while_pods_keep_arriving():
    store, clock = cluster()
    karpenter = Karpenter(store, [group(cpu="64", memory="256Gi", max_size=1)])
    arrived = iter(range(100))

    def step(now: float) -> None:
        if not karpenter.ledger.scale_ups:
            pod(store, f"p-{next(arrived)}", cpu="1")  # a new pod every half second
        karpenter.tick(now)

    run(step, clock, until=20, every=0.5)
    (record,) = karpenter.ledger.scale_ups
    assert record.time == START + 10.0
    assert len(record.pods) == 21  # every pod of the batch lands on one claim


def test_picks_the_smallest_shape_that_fits_and_packs_largest_first():
    store, clock = cluster()
    small, big = group("small", cpu="4", memory="16Gi"), group("big", cpu="16", memory="64Gi")
    pod(store, "tiny", cpu="1")
    pod(store, "large", cpu="10")
    karpenter = Karpenter(store, [big, small])
    run(karpenter.tick, clock, until=2)
    claims = {r.node_group: [p.name for p in r.pods] for r in karpenter.ledger.scale_ups}
    assert claims == {"big": ["large", "tiny"]}  # tiny fits beside large: no second node


def test_pods_that_fit_no_shape_get_a_failed_scheduling_event():
    store, clock = cluster()
    pod(store, "huge", cpu="128")
    karpenter = Karpenter(store, [group()])
    run(karpenter.tick, clock, until=5)
    assert karpenter.ledger.scale_ups == []
    assert events(store, "FailedScheduling")[0]["source"]["component"] == "karpenter"


def test_empty_nodes_it_launched_are_consolidated():
    store, clock = cluster()
    pod(store, "p", cpu="2")
    karpenter = Karpenter(store, [group(delay=0)], consolidate_after=30)
    run(karpenter.tick, clock, until=2)
    assert len(store.list("nodes")[0]) == 1
    store.delete("pods", "team", "p")
    run(karpenter.tick, clock, until=31)
    assert len(store.list("nodes")[0]) == 1
    run(karpenter.tick, clock, until=32)
    assert store.list("nodes")[0] == []
    assert karpenter.ledger.scale_downs[0].reason.endswith("(consolidation)")


def test_consolidation_can_be_switched_off():
    store, clock = cluster()
    pod(store, "p", cpu="2")
    karpenter = Karpenter(store, [group(delay=0)], consolidate_after=None)
    run(karpenter.tick, clock, until=2)
    store.delete("pods", "team", "p")
    run(karpenter.tick, clock, until=3600, every=60)
    assert len(store.list("nodes")[0]) == 1


def test_a_node_still_awaited_by_its_pending_pods_is_not_consolidated():
    store, clock = cluster()
    pod(store, "slow", cpu="2")  # stays Unschedulable: the scheduler never binds it
    karpenter = Karpenter(store, [group(delay=0)], consolidate_after=30)
    run(karpenter.tick, clock, until=600, every=5)
    assert len(store.list("nodes")[0]) == 1
    assert len(karpenter.ledger.scale_ups) == 1  # and it is not launched twice
