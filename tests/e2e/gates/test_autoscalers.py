"""Autoscalers see only real capacity shortfalls: the same workload with the gate and without.

Fourteen 1-CPU pods in queue q (capability 2 CPU): twelve of them can only wait for their queue. One
pod in queue "wide" passes its queue but fits no node (it wants pool=big, which only the node
group makes). The namespace opt-in goes through the real webhook endpoint of a live Django
server; the simulated cluster calls it on every pod create.

With the gate, the queue-limited pods stay gated and invisible to the autoscaler: zero
scale-ups on their account, one for the pod that truly needs a node. Without it they are not
gated, but Sluice never marks a pod that waits for its queue ``Unschedulable`` (Volcano does,
and an autoscaler then buys nodes for pods their queue will never admit): their condition says
``SchedulingSkipped``, which both autoscalers ignore, so the outcome is the same.
"""

from __future__ import annotations

import pytest

from dashboard import kube
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from tests.e2e.harness import Harness, condition, gates

pytestmark = pytest.mark.django_db(transaction=True)


def scenario(opt_in: bool) -> dict:
    labels = {QUEUE_ALLOCATION_GATE: "true"} if opt_in else {}
    return {
        "namespaces": [{"name": "team", "labels": labels}],
        "queues": [
            {"name": "q", "spec": {"capability": {"cpu": "2"}}},
            {"name": "wide", "spec": {}},
        ],
        "nodes": [{"name": "n1", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}],
        "nodeGroups": [
            {
                "name": "big",
                "min": 0,
                "max": 5,
                "provisionDelay": 20,
                "template": {
                    "labels": {"pool": "big"},
                    "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                },
            }
        ],
        "kubelet": {"startupDelay": 1},
        "workload": [
            {"at": 0, "name": "batch", "namespace": "team", "replicas": 14, "queue": "q",
             "requests": {"cpu": "1", "memory": "1Gi"}, "duration": 3600},
            {"at": 0, "name": "needs-big", "namespace": "team", "queue": "wide",
             "requests": {"cpu": "1", "memory": "1Gi"}, "nodeSelector": {"pool": "big"},
             "duration": 3600},
        ],
    }  # fmt: skip


def play(autoscaler: str, opt_in: bool, live_server, settings, tmp_path) -> Harness:
    harness = Harness(
        scenario(opt_in),
        autoscaler=autoscaler,
        webhook_url=f"{live_server.url}/webhooks/mutate-pods",
    )
    # The webhook reads the namespace's opt-in label from this cluster.
    settings.SLUICE_KUBECONFIG = str(harness.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    try:
        harness.step(60)
    except BaseException:
        harness.close()
        raise
    return harness


def queue_limited_triggers(h: Harness) -> list[str]:
    return [p.name for s in h.sim.ledger.scale_ups for p in s.pods if not p.could_run]


@pytest.mark.parametrize("autoscaler", ["cluster-autoscaler", "karpenter"])
def test_gates_leave_the_autoscaler_only_real_shortfalls(
    autoscaler, live_server, settings, tmp_path, capsys
):
    gated = play(autoscaler, True, live_server, settings, tmp_path)
    try:
        waiting = [f"batch-{i}" for i in range(14) if not gated.pod(f"batch-{i}", "team")["spec"]
                   .get("nodeName")]  # fmt: skip
        assert len(waiting) == 12
        for name in waiting:  # queue-limited: still gated, SchedulingGated, never Unschedulable
            pod = gated.pod(name, "team")
            assert gates(pod) == [QUEUE_ALLOCATION_GATE]
            assert condition(pod)["reason"] == "SchedulingGated"
        with_gates = list(gated.sim.ledger.scale_ups)
        assert queue_limited_triggers(gated) == []
        assert [[p.name for p in s.pods] for s in with_gates] == [["needs-big"]]
        assert gated.pod("needs-big", "team")["spec"].get("nodeName", "").startswith("big")
    finally:
        gated.close()
    kube.api_client.cache_clear()

    ungated = play(autoscaler, False, live_server, settings, tmp_path)
    try:
        without_gates = list(ungated.sim.ledger.scale_ups)
        false_triggers = queue_limited_triggers(ungated)
        assert false_triggers == []
        assert [[p.name for p in s.pods] for s in without_gates] == [["needs-big"]]
        waiting = [f"batch-{i}" for i in range(14) if not ungated.pod(f"batch-{i}", "team")
                   ["spec"].get("nodeName")]  # fmt: skip
        assert len(waiting) == 12
        for name in waiting:  # not gated, waiting for the queue: never Unschedulable
            pod = ungated.pod(name, "team")
            assert gates(pod) == []
            assert condition(pod)["reason"] == "SchedulingSkipped"
    finally:
        ungated.close()
    kube.api_client.cache_clear()

    with capsys.disabled():
        print(
            f"\n{autoscaler}: gates on: {len(with_gates)} scale-up(s), "
            f"{sum(s.false_scale_up for s in with_gates)} false, 0 queue-limited triggers; "
            f"gates off: {len(without_gates)} scale-up(s), "
            f"{sum(s.false_scale_up for s in without_gates)} false, "
            f"{len(false_triggers)} queue-limited trigger(s)"
        )
