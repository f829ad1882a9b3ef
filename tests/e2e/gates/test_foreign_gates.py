"""Other controllers' scheduling gates (Volcano's pod scheduling readiness design) next to ours, through the simulated cluster.

A pod gated by someone else is never bound, never counts toward its queue's inqueue figure and
keeps its gate. A pod carrying both gates keeps both while the other one is there (removing
ours early would let it skip its queue check the moment the other goes); once the other
controller lifts its gate, ours goes and the pod runs. Removing ours never touches another.
"""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker

from dashboard import kube
from dashboard.celery import app
from dashboard.services import gate_stats
from dashboard.tasks.gates import remove_gate
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from tests.builders import body, pod, podgroup
from tests.conftest import wait_until
from tests.dashboard.tasks.test_scheduling import use_broker
from tests.e2e.harness import Harness, condition, gates

FOREIGN = "example.com/quota-check"

SCENARIO = {
    "namespaces": [{"name": "team"}],
    "queues": [{"name": "q", "spec": {"capability": {"cpu": "2", "memory": "8Gi"}}}],
    "nodes": [{"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
    "kubelet": {"startupDelay": 1},
}


def create(h: Harness, name: str, cpu: str, gate_names: list[str]) -> None:
    """Pod ``name`` (``cpu``, 1Gi) with the scheduling gates ``gate_names`` (opted in if ours
    is among them), in its own PodGroup pg-<name> of queue q."""
    group = podgroup(
        f"pg-{name}", namespace="team", queue="q", min_resources={"cpu": cpu, "memory": "1Gi"}
    )
    h.custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "team", "podgroups", body(group)
    )
    gated = pod(
        name,
        cpu,
        "1Gi",
        namespace="team",
        group=f"pg-{name}",
        gates=gate_names,
        opt_in=QUEUE_ALLOCATION_GATE in gate_names,
    )
    h.core.create_namespaced_pod("team", body(gated))
    h.clock.advance(1)  # creation order is scheduling order


@pytest.fixture
def h():
    harness = Harness(SCENARIO)
    yield harness
    harness.close()


def lift(h: Harness, name: str, gate: str) -> None:
    """What the other controller does: remove its own gate, keep the rest."""
    current = h.pod(name, "team")
    rest = [{"name": g} for g in gates(current) if g != gate]
    patch = [{"op": "replace", "path": "/spec/schedulingGates", "value": rest}]
    h.core.patch_namespaced_pod(name, "team", patch)


def test_a_foreign_gate_blocks_binding_and_inqueue_but_not_the_queue(h):
    create(h, "other", "2", [FOREIGN])
    create(h, "worker", "2", [QUEUE_ALLOCATION_GATE])
    h.step(4)

    other = h.pod("other", "team")
    assert gates(other) == [FOREIGN] and not other["spec"].get("nodeName")
    assert condition(other)["reason"] == "SchedulingGated"  # never Unschedulable
    # Its 2 CPU were deducted from inqueue, so the worker's group was admitted and runs.
    assert h.pod("worker", "team")["spec"].get("nodeName") == "n1"
    assert h.pod("worker", "team")["status"]["phase"] == "Running"
    queue = {q.name: q for q in h.reports[-1].queues}["q"]
    assert queue.inqueue.get("cpu", 0) == 0


def test_both_gates_keep_ours_until_the_other_is_lifted_then_ours_goes(h):
    create(h, "both", "1", [QUEUE_ALLOCATION_GATE, FOREIGN])
    h.step(3)
    assert gates(h.pod("both", "team")) == [QUEUE_ALLOCATION_GATE, FOREIGN]
    assert not h.pod("both", "team")["spec"].get("nodeName")

    lift(h, "both", FOREIGN)
    h.step(3)
    both = h.pod("both", "team")
    assert gates(both) == [] and both["spec"]["nodeName"] == "n1"


@pytest.fixture
def gates_worker(settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    previous = app.conf.broker_url
    use_broker(redis_url)
    with start_worker(app, pool="solo", queues=["gates"], perform_ping_check=False):
        yield
    use_broker(previous)


def test_the_celery_gates_task_removes_only_our_gate(h, settings, tmp_path, gates_worker):
    settings.SLUICE_KUBECONFIG = str(h.server.write_kubeconfig(tmp_path / "kubeconfig"))
    kube.api_client.cache_clear()
    create(h, "both", "1", [FOREIGN, QUEUE_ALLOCATION_GATE])
    uid = h.pod("both", "team")["metadata"]["uid"]
    try:
        remove_gate.apply_async(("team", "both", uid), queue="gates")
        wait_until(lambda: gates(h.pod("both", "team")) == [FOREIGN], timeout=20)
        # Running it again, or for a pod replaced under the same name, changes nothing.
        before = gate_stats.snapshot()
        remove_gate.apply_async(("team", "both", "another-uid"), queue="gates")
        remove_gate.apply_async(("team", "both", uid), queue="gates")
        remove_gate.apply_async(("team", "gone", "x"), queue="gates")

        def grown(counter: str) -> int:
            return gate_stats.snapshot()[counter] - before[counter]

        wait_until(
            lambda: (
                (grown("pod_replaced"), grown("already_ungated"), grown("pod_gone")) == (1, 1, 1)
            ),
            timeout=20,
        )
    finally:
        kube.api_client.cache_clear()
    assert gates(h.pod("both", "team")) == [FOREIGN]
