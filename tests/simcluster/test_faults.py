"""Seeded faults outside the simulation test: a scenario's ``faults:`` section, ``manage.py
simcluster --faults``, the simulation's rounds injecting the cluster-level kinds, the admission
webhook timing out under its failurePolicy — each kind counted and shown."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dashboard.management.commands.simcluster import Command
from scheduler.clock import VirtualClock
from simcluster.api import Webhook
from simcluster.api.app import SimClusterOptions, build, describe_faults
from simcluster.faults import FaultConfig, Faults
from simcluster.metrics import exposition
from simcluster.podutil import meta
from simcluster.runtime import Simulation
from simcluster.scenario import ScenarioError, parse
from simcluster.store import Store
from tests.builders import body, pod
from tests.simcluster.api.conftest import start_sim
from tests.simcluster.api.test_webhook import add_gate, webhook_server  # noqa: F401 (fixture)

SCENARIO = {
    "name": "faulty",
    "nodes": [{"namePrefix": "n", "count": 3, "capacity": {"cpu": "4", "memory": "8Gi"}}],
    "faults": {"seed": 5, "nodeNotReady": 1.0, "conflict": 0.25},
}


def test_a_scenario_file_reads_its_faults_section():
    scenario = parse(SCENARIO)

    assert scenario.faults == FaultConfig(seed=5, node_not_ready=1.0, conflict=0.25)
    assert parse({**SCENARIO, "faults": None}).faults == FaultConfig()
    assert not parse({"name": "quiet"}).faults.enabled


@pytest.mark.parametrize(
    ("faults", "says"),
    [
        ({"nodeNotReady": 2}, "faults.nodeNotReady: expected a fraction in [0, 1], got 2"),
        ({"conflict": "often"}, "faults.conflict: expected a number, got 'often'"),
        ({"earthquake": 0.1}, "faults: unknown key 'earthquake'"),
        ({"seed": 1.5}, "faults.seed: expected an integer, got 1.5"),
        ([0.1], "faults: expected a map"),
    ],
)
def test_a_scenario_with_bad_faults_is_refused_naming_the_field(faults, says):
    with pytest.raises(ScenarioError, match=r"^<scenario>: ") as error:
        parse({**SCENARIO, "faults": faults})
    assert says in str(error.value)


def test_each_simulation_round_injects_the_cluster_level_faults():
    clock = VirtualClock(1_700_000_000)
    store = Store(clock.now)
    scenario = parse({**SCENARIO, "faults": {"seed": 1, "nodeTaint": 1.0, "pdb": 0.0}})
    faults = Faults(scenario.faults)
    sim = Simulation(store, clock, scenario=scenario, faults=faults)

    sim.step(clock.now())
    sim.step(clock.now() + 1)

    tainted = [
        n for n in store.list("nodes")[0] if any(t["key"] == "sim.sluice.io/fault" for t in
                                                 n["spec"].get("taints") or [])
    ]  # fmt: skip
    assert len(tainted) >= 1  # one node drawn per round (the same one, maybe, twice)
    assert sim.report()["faults"]["nodeTaint"] == 2
    assert set(sim.report()["faults"]) == {
        "conflict", "throttle", "serverError", "slow", "podDelete", "watchCut", "watchGone",
        "webhookTimeout", "nodeNotReady", "nodeTaint", "nodeDelete", "pdb",
    }  # fmt: skip
    # Without faults nothing happens and nothing is counted.
    quiet = Simulation(Store(clock.now), clock, scenario=parse({**SCENARIO, "faults": None}))
    quiet.step(clock.now())
    assert quiet.report()["faults"] == {}
    assert all(not n["spec"].get("taints") for n in quiet.store.list("nodes")[0])


def test_the_simulated_cluster_takes_its_faults_from_the_scenario_or_the_command_line(tmp_path):
    path = tmp_path / "faulty.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    from_file = build(SimClusterOptions(scenario=str(path)))
    assert from_file.faults is not None and from_file.faults.config.node_not_ready == 1.0
    assert from_file.server.faults is from_file.faults
    assert from_file.simulation.faults is from_file.faults

    overridden = build(SimClusterOptions(scenario=str(path), faults="seed=9,throttle=1"))
    assert overridden.faults is not None
    assert overridden.faults.config == FaultConfig(seed=9, throttle=1.0)

    off = build(SimClusterOptions(scenario="empty"))
    assert off.faults is None and off.server.faults is None and off.simulation.faults is None


def test_faults_reach_api_clients_and_are_shown_in_metrics_and_the_summary(tmp_path):
    path = tmp_path / "faulty.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    sim = build(SimClusterOptions(scenario=str(path), faults="seed=3,throttle=1,nodeNotReady=1"))
    sim.server.start()
    try:
        sim.simulation.step(sim.simulation.clock.now())
        with client.ApiClient(client.Configuration(host=sim.server.url)) as api:
            core = client.CoreV1Api(api)
            with pytest.raises(ApiException) as refused:
                core.create_namespace(body({"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": "team"}}))  # fmt: skip
            assert refused.value.status == 429
            not_ready = [
                meta(n)["name"]
                for n in sim.store.list("nodes")[0]
                if any(c["type"] == "Ready" and c["status"] != "True"
                       for c in n["status"].get("conditions") or [])
            ]  # fmt: skip
            assert len(not_ready) == 1
    finally:
        sim.stop()
    text = exposition(sim.simulation).decode()
    assert 'sluice_sim_faults_injected_total{kind="throttle"} 1.0' in text
    assert 'sluice_sim_faults_injected_total{kind="nodeNotReady"} 1.0' in text
    assert 'sluice_sim_faults_injected_total{kind="conflict"} 0.0' in text
    line = describe_faults(sim.faults)
    assert line.startswith("Faults injected (seed 3): conflict 0, throttle 1,")
    assert "nodeNotReady 1" in line


def test_manage_py_simcluster_takes_faults():
    parser = Command().create_parser("manage.py", "simcluster")
    options = vars(parser.parse_args(["--faults", "all=0.02"]))
    assert options["faults"] == "all=0.02"
    assert SimClusterOptions(faults=options["faults"]).faults == "all=0.02"


def test_manage_py_simcluster_refuses_bad_faults():
    with pytest.raises(CommandError, match="--faults: unknown key 'nope'"):
        call_command("simcluster", "--scenario", "empty", "--faults", "nope=1")


@pytest.mark.parametrize(("policy", "created"), [("Fail", False), ("Ignore", True)])
def test_a_webhook_timeout_fault_follows_the_failure_policy(webhook_server, policy, created):  # noqa: F811
    url, reviews, replies = webhook_server
    replies.append(add_gate)
    faults = Faults(FaultConfig(seed=0, webhook_timeout=1.0))
    sim = start_sim(webhook=Webhook(url, policy, faults=faults))
    try:
        if created:
            made = sim.core.create_namespaced_pod("default", body(pod("web-1")))
            assert not made.spec.scheduling_gates  # admitted without the webhook's patch
        else:
            with pytest.raises(ApiException) as error:
                sim.core.create_namespaced_pod("default", body(pod("web-1")))
            assert error.value.status == 500
            message = json.loads(error.value.body)["message"]
            assert message == (
                'Internal error occurred: failed calling webhook "sluice-mutating-webhook": '
                f'failed to call webhook: Post "{url}": context deadline exceeded'
            )
        assert len(sim.store.list("pods")[0]) == int(created)
        assert reviews == []  # the call timed out: the webhook never answered
        assert faults.summary()["webhookTimeout"] == 1
        assert faults.log == ["webhook_timeout: pod default/web-1"]
        # The same webhook without the fault mutates the pod.
        sim.cluster.webhook = dataclasses.replace(sim.cluster.webhook, faults=None)
        made = sim.core.create_namespaced_pod("default", body(pod("web-2")))
        assert [g.name for g in made.spec.scheduling_gates] == [
            "scheduling.volcano.sh/queue-allocation-gate"
        ]
    finally:
        sim.server.stop()


def test_the_simulated_cluster_passes_its_faults_to_the_webhook(tmp_path):
    path = Path(tmp_path / "faulty.yaml")
    path.write_text(yaml.safe_dump({**SCENARIO, "faults": {"webhookTimeout": 0.5}}))
    sim = build(SimClusterOptions(scenario=str(path), webhook_url="http://127.0.0.1:9/mutate"))
    assert sim.cluster.webhook is not None and sim.cluster.webhook.faults is sim.faults
