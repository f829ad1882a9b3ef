"""The pdb plugin: preempt and reclaim pick no victim whose eviction its PodDisruptionBudget
would refuse (Volcano's pkg/scheduler/plugins/pdb), with the last word on the victims."""

from __future__ import annotations

import pytest

from scheduler.api.disruption_budget import DisruptionBudget, selector_matches
from scheduler.config import SchedulerConfig, default_config
from tests.builders import node, pod, queue
from tests.scheduler.uthelper import Scenario

NS = "ns"


def budget(name: str, allowed: int, selector: dict | None, disrupted: tuple[str, ...] = ()):
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": selector, "minAvailable": 1},
        "status": {"disruptionsAllowed": allowed,
                   "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted}},
    }  # fmt: skip


def config(pdb: bool = True, pdb_tier: int = 0) -> SchedulerConfig:
    raw = default_config().to_dict()
    for tier in raw["tiers"]:
        tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "pdb"]
    if pdb:
        raw["tiers"][pdb_tier]["plugins"].append({"name": "pdb"})
    return SchedulerConfig.from_dict(raw)


def reclaim_scenario(budgets: list, *, pdb: bool = True, pdb_tier: int = 1) -> Scenario:
    """Queue alpha (reclaimable) runs four 1-CPU pods on n1 (4 CPU); r (2 CPU, queue beta,
    deserved 2) reclaims: it needs two victims."""
    pods = [
        pod(f"a-{i}", "1", namespace=NS, queue="alpha", node_name="n1", labels={"app": "a"})
        for i in range(4)
    ]
    pods.append(pod("r", "2", namespace=NS, queue="beta"))
    return Scenario(
        nodes=[node("n1", "4", "16Gi")],
        pods=pods,
        queues=[
            queue("alpha", reclaimable=True, deserved={"cpu": "2", "memory": "8Gi"}),
            queue("beta", reclaimable=False, deserved={"cpu": "2", "memory": "8Gi"}),
        ],
        config=config(pdb, pdb_tier),
        disruption_budgets=budgets,
    )


def evicted(client) -> list[str]:
    return sorted(call[1].split("/")[-1] for call in client.of("evict"))


def test_victims_stay_within_what_the_budget_allows():
    report, client = reclaim_scenario([budget("a", 1, {"matchLabels": {"app": "a"}})]).run()
    assert evicted(client) == []  # two needed, one allowed: n1 cannot be freed


def test_a_budget_allowing_enough_lets_reclaim_evict():
    report, client = reclaim_scenario([budget("a", 2, {"matchLabels": {"app": "a"}})]).run()
    assert len(evicted(client)) == 2


def test_without_the_plugin_the_victims_ignore_the_budget():
    """The refusal is then the API's (Volcano's default configuration has no pdb)."""
    scenario = reclaim_scenario([budget("a", 1, {"matchLabels": {"app": "a"}})], pdb=False)
    assert len(evicted(scenario.run()[1])) == 2


@pytest.mark.parametrize("tier", [0, 1])
def test_the_plugin_has_the_last_word_wherever_it_sits(tier):
    """In Volcano's tiered vote an empty answer lets the next tier pick the victims; the
    budget must hold whatever tier the plugin is configured in."""
    scenario = reclaim_scenario([budget("a", 0, {"matchLabels": {"app": "a"}})], pdb_tier=tier)
    assert evicted(scenario.run()[1]) == []


def test_a_pod_already_being_disrupted_spends_nothing():
    """Listed in ``status.disruptedPods``: the API processed its eviction already."""
    budgets = [budget("a", 1, {"matchLabels": {"app": "a"}}, disrupted=("a-3", "a-2"))]
    assert len(evicted(reclaim_scenario(budgets).run()[1])) == 2


def test_pods_outside_the_selector_or_namespace_are_not_covered():
    budgets = [
        budget("other", 0, {"matchLabels": {"app": "b"}}),
        {**budget("elsewhere", 0, {}), "metadata": {"name": "elsewhere", "namespace": "x"}},
    ]
    assert len(evicted(reclaim_scenario(budgets).run()[1])) == 2


def test_selectors_as_kubernetes_reads_them():
    labels = {"app": "a", "tier": "web"}
    assert selector_matches({}, labels)  # policy/v1: empty selects every pod
    assert not selector_matches(None, labels)  # null selects none
    assert selector_matches({"matchExpressions": [{"key": "tier", "operator": "In",
                                                   "values": ["web"]}]}, labels)  # fmt: skip
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "In",
                                                       "values": []}]}, labels)  # fmt: skip
    assert selector_matches({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]},
                            labels)  # fmt: skip
    assert not selector_matches({"matchExpressions": [{"key": "x", "operator": "Bogus"}]}, labels)


def test_a_budget_whose_status_does_not_read_is_refused_with_its_field():
    bad = budget("a", 1, {})
    bad["status"]["disruptionsAllowed"] = "many"
    with pytest.raises(ValueError, match="status.disruptionsAllowed"):
        DisruptionBudget.from_object(bad)
