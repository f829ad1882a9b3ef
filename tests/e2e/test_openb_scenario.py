"""The ``openb`` scenario (``make run`` with ``SLUICE_SCENARIO=openb``): the whole Alibaba
trace (alibaba/clusterdata cluster-trace-gpu-v2023) loads through the simulated cluster's API
layer, and the scheduler, reading it through the HTTP API, places its pods."""

from __future__ import annotations

from kubernetes import client

from scheduler.clock import VirtualClock
from scheduler.config import default_config
from scheduler.service import WATCHED_KINDS, SchedulerService
from simcluster.api import ApiServer, Cluster
from simcluster.api.app import scenario_pod_creator
from simcluster.bootstrap import ensure_system_namespace
from simcluster.catalog import resolve
from simcluster.runtime import Simulation
from simcluster.store import Store
from tests.conftest import wait_until
from tests.e2e.harness import START


def test_the_whole_openb_trace_loads_through_the_api_and_a_cycle_places_its_pods():
    clock = VirtualClock(START)
    store = Store(clock.now)
    ensure_system_namespace(store)
    cluster = Cluster(store, clock.now)
    server = ApiServer(cluster, port=0).start()
    scenario = resolve("openb")
    sim = Simulation(store, clock, create_pod=scenario_pod_creator(cluster), scenario=scenario)
    api = client.ApiClient(client.Configuration(host=server.url))
    service = None
    try:
        sim.step(clock.now())  # installs the nodes and queues, creates every pod via the API
        assert sim.errors == []
        assert len(store.list("nodes")[0]) == 1523
        pods, _ = store.list("pods", "openb")
        assert len(pods) == 8152 and not any(p["spec"].get("nodeName") for p in pods)

        service = SchedulerService(api, config=default_config(), act=True, clock=clock.now)
        service.start(sync_timeout=60)
        targets = {kind: store.latest_version([kind]) for kind in WATCHED_KINDS}
        wait_until(lambda: service.feeder.caught_up(targets.__getitem__), timeout=60)
        report = service.run_once()
        assert not report.failure
        assert service.cache.wait_for_writes(120), "binds did not finish"

        bound = [p for p in store.list("pods", "openb")[0] if p["spec"].get("nodeName")]
        placed = [t for t in report.transitions if t.node]
        # The trace asks for 98% of its nodes' GPUs: most pods fit at once, not all.
        assert len(bound) == len(placed) > 7000
        nodes = {n["metadata"]["name"] for n in store.list("nodes")[0]}
        assert all(p["spec"]["nodeName"] in nodes for p in bound)
    finally:
        if service is not None:
            service.stop()
        api.close()
        server.stop()
