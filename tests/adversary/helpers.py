"""Small helpers shared by the adversary's tests: objects created through the API, a
scheduler started against it, cycles run once its informers have caught up."""

from __future__ import annotations

import io

from django.core.management import call_command
from kubernetes import client

from scheduler.config import SchedulerConfig, default_config
from scheduler.service import WATCHED_KINDS, SchedulerService
from tests.builders import body, node, pod, podgroup, queue
from tests.conftest import wait_until

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def without_pdb(config: SchedulerConfig | None = None) -> SchedulerConfig:
    """``config`` (the default) without the pdb plugin, as Volcano's default configuration:
    evictions a PodDisruptionBudget refuses are then tried and refused by the API — as they
    are, with the plugin on, when a budget changed after the cache last saw it."""
    raw = (config or default_config()).to_dict()
    for tier in raw["tiers"]:
        tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "pdb"]
    return SchedulerConfig.from_dict(raw)


def make_node(sim, name: str, cpu: str = "2", **kwargs) -> None:
    sim.core.create_node(body(node(name, cpu=cpu, ready=True, **kwargs)))


def make_queue(sim, name: str, **kwargs) -> None:
    sim.custom.create_cluster_custom_object(*VOLCANO, "queues", body(queue(name, **kwargs)))


def make_podgroup(sim, name: str, min_member: int = 1, ns: str = "default", **kwargs) -> None:
    obj = body(podgroup(name, min_member, namespace=ns, **kwargs))
    sim.custom.create_namespaced_custom_object(*VOLCANO, ns, "podgroups", obj)


def make_pod(sim, name: str, cpu: str = "1", ns: str = "default", **kwargs) -> None:
    sim.core.create_namespaced_pod(ns, body(pod(name, cpu, namespace=ns, **kwargs)))


def get_pod(sim, name: str, ns: str = "default") -> dict:
    return sim.store.get("pods", ns, name)


def node_of(sim, name: str, ns: str = "default") -> str | None:
    return (get_pod(sim, name, ns).get("spec") or {}).get("nodeName")


def podgroup_phase(sim, name: str, ns: str = "default") -> str:
    pg = sim.custom.get_namespaced_custom_object(*VOLCANO, ns, "podgroups", name)
    return (pg.get("status") or {}).get("phase", "")


def scheduling(sim) -> client.SchedulingV1Api:
    return client.SchedulingV1Api(sim.api_client)


def start_service(sim, config: SchedulerConfig | None = None, **kwargs) -> SchedulerService:
    kwargs.setdefault("act", True)
    return SchedulerService(sim.api_client, config=config, **kwargs).start(sync_timeout=5)


def settle(sim, service: SchedulerService) -> None:
    """Wait until the scheduler's informers have seen everything the cluster holds."""
    target = {kind: sim.store.latest_version([kind]) for kind in WATCHED_KINDS}
    wait_until(lambda: service.feeder.caught_up(target.__getitem__), timeout=5)


def cycle(sim, service: SchedulerService):
    """One cycle on a settled cache; waits for its asynchronous writes, then settles again."""
    settle(sim, service)
    report = service.run_once()
    if service.gate_pool is not None:
        assert service.gate_pool.wait_idle(5)
    assert service.cache.wait_for_writes(5)
    settle(sim, service)
    return report


def schedule_command(*args: str) -> tuple[str, str]:
    """``manage.py schedule`` in process: (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    call_command("schedule", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()
