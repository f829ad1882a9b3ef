"""The built-in demo shows every state at once (issue 4's promise), played through the
simulated cluster's API with the real webhook, the node-capacity check and Cluster
Autoscaler: queue-limited gated pods, a cluster-limited pod that triggers a scale-up,
pipelined pods on a nominated node after reclaim, and a workload that fits no node shape."""

from __future__ import annotations

import pytest
import yaml

from dashboard import kube
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.report import TransitionKind
from scheduler.config import default_config
from simcluster.scenario import SCENARIO_DIR
from tests.e2e.harness import Harness, condition, gates

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(live_server, settings, tmp_path):
    config = default_config().with_action_arguments("enqueue", admissionCheck=True)
    h = Harness(
        yaml.safe_load((SCENARIO_DIR / "demo.yaml").read_text()),
        autoscaler="cluster-autoscaler",
        webhook_url=f"{live_server.url}/webhooks/mutate-pods",
        config=config,
    )
    settings.SLUICE_KUBECONFIG = str(h.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()  # the webhook reads namespace labels from this cluster
    h.attach_admission()
    yield h
    h.close()
    kube.api_client.cache_clear()


def test_the_demo_shows_every_state_within_a_minute(demo):
    h = demo
    h.step(40)
    waiting = {w.name: w for w in h.reports[-1].waiting}

    notebooks = [h.pod(f"notebook-{i}", "research") for i in range(6)]
    gated = [p for p in notebooks if gates(p) == [QUEUE_ALLOCATION_GATE]]
    assert len(gated) == 2 and sum(1 for p in notebooks if p["spec"].get("nodeName")) == 4
    assert all(condition(p)["reason"] == "SchedulingGated" for p in gated)
    assert {waiting[p["metadata"]["name"]].state for p in gated} == {"gated"}

    highmem = h.pod("highmem-0", "prod")
    assert condition(highmem)["reason"] == "Unschedulable"
    assert any("highmem-0" in [p.name for p in s.pods] for s in h.sim.ledger.scale_ups)

    web = [h.pod(f"web-{i}", "prod") for i in range(3)]
    nominated = [
        p for p in web if p["status"].get("nominatedNodeName") and not p["spec"].get("nodeName")
    ]
    assert nominated, "no web pod is pipelined"
    for p in nominated:
        assert waiting[p["metadata"]["name"]].state == "pipelined"
        assert waiting[p["metadata"]["name"]].status.message.startswith("pipelined on ")
    evicted = [t for r in h.reports for t in r.transitions if t.kind is TransitionKind.EVICTED]
    assert evicted and all(t.name.startswith("etl-") for t in evicted)

    risks = {r.name: r for r in h.reports[-1].risks}
    too_big = [r for r in risks.values() if "too-big" in r.name]
    assert too_big and too_big[0].risk == "fits_no_node_shape"
    assert not h.pod("too-big", "prod")["spec"].get("nodeName")
