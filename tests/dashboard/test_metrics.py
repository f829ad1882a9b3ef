"""``/metrics`` scraped over HTTP during the demo scenario: the simulated cluster with its
Cluster-Autoscaler-like autoscaler, Sluice's webhook on a live server, a real scheduler running
one cycle per simulated second, each report recorded as the scheduler worker records it
(``dashboard.metrics.record_cycle``), parsed with ``prometheus_client.parser``."""

from __future__ import annotations

import functools
import urllib.request

import pytest
import yaml
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from dashboard import kube, metrics
from dashboard.health import broker_client
from dashboard.tasks import scheduling
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.quantity import parse_resource_list
from scheduler.api.report import CycleReport, TransitionKind
from scheduler.clock import WallClock
from scheduler.config import default_config
from simcluster.metrics import exposition as simulation_metrics
from simcluster.scenario import SCENARIO_DIR
from tests.conftest import wait_until
from tests.dashboard.tasks.test_scheduling import point_at, scheduler_worker  # noqa: F401
from tests.e2e import harness
from tests.scheduler.conftest import sim  # noqa: F401 - a fixture
from tests.scheduler.test_service import bound_nodes, create_cluster

# The highmem pods arrive at 20 s; the autoscaler scans every 10 s and a node takes 60 s to
# provision; the web gang arrives at 30 s and needs reclaim.
DEMO_SECONDS = 110

VOLCANO_LABELS = {
    "volcano_e2e_scheduling_latency_milliseconds": set(),
    "volcano_action_scheduling_latency_milliseconds": {"action"},
    "volcano_schedule_attempts_total": {"result"},
    "volcano_pod_preemption_victims": set(),
    "volcano_unschedule_job_count": set(),
    "volcano_unschedule_task_count": {"job_id"},
    "volcano_queue_share": {"queue_name"},
    "volcano_queue_weight": {"queue_name"},
    "volcano_total_preemption_attempts": set(),
    "volcano_queue_overused": {"queue_name"},
    **{
        f"volcano_queue_{stem}_{unit}": {"queue_name"}
        for stem in ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue")
        for unit in ("milli_cpu", "memory_bytes")
    },
    **{
        f"volcano_queue_pod_group_{phase}_count": {"queue_name"}
        for phase in ("inqueue", "pending", "running", "unknown", "completed")
    },
}


def reset_metrics() -> None:
    client = broker_client()
    client.delete(metrics.GAUGES_KEY, metrics.COUNTERS_KEY, metrics.LAST_CYCLE_KEY)
    for key in client.scan_iter(metrics.GATE_KEY + "*"):
        client.delete(key)


def scrape(url: str) -> dict:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(family, sample_name: str | None = None, **labels) -> float:
    name = sample_name or family.name
    found = [
        s.value
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, family.samples)
    return found[0]


@pytest.fixture
def demo(live_server, tmp_path, settings, redis_url, django_db_blocker, transactional_db):
    settings.CELERY_BROKER_URL = redis_url
    reset_metrics()
    scenario = yaml.safe_load((SCENARIO_DIR / "demo.yaml").read_text())
    # As `make run` once a capacity snapshot is stored: every workload's risk is computed.
    config = default_config().with_action_arguments("enqueue", admissionCheck=False)
    running = harness.Harness(
        scenario,
        autoscaler="cluster-autoscaler",
        webhook_url=live_server.url + "/webhooks/mutate-pods",
        config=config,
    )
    running.server.metrics = functools.partial(simulation_metrics, running.sim)
    # The clock extension marks the simulated cluster's kubeconfig (what `simcluster` writes).
    kubeconfig = running.server.write_kubeconfig(
        tmp_path / "kubeconfig", clock=WallClock().describe()
    )
    running.attach_admission()
    try:
        with django_db_blocker.unblock(), override_settings(SLUICE_KUBECONFIG=str(kubeconfig)):
            kube.api_client.cache_clear()
            yield running
    finally:
        kube.api_client.cache_clear()
        running.close()


def test_the_demo_scraped_holds_volcano_and_sluice_metrics(demo, live_server):
    recorded: list[CycleReport] = []
    for _ in range(DEMO_SECONDS):
        demo.step(1)
        metrics.record_cycle(broker_client(), demo.reports[-1])
        recorded.append(demo.reports[-1])
    families = scrape(live_server.url)

    # Volcano's names with Volcano's label names.
    for name, labels in VOLCANO_LABELS.items():
        family = families.get(name.removesuffix("_total"))
        assert family is not None, f"{name} missing"
        assert family.samples, f"{name} has no sample"
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample)

    e2e = families["volcano_e2e_scheduling_latency_milliseconds"]
    assert value(e2e, "volcano_e2e_scheduling_latency_milliseconds_count") == DEMO_SECONDS
    total_ms = sum(r.duration_s for r in recorded) * 1000
    assert value(e2e, "volcano_e2e_scheduling_latency_milliseconds_sum") == pytest.approx(total_ms)
    inf = value(e2e, "volcano_e2e_scheduling_latency_milliseconds_bucket", le="+Inf")
    assert inf == DEMO_SECONDS
    action = families["volcano_action_scheduling_latency_milliseconds"]
    actions = {s.labels["action"] for s in action.samples}
    assert actions == set(demo.config.actions)

    # Every bind the cycles made is a "scheduled" attempt; too-big stays unschedulable.
    binds = sum(1 for r in recorded for t in r.transitions if t.kind is TransitionKind.ALLOCATED)
    attempts = families["volcano_schedule_attempts"]
    assert value(attempts, "volcano_schedule_attempts_total", result="scheduled") == binds > 0
    assert value(attempts, "volcano_schedule_attempts_total", result="unschedulable") > 0
    failed = [t for r in recorded for t in r.transitions if t.kind is TransitionKind.BIND_FAILED]
    assert value(attempts, "volcano_schedule_attempts_total", result="error") == len(failed), [
        t.message for t in failed
    ]

    # The queues' figures are the latest report's, in Volcano's units.
    latest = {q.name: q for q in recorded[-1].queues}
    allocated = families["volcano_queue_allocated_milli_cpu"]
    for name, queue in latest.items():
        assert value(allocated, queue_name=name) == queue.allocated.get("cpu", 0)
    # batch runs its etl pods (those reclaim did not evict): 2 CPUs each, memory in bytes.
    running_etl = [
        p for p in demo.store.list("pods")[0]
        if p["metadata"]["namespace"] == "batch" and p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
    ]  # fmt: skip
    assert value(allocated, queue_name="batch") == 2000 * len(running_etl) > 0
    memory = families["volcano_queue_allocated_memory_bytes"]
    assert value(memory, queue_name="batch") == 4 * 2**30 * len(running_etl)
    research_spec = parse_resource_list(
        latest["research"].spec_capability, obj="research", field="capability"
    )
    capacity = families["volcano_queue_capacity_milli_cpu"]
    assert value(capacity, queue_name="research") == research_spec["cpu"]
    assert value(allocated, queue_name="research") <= research_spec["cpu"]
    running_groups = families["volcano_queue_pod_group_running_count"]
    assert value(running_groups, queue_name="batch") == latest["batch"].podgroups["Running"] > 0

    # Sluice's own: research asks more than its queue allows, so notebooks stay gated, and
    # their count is what the cluster shows.
    gated_in_cluster = sum(
        1
        for p in demo.store.list("pods")[0]
        if p["metadata"]["namespace"] == "research"
        and any(g["name"] == QUEUE_ALLOCATION_GATE for g in p["spec"].get("schedulingGates", []))
    )
    gated = families["sluice_queue_gated_pods"]
    assert value(gated, queue_name="research") == gated_in_cluster > 0
    pods = families["sluice_queue_pods"]
    assert value(pods, queue_name="research", state="gated") == gated_in_cluster
    reserved = families["sluice_queue_gate_reserved_milli_cpu"]
    for name, queue in latest.items():
        assert value(reserved, queue_name=name) == queue.reserved.get("cpu", 0)
    to_bind = families["sluice_gate_removal_to_bind_seconds"]
    bound_after_gate = value(to_bind, "sluice_gate_removal_to_bind_seconds_count")
    assert 0 < bound_after_gate <= binds
    assert value(to_bind, "sluice_gate_removal_to_bind_seconds_sum") >= 0
    pipelined = sum(
        1 for r in recorded for t in r.transitions if t.kind is TransitionKind.PIPELINED
    )
    released = sum(
        1 for r in recorded for t in r.transitions if t.kind is TransitionKind.UNPIPELINED
    )
    assert value(families["sluice_pods_pipelined"], "sluice_pods_pipelined_total") == pipelined
    assert (
        value(families["sluice_nominations_released"], "sluice_nominations_released_total")
        == released
    )
    assert "sluice_queue_pipelined_pods" in families
    # too-big (17 CPUs) fits no node shape, not even the highmem group's.
    risks = families["sluice_admission_risk_workloads"]
    assert value(risks, queue_name="lab", risk="fits_no_node_shape") == 1
    assert value(risks, queue_name="batch", risk="fits_no_node_shape") == 0
    assert value(families["sluice_cycles"], "sluice_cycles_total", result="succeeded") == (
        DEMO_SECONDS
    )
    assert "sluice_gate_removals" in families

    # The simulated autoscaler: the highmem pods were truly unschedulable (a real scale-up),
    # and no gated pod ever made it scale up.
    summary = demo.sim.report()["summary"]
    scale_ups = families["sluice_sim_scale_ups"]
    auto = {"autoscaler": "cluster-autoscaler"}
    assert value(scale_ups, "sluice_sim_scale_ups_total", **auto) == summary["scale_ups"] >= 1
    false = families["sluice_sim_false_scale_ups"]
    assert value(false, "sluice_sim_false_scale_ups_total", **auto) == 0
    wasted = families["sluice_sim_wasted_node_seconds"]
    assert value(wasted, "sluice_sim_wasted_node_seconds_total", **auto) == pytest.approx(
        demo.sim.report()["summary"]["wasted_node_seconds"]
    )


def test_metrics_stay_open_when_pages_require_a_login(client, settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_REQUIRE_LOGIN = True
    assert client.get("/").status_code == 302
    response = client.get("/metrics")
    assert response.status_code == 200
    assert b"volcano_e2e_scheduling_latency_milliseconds" in response.content


def test_without_redis_metrics_answer_503(client, settings, free_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port}/0"
    response = client.get("/metrics")
    assert response.status_code == 503
    assert b"broker unreachable" in response.content


def test_the_scheduler_worker_records_each_cycle(settings, sim, tmp_path, scheduler_worker):  # noqa: F811
    reset_metrics()
    create_cluster(sim, pods=3)
    point_at(settings, sim, tmp_path)

    scheduling.run_cycle.apply_async(queue="scheduler")

    wait_until(lambda: all(bound_nodes(sim).values()), timeout=20)
    wait_until(lambda: broker_client().get(metrics.LAST_CYCLE_KEY) is not None, timeout=20)
    text = metrics.exposition(broker_client()).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    attempts = families["volcano_schedule_attempts"]
    assert value(attempts, "volcano_schedule_attempts_total", result="scheduled") == 3
    assert value(families["sluice_cycles"], "sluice_cycles_total", result="succeeded") == 1


def test_the_grafana_dashboard_queries_only_exported_series():
    import json
    import re
    from pathlib import Path

    exported = set()
    for d in metrics.DEFINITIONS:
        if d.kind == "histogram":
            exported |= {f"{d.name}_bucket", f"{d.name}_sum", f"{d.name}_count"}
        else:
            exported.add(d.name)
    exported.add("sluice_gate_removals_total")
    exported |= {
        f"sluice_sim_{n}_total"
        for n in ("scale_ups", "false_scale_ups", "wasted_node_seconds", "scale_downs")
    }
    path = Path(__file__).parents[2] / "deploy" / "grafana" / "sluice-dashboard.json"
    dashboard = json.loads(path.read_text())
    used = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b(?:volcano|sluice)_\w+", target["expr"])
    }
    assert used and used <= exported, used - exported
