"""Pipelined pods seen from outside: kubectl's NOMINATED NODE, the autoscalers, events, a
scheduler worker replaced between cycles, and preemption within a queue — all through the
simulated cluster's API with a real scheduler."""

from __future__ import annotations

import subprocess

import pytest
from kubernetes import client

from scheduler.api.report import TransitionKind
from scheduler.config import SchedulerConfig, default_config
from scheduler.service import SchedulerService
from tests.builders import body, pod, podgroup
from tests.conftest import require_binary
from tests.e2e.harness import Harness, condition
from tests.e2e.pipeline.test_cyclic_eviction import SCENARIO
from tests.e2e.pipeline.workload import Recreator

GROUPS = [{"name": "extra", "min": 0, "max": 3, "provisionDelay": 20,
           "template": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}]  # fmt: skip


def reclaiming(persist: bool = True, *, autoscaler: str = "none", grace: int = 30) -> Harness:
    """Alpha fills n1; beta's pod r makes reclaim evict two alpha pods (``grace`` seconds to
    terminate) and is pipelined onto n1 meanwhile."""
    config = SchedulerConfig.from_dict(
        {**default_config().to_dict(), "pipelinePersistence": persist}
    )
    scenario = {**SCENARIO, "nodeGroups": GROUPS} if autoscaler != "none" else SCENARIO
    h = Harness(scenario, config=config, autoscaler=autoscaler)
    alpha = Recreator(h, "alpha", "alpha", "1")
    for i in range(4):
        alpha_pod = pod(
            f"alpha-{i}", "1", namespace="default", queue="alpha", grace=grace, priority=0
        )
        h.core.create_namespaced_pod("default", body(alpha_pod))
    alpha.created, alpha.live = 4, {f"alpha-{i}" for i in range(4)}
    h.step(3)
    r = pod("r", "2", namespace="default", queue="beta", grace=5, priority=0)
    h.core.create_namespaced_pod("default", body(r))
    h.step(2)
    return h


def pipelined_events(h: Harness, name: str) -> list:
    events = h.core.list_namespaced_event("default").items
    return [e for e in events if e.reason == "Pipelined" and e.involved_object.name == name]


def test_kubectl_shows_the_nominated_node_of_every_pipelined_pod(tmp_path):
    kubectl = require_binary("kubectl", fallback="/usr/bin/kubectl")
    h = reclaiming()
    try:
        config = h.server.write_kubeconfig(tmp_path / "kubeconfig")
        out = subprocess.run(
            [kubectl, "--kubeconfig", str(config), "get", "pods", "-o", "wide", "--no-headers"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
        rows = {line.split()[0]: line.split() for line in out.splitlines()}
        pipelined = {
            t.name: t.node for report in h.reports for t in report.transitions
            if t.kind is TransitionKind.PIPELINED
        }  # fmt: skip
        assert pipelined == {"r": "n1"}
        header = subprocess.run(
            [kubectl, "--kubeconfig", str(config), "get", "pods", "-o", "wide"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.splitlines()[0]  # fmt: skip
        assert "NOMINATED NODE" in header
        for name, node in pipelined.items():
            assert rows[name][2] == "Pending" and node in rows[name]
        assert condition(h.pod("r"))["reason"] == "Unschedulable"
    finally:
        h.close()


@pytest.mark.parametrize("autoscaler", ["cluster-autoscaler", "karpenter"])
def test_autoscalers_ignore_nominated_pods(autoscaler):
    outcomes = {}
    for persist in (True, False):
        h = reclaiming(persist, autoscaler=autoscaler)
        try:
            h.step(40)
            outcomes[persist] = (len(h.sim.ledger.scale_ups), h.pod("r")["spec"].get("nodeName"))
        finally:
            h.close()
    print(f"{autoscaler}: scale-ups with persistence {outcomes[True][0]}, without "
          f"{outcomes[False][0]}")  # fmt: skip
    # Pipelined and published: Unschedulable but nominated to an existing node, so neither
    # autoscaler buys a node; r runs on n1 once the evicted pods are gone.
    assert outcomes[True] == (0, "n1")
    # The same pod Unschedulable without a nomination (Volcano before issue #5044's fix) buys one.
    assert outcomes[False][0] >= 1


def test_no_duplicate_pipeline_events_over_consecutive_cycles():
    h = reclaiming()
    try:
        h.step(10)  # the evicted pods are still terminating: r stays pipelined throughout
        assert h.pod("r")["status"]["nominatedNodeName"] == "n1"
        assert len(pipelined_events(h, "r")) == 1
        assert (
            sum(
                1
                for report in h.reports
                for t in report.transitions
                if t.kind is TransitionKind.PIPELINED
            )
            == 1
        )
    finally:
        h.close()


def test_a_fresh_scheduler_worker_keeps_every_pipelined_decision():
    h = reclaiming()
    try:
        before = h.pod("r")["status"]["nominatedNodeName"]
        h.service.stop()  # the worker dies between cycles; a new one starts from the API
        h.service = SchedulerService(
            h.api, config=h.service.config, act=True, clock=h.clock.now
        ).start(sync_timeout=10)
        task = next(
            t for j in h.service.cache.snapshot().jobs.values()
            for t in j.tasks.values() if t.name == "r"
        )  # fmt: skip
        assert (task.status.value, task.node_name) == ("Pipelined", before)
        first = len(h.reports)
        h.step(35)
        later = [t for report in h.reports[first:] for t in report.transitions if t.name == "r"]
        assert [(t.kind, t.node) for t in later] == [(TransitionKind.ALLOCATED, before)]  # no drift
        assert h.pod("r")["spec"]["nodeName"] == before
        assert len(pipelined_events(h, "r")) == 1
    finally:
        h.close()


def test_preempt_evicts_lower_priority_pods_of_the_same_queue_and_pipelines():
    scenario = {
        "namespaces": [{"name": "default"}],
        "queues": [{"name": "q", "spec": {"reclaimable": False}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }
    h = Harness(scenario)
    try:
        # Priority comes from a PriorityClass (kube-apiserver's Priority admission refuses a
        # spec.priority that disagrees with it); the job's, from its PodGroup's class.
        client.SchedulingV1Api(h.api).create_priority_class(
            {"metadata": {"name": "high"}, "value": 100}
        )
        for i in range(4):
            low = pod(f"low-{i}", "1", namespace="default", queue="q", grace=5)
            h.core.create_namespaced_pod("default", body(low))
        h.step(3)
        # Its own PodGroup without minResources, so enqueue admits it although q is full (a
        # synthetic gang of one would be sized by its request and wait for queue room).
        group = podgroup("pg-high", namespace="default", queue="q", priority_class="high")
        h.custom.create_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", "default", "podgroups", body(group)
        )
        high = pod(
            "high", "2", namespace="default", group="pg-high", queue="q", grace=5,
            priority_class="high",
        )  # fmt: skip
        h.core.create_namespaced_pod("default", body(high))
        h.step(2)
        transitions = [t for report in h.reports for t in report.transitions]
        evicted = sorted(t.name for t in transitions if t.kind is TransitionKind.EVICTED)
        # Just enough of the lower-priority pods (all created in the same second: the UID
        # breaks the tie), never more.
        assert len(evicted) == 2 and all(name.startswith("low-") for name in evicted)
        assert [(t.name, t.node) for t in transitions if t.kind is TransitionKind.PIPELINED] == [
            ("high", "n1")
        ]
        assert h.pod("high")["status"]["nominatedNodeName"] == "n1"
        assert all(h.pod(name)["metadata"].get("deletionTimestamp") for name in evicted)
        h.step(8)
        assert h.pod("high")["spec"]["nodeName"] == "n1"
    finally:
        h.close()
