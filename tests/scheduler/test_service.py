"""End to end: objects created through the API, one cycle, pods bound, kubectl shows nodes."""

from __future__ import annotations

import pytest

from scheduler.api.report import PodState, TransitionKind
from scheduler.service import SchedulerService
from tests.builders import body, node, pod, queue
from tests.conftest import wait_until


def create_cluster(sim, *, pods: int = 3) -> None:
    for name in ("n1", "n2"):
        sim.core.create_node(body(node(name, cpu="2", ready=True)))
    sim.custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", body(queue("default"))
    )
    for i in range(pods):
        sim.core.create_namespaced_pod("default", body(pod(f"job-{i}")))


@pytest.fixture
def service(sim):
    running = SchedulerService(sim.api_client, act=True).start(sync_timeout=5)
    yield running
    running.stop()


def bound_nodes(sim) -> dict[str, str]:
    return {
        p.metadata.name: p.spec.node_name for p in sim.core.list_namespaced_pod("default").items
    }


def test_one_cycle_binds_the_pods_that_fit(sim, service):
    create_cluster(sim, pods=5)
    wait_until(lambda: len(service.cache.snapshot().jobs) == 5)

    report = service.run_once()

    nodes = bound_nodes(sim)
    assert sum(1 for n in nodes.values() if n) == 4  # 2 nodes x 2 CPU, 1 CPU each
    assert (
        sorted(t.to_state for t in report.transitions if t.kind is TransitionKind.ALLOCATED)
        == [PodState.BINDING] * 4
    )
    # With the hierarchy (Sluice's default) root is unlimited: the fifth pod is admitted and
    # waits for a node — what an autoscaler must see. Flat, as Volcano's default, the queue's
    # real capability is the cluster's 4 CPU and the queue would refuse it.
    assert [w.status.message for w in report.waiting] == [
        "0/2 nodes are unavailable: 2 Insufficient cpu."
    ]


def test_observe_mode_computes_the_same_decisions_and_writes_nothing(sim):
    create_cluster(sim, pods=2)
    observer = SchedulerService(sim.api_client, act=False).start(sync_timeout=5)
    try:
        wait_until(lambda: len(observer.cache.snapshot().jobs) == 2)
        report = observer.run_once()
    finally:
        observer.stop()

    assert report.mode == "observe"
    assert len([t for t in report.transitions if t.kind is TransitionKind.ALLOCATED]) == 2
    assert not any(bound_nodes(sim).values())


@pytest.mark.kubectl
def test_kubectl_shows_the_nodes_the_cycle_chose(sim, service, kubectl):
    create_cluster(sim, pods=2)
    wait_until(lambda: len(service.cache.snapshot().jobs) == 2)

    service.run_once()

    table = kubectl("get", "pods", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert set(rows) == {"job-0", "job-1"}
    assert all(set(row) & {"n1", "n2"} for row in rows.values()), table
