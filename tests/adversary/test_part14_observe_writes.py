"""Adversary, Part 14: observe mode against objects that make act mode write.

The least-privilege test plays the demo, whose objects are all well formed. Here the cluster
holds what makes the scheduler say something in act mode: a pod naming a Queue that does not
exist (QueueNotFound event, PodScheduled condition), a Queue whose CPU capability is zero
(CapabilityUnlimited), a child Queue whose parent does not exist (ParentQueueNotFound), a gated
opted-in pod whose queue has room (gate removal), a PodGroup that becomes schedulable (status
write), a pod that fits (bind). The scheduler runs in observe mode, as the observe overlay
configures it, while the simulated API server records every request.
"""

from __future__ import annotations

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.service import SchedulerService
from simcluster.api.audit import RequestAttributes
from tests.builders import body, namespace, node, pod, podgroup, queue
from tests.conftest import wait_until
from tests.deploy.manifests import render
from tests.deploy.rbac import WRITE_VERBS, account_grants, denied


def test_observe_mode_writes_nothing_even_when_act_mode_would_say_something(sim):
    """Promise (issue 19, README "Run it on your cluster"): the observe overlay's role has no
    write verb, and observe mode "writes nothing to" the cluster; the observe overlay allows
    every request observe mode makes. Held: no write, nothing refused."""
    sim.cluster.create_object("namespaces", body(namespace("ns")))
    sim.core.create_node(body(node("n1", cpu="8", ready=True)))
    custom = sim.custom
    for q in (
        queue("default"),
        queue("zero", capability={"cpu": "0"}),
        queue("orphan", parent="nowhere"),
    ):
        custom.create_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", body(q))
    custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "ns", "podgroups", body(podgroup("pg", queue="default"))
    )
    for p in (
        pod("lost", queue="missing"),
        pod("fits"),
        pod("member", group="pg"),
        pod("gated", opt_in=True, gates=[QUEUE_ALLOCATION_GATE]),
        pod("in-zero", queue="zero"),
        pod("in-orphan", queue="orphan"),
    ):
        sim.core.create_namespaced_pod("ns", body(p))

    requests: list[RequestAttributes] = []  # Sluice's, from here on
    sim.server.recorder = requests.append
    service = SchedulerService(sim.api_client, act=False).start(sync_timeout=5)
    try:
        wait_until(lambda: len(service.cache.snapshot().jobs) >= 5)
        reports = [service.run_once() for _ in range(3)]
    finally:
        service.stop()

    assert reports[-1].problems, "the cluster holds problems act mode would say"
    writes = sorted({(r.verb, r.resource) for r in requests if r.verb in WRITE_VERBS})
    assert writes == [], writes
    refused = denied(requests, account_grants(render("observe"), "sluice", "sluice"))
    assert not refused, refused
    assert sim.store.get("pods", "ns", "gated")["spec"].get("schedulingGates")
    assert not sim.store.get("pods", "ns", "fits")["spec"].get("nodeName")
