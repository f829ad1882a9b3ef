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


def _fates(faults: Faults, requests: list[tuple[str, bytes]]) -> dict[bytes, str]:
    """What each PATCH of the pod ``sim/p`` met, sent in the given order."""
    fates = {}
    for path, patch in requests:
        try:
            faults.serve("PATCH", path, {}, lambda: (200, {}), patch)
            fates[patch] = "served"
        except Exception as exc:  # an injected refusal
            fates[patch] = type(exc).__name__ + str(getattr(exc, "code", ""))
    return fates


def test_two_writers_patching_one_pod_each_meet_their_own_faults_whatever_lands_first():
    """A request's fate is drawn from the seed, its method and path and how many times that
    was asked before; two different patches of one pod racing (a reservation stamp and a gate
    removal) would swap their fates with the order they land in. What a PATCH changes is part
    of its draw, so each patch meets the same fault in either order."""
    path = "/api/v1/namespaces/sim/pods/p"
    stamp = json.dumps([{"op": "test", "path": "/metadata/uid", "value": "u1"},
                        {"op": "add", "path": "/metadata/annotations", "value": {}}]).encode()  # fmt: skip
    ungate = json.dumps([{"op": "replace", "path": "/metadata/resourceVersion", "value": "7"},
                         {"op": "replace", "path": "/spec/schedulingGates", "value": []}]).encode()  # fmt: skip
    for seed in range(40):
        config = FaultConfig(seed=seed, conflict=0.3, throttle=0.3, server_error=0.3)
        one = _fates(Faults(config), [(path, stamp), (path, ungate)])
        other = _fates(Faults(config), [(path, ungate), (path, stamp)])
        assert one == other, seed
    # and the fates do differ between the two patches for some seeds (the draw is not shared)
    differ = sum(
        len(set(_fates(Faults(FaultConfig(seed=s, conflict=0.5)),
                       [(path, stamp), (path, ungate)]).values())) > 1
        for s in range(40)
    )  # fmt: skip
    assert differ > 0
    # a value change alone (another resourceVersion) is the same patch: the next draw
    again = ungate.replace(b'"7"', b'"8"')
    faults = Faults(FaultConfig(seed=3, conflict=0.5))
    first, second = _fates(faults, [(path, ungate)]), _fates(faults, [(path, again)])
    assert (
        faults._asked[
            f"conflict|PATCH {path} replace:/metadata/resourceVersion,replace:/spec/schedulingGates"
        ]
        == 2
    )
    assert set(first) | set(second) == {ungate, again}


def test_a_seeded_store_gives_each_object_the_same_uid_in_every_run():
    """kube-apiserver's UIDs are random; a replay of a simulation needs them as they were
    (UIDs break ties in task and job order). With ``uid_seed`` a UID depends on the seed, the
    kind, the key and how many objects of that key were created before — not on the order
    objects are created in."""

    def fresh(name: str) -> dict:
        obj = pod(name, namespace="sim")
        obj["metadata"].pop("uid", None)  # as a client sends it: the API server sets it
        return obj

    def uids(order: list[str], seed: str | None) -> dict[str, str]:
        store = Store(lambda: 0.0)
        store.uid_seed = seed
        return {name: meta(store.create("pods", fresh(name)))["uid"]
                for name in order}  # fmt: skip

    assert uids(["a", "b"], "s1") == uids(["b", "a"], "s1")
    assert uids(["a", "b"], "s1") != uids(["a", "b"], "s2")
    assert uids(["a"], None) != uids(["a"], None)  # random without a seed
    store = Store(lambda: 0.0)
    store.uid_seed = "s1"
    first = meta(store.create("pods", fresh("a")))["uid"]
    store.delete("pods", "sim", "a")
    again = meta(store.create("pods", fresh("a")))["uid"]
    assert first != again  # a new object of the same name is another object
