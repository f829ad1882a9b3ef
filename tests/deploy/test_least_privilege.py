"""Least privilege, proven: Sluice's service account is granted exactly what Sluice uses.

The demo scenario plays on the simulated cluster while the scheduler (act mode, with the
node-capacity check's snapshots), the gate webhook and the dashboard (its pages and the
namespace toggle) use it through its HTTP API; the API server records each request's RBAC
attributes (simcluster.api.audit). The act overlay's grants must allow every one of them, and
each grant must have been used or be in ALLOWANCE with the reason it is needed all the same.
Then the same in observe mode, against the observe overlay: no write verb is granted at all.
"""

from __future__ import annotations

import pytest
import yaml
from django.test import override_settings

from dashboard import kube
from dashboard.tasks.admission import scheduler_config_source
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.config import DEFAULT_CONFIG_YAML, default_config
from scheduler.kube.leader import ElectionConfig, LeaderElector
from scheduler.service import SchedulerService
from simcluster.scenario import SCENARIO_DIR
from tests.browser.demo import store_reports
from tests.builders import body, namespace, pod
from tests.deploy.manifests import find, render
from tests.deploy.rbac import WRITE_VERBS, Recorder, account_grants, denied
from tests.e2e import harness

DEMO_SECONDS = 45
# Granted though the demo does not happen to use it, each with why Sluice needs it.
ALLOWANCE: dict[tuple[str, str, str], str] = {}
# The pages Sluice's web Deployment serves that read the cluster.
PAGES = (
    "/",
    "/queues/",
    "/pods/",
    "/pods/batch/etl-0/",
    "/namespaces/",
    "/namespaces/batch/opt-in/?enabled=true",
    "/risks/",
    "/scheduler/",
    "/autoscaler/",
)


def rendered_env(overlay: str) -> dict[str, str]:
    """The settings every Deployment of the overlay reads (the ConfigMap sluice-env)."""
    return find(render(overlay), "ConfigMap", "sluice-env")["data"]


def campaign(demo: harness.Harness, env: dict[str, str]) -> None:
    """What the scheduler workers do with their Lease (scheduler/kube/leader.py), configured as
    the overlay configures them: acquire it (create), renew it (get, update), hand it over on
    a clean stop (update); a standby reads it."""
    assert env["SLUICE_LEADER_ELECT"] == "true"
    config = ElectionConfig(
        namespace=env["SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE"],
        name=env["SLUICE_LEADER_ELECT_RESOURCE_NAME"],
    )
    leader = LeaderElector(demo.api, config, "scheduler-0")
    standby = LeaderElector(demo.api, config, "scheduler-1")
    assert leader.try_acquire_or_renew()
    assert not standby.try_acquire_or_renew()
    assert leader.try_acquire_or_renew()
    assert leader.release()


# Where README (Run it on your cluster) has the scheduler read Volcano's configuration.
VOLCANO_CONFIGMAP = "volcano-system/volcano-scheduler-configmap"


def read_configuration(demo: harness.Harness, where: str = VOLCANO_CONFIGMAP) -> None:
    """The scheduler worker's read of its configuration from Volcano's ConfigMap, as Volcano's
    Helm chart installs it (``SLUICE_SCHEDULER_CONFIGMAP``)."""
    namespace_name, name = where.split("/")
    demo.cluster.create_object("namespaces", body(namespace(namespace_name)))
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace_name},
        "data": {"volcano-scheduler.conf": DEFAULT_CONFIG_YAML},
    }
    demo.cluster.create_object("configmaps", configmap, namespace_name)
    with override_settings(SLUICE_SCHEDULER_CONF="", SLUICE_SCHEDULER_CONFIGMAP=where):
        source = scheduler_config_source(demo.api)
    assert source is not None and source.changed() == DEFAULT_CONFIG_YAML


def play_demo(live_server, tmp_path, client, *, act: bool) -> Recorder:
    overlay = "act" if act else "observe"
    scenario = yaml.safe_load((SCENARIO_DIR / "demo.yaml").read_text())
    webhook = f"{live_server.url}/webhooks/mutate-pods" if act else ""
    demo = harness.Harness(scenario, autoscaler="cluster-autoscaler", webhook_url=webhook)
    recorder = Recorder()
    try:
        demo.server.recorder = recorder
        kubeconfig = demo.server.write_kubeconfig(tmp_path / "kubeconfig")
        mode = rendered_env(overlay)["SLUICE_MODE"]
        with override_settings(SLUICE_KUBECONFIG=str(kubeconfig), SLUICE_MODE=mode):
            kube.api_client.cache_clear()
            if act:
                demo.restart()  # its informers list and watch again, recorded from the start
            else:
                demo.service.stop()
                demo.service = SchedulerService(
                    demo.api, config=default_config(), act=False, clock=demo.clock.now
                ).start(sync_timeout=10)
            demo.attach_admission()
            # Sluice's own namespace, as the overlay's Namespace object makes it
            demo.cluster.create_object("namespaces", body(namespace("sluice")))
            campaign(demo, rendered_env(overlay))
            read_configuration(demo)
            for _ in range(DEMO_SECONDS):
                demo.sim.step(demo.clock.now())
                demo.settle()
                demo.reports.append(demo.service.run_once())
                if act:
                    assert demo.service.gate_pool.wait_idle(10)
                    assert demo.service.cache.wait_for_writes(10)
                demo.clock.advance(1)
            store_reports(demo)  # as the Celery task does: the pages read the history
            for page in PAGES:
                # observe mode offers no toggle: its page says why, and asks the cluster nothing
                expected = 409 if "/opt-in/" in page and not act else 200
                assert client.get(page).status_code == expected, page
            if act:
                opt_in_through_the_dashboard(demo, client)
    finally:
        kube.api_client.cache_clear()
        demo.close()
    return recorder


def opt_in_through_the_dashboard(demo: harness.Harness, client) -> None:
    """An administrator opts namespace team in on the Namespaces page, then creates a pod there without
    the annotation: the webhook reads the namespace's label to gate it."""
    demo.cluster.create_object("namespaces", body(namespace("team")))
    answer = client.post("/namespaces/team/opt-in/", {"enabled": "true", "confirm": "on"})
    assert answer.status_code == 302, answer.content[:500]
    labels = demo.store.get("namespaces", "", "team")["metadata"]["labels"]
    assert labels[QUEUE_ALLOCATION_GATE] == "true"
    created = demo.cluster.create_object("pods", body(pod("late", namespace="team")), "team")
    assert created["metadata"]["annotations"][QUEUE_ALLOCATION_GATE] == "true"


def show(keys) -> str:
    return "\n".join(sorted(map(str, keys)))


@pytest.mark.django_db(transaction=True)
def test_the_act_overlay_grants_exactly_what_act_mode_uses(live_server, tmp_path, admin_client):
    recorder = play_demo(live_server, tmp_path, admin_client, act=True)
    grants = account_grants(render("act"), "sluice", "sluice")

    missing = denied(recorder.requests, grants)
    assert not missing, f"requests the act overlay would refuse:\n{show(missing)}"
    unused = {g.key for g in grants} - recorder.used() - set(ALLOWANCE)
    assert not unused, f"granted, never used, not in ALLOWANCE:\n{show(unused)}"
    writes = {key for key in recorder.used() if key[2] in WRITE_VERBS}
    assert ("", "pods/binding", "create") in writes or ("", "bindings", "create") in writes


@pytest.mark.django_db(transaction=True)
def test_the_observe_overlay_grants_no_write_and_what_observe_mode_reads(
    live_server, tmp_path, admin_client
):
    recorder = play_demo(live_server, tmp_path, admin_client, act=False)
    grants = account_grants(render("observe"), "sluice", "sluice")

    # The one write: the scheduler workers' own Lease, in Sluice's namespace.
    writes = [g for g in grants if g.verb in WRITE_VERBS]
    assert {(g.group, g.resource, g.namespace) for g in writes} == {
        ("coordination.k8s.io", "leases", "sluice")
    }
    (cluster_role,) = [
        d
        for d in render("observe")
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "sluice"
    ]
    assert not {v for rule in cluster_role["rules"] for v in rule["verbs"]} & WRITE_VERBS
    missing = denied(recorder.requests, grants)
    assert not missing, f"requests the observe overlay would refuse:\n{show(missing)}"
    # Observe mode writes nothing but that Lease: the standby/leader hand-over of its workers.
    written = {
        (r.group, r.resource, r.namespace)
        for r in recorder.requests
        if r.is_resource_request and r.verb in WRITE_VERBS
    }
    assert written == {("coordination.k8s.io", "leases", "sluice")}
