"""The simulated cluster's ``watchCut`` fault (simcluster.faults ``Faults._cut``) meets the
watch stream's ``CAUGHT_UP`` markers (simcluster.api.watch after 1c36d1e)."""

from __future__ import annotations

import time

from simcluster.faults import FaultConfig, Faults
from tests.adversary.test_part13_watch import Collector, _pod, _version


def test_a_watch_with_the_cut_fault_on_is_not_cut_after_its_first_batch(sim):
    """``--faults watchCut=<f>`` cuts a watch after an event with probability f (per event).
    With f tiny no stream should ever be cut; every event made while it is open arrives and
    the stream ends cleanly at its timeout."""
    sim.server.faults = Faults(FaultConfig(watch_cut=1e-9), sim.cluster)
    collector = Collector(
        sim.core.list_namespaced_pod, "default", resource_version=_version(sim), timeout_seconds=3
    )
    for i in range(3):
        time.sleep(0.3)  # each pod in a batch of its own
        sim.core.create_namespaced_pod("default", _pod(f"p{i}"))
    collector.join(10)
    assert collector.error is None, f"the watch failed: {collector.error!r}"
    assert [name for _, name in collector.events] == ["p0", "p1", "p2"]
    assert sim.server.faults.counts["watch_cut"] == 0


def test_the_schedulers_informers_do_not_relist_after_every_batch_with_the_cut_fault_on(sim):
    """``--faults all`` has ``watchCut: 0.01`` per event. A scheduler's pod informer sees ten
    pods created one at a time: with a cut that rare it should keep its one watch, not list
    the whole kind again after each batch (a relist per event at 10,000 pods)."""
    from tests.adversary.helpers import start_service

    sim.server.faults = Faults(FaultConfig(watch_cut=1e-9), sim.cluster)
    service = start_service(sim)
    try:
        pods = next(i for i in service.informers.informers if i.kind == "pods")
        before = pods.relists
        for i in range(10):
            sim.core.create_namespaced_pod("default", _pod(f"r{i}"))
            time.sleep(0.2)
        time.sleep(1.0)
        relists = pods.relists - before
    finally:
        service.stop()
    assert relists == 0, f"the pod informer listed everything again {relists} times for 10 pods"
