"""Volcano issue #4947, played through the simulated cluster's API with a real scheduler.

Queue alpha (queue priority 10, reclaimable, deserved 2 CPU) fills node n1 (4 CPU) with four
1-CPU pods; a Job-like controller replaces any alpha pod that goes away. Queue beta (deserved
2 CPU) then submits a 2-CPU pod, r. Reclaim evicts two alpha pods (alpha is above its
deserved share) and pipelines r onto n1.

With pipeline persistence, r's decision holds n1's freed CPU across cycles, so r is the pod
that lands there. Without it (Volcano before issue #5044's fix), the decision is gone by the next
cycle: alpha's replacement pods, whose queue goes first, take the freed CPU, r is left
waiting and reclaim evicts again — the cycle repeats.
"""

from __future__ import annotations

import pytest

from scheduler.api.report import TransitionKind
from scheduler.config import SchedulerConfig, default_config
from tests.builders import body, pod
from tests.e2e.harness import Harness
from tests.e2e.pipeline.workload import Recreator

SCENARIO = {
    "namespaces": [{"name": "default"}],
    "queues": [
        {"name": "alpha", "spec": {"priority": 10, "reclaimable": True,
                                   "deserved": {"cpu": "2", "memory": "8Gi"}}},
        {"name": "beta", "spec": {"reclaimable": False,
                                  "deserved": {"cpu": "2", "memory": "8Gi"}}},
    ],
    "nodes": [{"name": "n1", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}],
    "kubelet": {"startupDelay": 1},
}  # fmt: skip


def config(persist: bool) -> SchedulerConfig:
    return SchedulerConfig.from_dict({**default_config().to_dict(), "pipelinePersistence": persist})


def play(persist: bool, seconds: int = 40) -> dict:
    h = Harness(SCENARIO, config=config(persist))
    try:
        alpha = Recreator(h, "alpha", "alpha", "1")
        alpha.create(4)
        h.step(3)
        r = pod("r", "2", namespace="default", queue="beta", grace=5, priority=0)
        h.core.create_namespaced_pod("default", body(r))
        h.step(seconds, controller=alpha.reconcile)
        transitions = [t for report in h.reports for t in report.transitions]
        return {
            "r_node": h.pod("r")["spec"].get("nodeName"),
            "evictions": sum(1 for t in transitions if t.kind is TransitionKind.EVICTED),
            "alpha_replacements_bound": sum(
                1
                for i in range(4, alpha.created)
                if (p := _pod_or_none(h, f"alpha-{i}")) and p["spec"].get("nodeName")
            ),
            "r_pipelined": [
                t.node for t in transitions if t.name == "r" and t.kind is TransitionKind.PIPELINED
            ],
        }
    finally:
        h.close()


def _pod_or_none(h: Harness, name: str) -> dict | None:
    try:
        return h.pod(name)
    except Exception:
        return None


@pytest.mark.parametrize("persist", [True, False], ids=["persistence", "no-persistence"])
def test_reclaimer_lands_on_the_freed_node_only_with_persistence(persist):
    outcome = play(persist)
    print(f"pipelinePersistence={persist}: {outcome}")
    if persist:
        assert outcome["r_node"] == "n1"
        assert outcome["evictions"] == 2  # one reclaim, never repeated
        assert outcome["r_pipelined"] == ["n1"]  # decided once, kept
        assert outcome["alpha_replacements_bound"] == 0
    else:
        assert outcome["r_node"] is None  # the evicted work took the freed CPU back
        assert outcome["alpha_replacements_bound"] >= 2
        assert outcome["evictions"] >= 4  # reclaim evicted again: the cycle repeats
