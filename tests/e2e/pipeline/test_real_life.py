"""Pipeline decisions when real life happens, through the simulated cluster's API with a real
scheduler: a gang that falls apart, a victim that never leaves, decisions that change quickly,
and evictions the API refuses (a PodDisruptionBudget) or that find the pod gone.

Queue alpha fills node n1 (4 × 1 CPU, above its deserved 2 CPU); beta's pods reclaim two of
them and are pipelined onto n1 while the victims terminate (Volcano's pipeline cache
persistence design).
"""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client

from scheduler.api.labels import NEVER_TERMINATES_ANNOTATION
from scheduler.api.report import TransitionKind
from scheduler.config import SchedulerConfig, default_config
from tests.builders import body, pod, podgroup
from tests.e2e.harness import Harness
from tests.e2e.pipeline.test_cyclic_eviction import SCENARIO

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
NS = "default"
GROUPS = [{"name": "extra", "min": 0, "max": 2, "provisionDelay": 10,
           "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}]  # fmt: skip


def harness(*, autoscaler: str = "none", margin: float = 60.0, pdb: bool = True) -> Harness:
    config = SchedulerConfig.from_dict({**default_config().to_dict(), "pipelineMargin": margin})
    if not pdb:
        raw = config.to_dict()
        for tier in raw["tiers"]:
            tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "pdb"]
        config = SchedulerConfig.from_dict(raw)
    scenario = {**SCENARIO, "nodeGroups": GROUPS} if autoscaler != "none" else SCENARIO
    return Harness(scenario, config=config, autoscaler=autoscaler)


def fill_alpha(h: Harness, *, grace: int = 5, annotations: dict | None = None) -> None:
    for i in range(4):
        obj = pod(f"alpha-{i}", "1", namespace=NS, queue="alpha", grace=grace,
                  annotations=annotations)  # fmt: skip
        h.core.create_namespaced_pod(NS, body(obj))
    h.step(3)


def nominated(h: Harness, name: str) -> str:
    return (h.pod(name, NS).get("status") or {}).get("nominatedNodeName") or ""


def transitions(h: Harness, kind: TransitionKind) -> list[str]:
    return [t.name for r in h.reports for t in r.transitions if t.kind is kind]


# --- 8. decisions do not outlive their gang ---------------------------------------------------


def test_a_gang_that_loses_a_member_releases_its_pipelined_decisions():
    h = harness()
    try:
        fill_alpha(h, grace=60)  # victims take a minute to leave
        group = podgroup("pair", 2, namespace=NS, queue="beta")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        for i in range(2):
            h.core.create_namespaced_pod(
                NS, body(pod(f"pair-{i}", "1", namespace=NS, group="pair"))
            )
        h.step(2)
        assert nominated(h, "pair-0") == "n1" and nominated(h, "pair-1") == "n1"
        h.core.delete_namespaced_pod("pair-1", NS, grace_period_seconds=0)  # the gang breaks
        h.step(2)
        assert nominated(h, "pair-0") == ""  # its decision went with its gang
        assert "pair-0" in transitions(h, TransitionKind.UNPIPELINED)
        beta = {q.name: q for q in h.reports[-1].queues}["beta"]
        assert beta.allocated.get("cpu", 0) == 0  # nor does it hold beta's share
    finally:
        h.close()


# --- 9. a decision whose victims never leave lapses ----------------------------------------


def test_a_decision_whose_victims_never_leave_lapses_and_the_autoscaler_sees_the_pod():
    h = harness(autoscaler="cluster-autoscaler", margin=10)
    try:
        fill_alpha(h, grace=5, annotations={NEVER_TERMINATES_ANNOTATION: "true"})
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta", grace=5)))
        h.step(2)
        assert nominated(h, "r") == "n1"
        assert not h.sim.ledger.scale_ups  # a nominated pod is placed, for an autoscaler
        h.step(20)  # 5 s of grace and 10 s of margin, then the decision lapses
        events = [e.reason for e in h.core.list_namespaced_event(NS).items
                  if e.involved_object.name == "r"]  # fmt: skip
        assert events.count("PipelineExpired") == 1
        assert nominated(h, "r") != "n1"  # not taken again on n1: the same pods still leave
        assert [p.name for s in h.sim.ledger.scale_ups for p in s.pods] == ["r"]
        h.step(15)
        assert h.pod("r", NS)["spec"].get("nodeName", "").startswith("extra")
    finally:
        h.close()


# --- 10. the last decision wins on the API -------------------------------------------------------


def test_the_nomination_on_the_api_is_the_last_decision_even_when_writes_are_asynchronous():
    """Two decisions in a row — pipeline on n1, then take it back — are written by the cache's
    thread pool. The first write is slow (a busy API server); the second must still land last,
    or the API keeps the older decision while the cache holds the newer."""
    h = harness()
    try:
        fill_alpha(h, grace=60)
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta")))
        h.step(2)
        assert nominated(h, "r") == "n1"
        cache = h.service.cache
        task = next(t for j in cache.snapshot().jobs.values() for t in j.tasks.values()
                    if t.name == "r")  # fmt: skip
        real = h.service.cluster
        first = threading.Event()

        class SlowFirst:
            def patch_nominated_node(self, obj, node):
                if node == "n1" and not first.is_set():
                    first.set()
                    time.sleep(0.5)  # still in flight when the next decision is written
                real.patch_nominated_node(obj, node)

        slow = SlowFirst()
        cache.unpipeline(task, slow)
        assert cache.wait_for_writes(10)
        cache.pipeline(task, "n1", slow)
        time.sleep(0.05)  # the slow write has started
        cache.unpipeline(task, slow)
        assert cache.wait_for_writes(10)
        h.settle()
        assert first.is_set()
        assert nominated(h, "r") == ""  # the last decision
    finally:
        h.close()


# --- 11. refused or vanished evictions do not stop the cycle ---------------------------------


def pdb(h: Harness, name: str, min_available: int, selector: dict) -> None:
    client.PolicyV1Api(h.api).create_namespaced_pod_disruption_budget(
        NS,
        {"metadata": {"name": name},
         "spec": {"minAvailable": min_available, "selector": {"matchLabels": selector}}},
    )  # fmt: skip


def test_an_eviction_refused_by_a_disruption_budget_leaves_the_cycle_and_the_victim_alone():
    """Without the pdb plugin (Volcano's default configuration), or with a budget the cache
    has not seen yet, the API is what refuses."""
    h = harness(pdb=False)
    try:
        for i in range(4):
            obj = pod(f"alpha-{i}", "1", namespace=NS, queue="alpha", grace=5,
                      labels={"app": "kept" if i < 2 else "free"})  # fmt: skip
            h.core.create_namespaced_pod(NS, body(obj))
        h.step(3)
        pdb(h, "kept", 2, {"app": "kept"})  # alpha-0 and alpha-1 may not go
        pdb(h, "free", 2, {"app": "free"})  # nor, for now, alpha-2 and alpha-3
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta")))
        h.step(1)
        report = h.reports[-1]
        refused = [e for e in report.errors if e.startswith("evict ")]
        assert refused and all("429" in e for e in refused)
        assert nominated(h, "r") == ""  # nothing was freed for it: not pipelined
        assert all(h.pod(f"alpha-{i}", NS)["metadata"].get("deletionTimestamp") is None
                   for i in range(4))  # fmt: skip
        assert report.queues  # the cycle went on to its end and reported
        h.step(3)
        refusals = [e.split(":")[0] for r in h.reports[-4:] for e in r.errors
                    if e.startswith("evict ")]  # fmt: skip
        # Each victim is tried at most once and, refused, not picked again right away; after a
        # refusal on a node no further eviction is sent there.
        assert refusals and len(refusals) == len(set(refusals))
        client.PolicyV1Api(h.api).delete_namespaced_pod_disruption_budget("free", NS)
        h.step(35)  # past the retry time: alpha-2 and alpha-3 may go now
        assert h.pod("r", NS)["spec"].get("nodeName") == "n1"
        assert {"alpha-0", "alpha-1"} <= {p["metadata"]["name"] for p in h.store.list("pods")[0]}
    finally:
        h.close()


def test_a_victim_deleted_mid_cycle_is_not_an_error():
    h = harness()
    try:
        fill_alpha(h, grace=5)
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta")))
        h.settle()
        real_evict = h.service.cluster.evict

        def evict_after_someone_deleted_it(obj, reason):
            name = obj["metadata"]["name"]
            h.core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
            return real_evict(obj, reason)  # 404: the pod is gone

        h.service.cluster.evict = evict_after_someone_deleted_it
        h.step(1)
        assert [e for e in h.reports[-1].errors if e.startswith("evict ")] == []
        assert len(transitions(h, TransitionKind.EVICTED)) == 2
        assert nominated(h, "r") == "n1"
    finally:
        h.close()


@pytest.mark.parametrize("persist", [True])
def test_pipeline_margin_is_a_checked_configuration_key(persist):
    with pytest.raises(Exception, match="pipelineMargin"):
        SchedulerConfig.from_dict({**default_config().to_dict(), "pipelineMargin": -1})
    config = SchedulerConfig.from_dict({**default_config().to_dict(), "pipelineMargin": 5})
    assert config.pipeline_margin == 5 and SchedulerConfig.from_dict(config.to_dict()) == config
