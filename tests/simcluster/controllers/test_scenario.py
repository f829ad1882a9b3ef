from __future__ import annotations

import textwrap

import pytest

from simcluster.catalog import resolve
from simcluster.scenario import generate, load_file, parse
from simcluster.scenario_objects import ScenarioError

GOOD = """
name: small
kubelet: {startupDelay: 2, deleteCompletedPods: true}
namespaces:
  - {name: team, labels: {scheduling.volcano.sh/queue-allocation-gate: "true"}}
queues:
  - {name: q, spec: {capability: {cpu: "4"}}}
nodes:
  - {name: solo, capacity: {cpu: "4", memory: 8Gi}}
  - {namePrefix: w, count: 2, labels: {pool: general}, capacity: {cpu: "8", memory: 16Gi}}
nodeGroups:
  - name: big
    min: 0
    max: 4
    provisionDelay: 45
    template: {labels: {pool: big}, taints: [{key: big, effect: NoSchedule}],
               capacity: {cpu: "32", memory: 128Gi}}
workload:
  - {at: 10, name: late, namespace: team, requests: {cpu: "1"}}
  - at: 0
    name: train
    namespace: team
    queue: q
    replicas: 3
    podGroup: {minMember: 2}
    gate: true
    duration: 600
    requests: {cpu: 500m, memory: 1Gi}
    limits: {cpu: "1"}
    nodeSelector: {pool: big}
    tolerations: [{key: big, operator: Exists, effect: NoSchedule}]
    annotations: {team: ml}
"""


def write(tmp_path, text: str):
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_full_scenario_parses_into_kubernetes_objects(tmp_path):
    scenario = load_file(write(tmp_path, GOOD))
    assert scenario.name == "small" and scenario.startup_delay == 2 and scenario.delete_completed
    assert [n["metadata"]["name"] for n in scenario.nodes] == ["solo", "w-1", "w-2"]
    assert scenario.nodes[1]["status"]["capacity"] == {"pods": "110", "cpu": "8", "memory": "16Gi"}
    (big,) = scenario.node_groups
    assert (big.max_size, big.provision_delay, big.allocatable["cpu"]) == (4, 45.0, 32000)
    assert scenario.queues[0]["spec"]["capability"] == {"cpu": "4"}
    first, second = scenario.arrivals
    assert (first.at, second.at) == (0.0, 10.0)  # sorted by arrival time
    (podgroup,) = first.podgroups
    assert podgroup["spec"] == {"minMember": 2, "queue": "q"}
    assert [p["metadata"]["name"] for p in first.pods] == ["train-0", "train-1", "train-2"]
    pod = first.pods[0]
    assert pod["metadata"]["annotations"] == {
        "team": "ml",
        "scheduling.volcano.sh/queue-name": "q",
        "scheduling.k8s.io/group-name": "train",
        "sim.sluice.io/duration": "600",
        "scheduling.volcano.sh/queue-allocation-gate": "true",
    }
    assert pod["spec"]["nodeSelector"] == {"pool": "big"}
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "1"},
    }
    assert pod["spec"]["schedulerName"] == "volcano"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "workload: [{name: a, requests: {cpu: lots}}]",
            "scenario.yaml: workload[0] (a): requests.cpu: invalid quantity 'lots'",
        ),
        ("workload: [{name: a, colour: red}]", "workload[0]: colour: unknown field"),
        ("workload: [{requests: {cpu: 1}}]", "workload[0]: name: required"),
        ("workload: [{name: a, at: -1}]", "workload[0] (a): at: expected seconds >= 0"),
        ("workload: [{name: a, replicas: 0}]", "workload[0] (a): replicas: expected a positive"),
        (
            "workload: [{name: a, tolerations: [{operator: Equal}]}]",
            "tolerations[0].operator: must be Exists when key is empty",
        ),
        ("nodes: [{name: n}]", "nodes[0]: capacity: required"),
        (
            "nodes: [{name: n, capacity: {memory: 1Qi}}]",
            "nodes[0]: capacity.memory: invalid quantity",
        ),
        (
            "nodeGroups: [{name: g, min: 3, max: 1, template: {capacity: {cpu: 1}}}]",
            "nodeGroups[0] (g): node group g: need 0 <= min (3) <= max (1)",
        ),
        ("nodeGroups: [{name: g}]", "nodeGroups[0] (g).template: capacity: required"),
        (
            "nodes: [{name: n, capacity: {cpu: 1}}, {name: n, capacity: {cpu: 1}}]",
            "node n: defined twice",
        ),
        ("queues: {a: b}", "queues: expected a list"),
        (
            "workload: [{name: a, replicas: 1000000000}]",
            "workload[0] (a): replicas: at most 100000",
        ),
        ("kubelet: {startupDelay: soon}", "scenario.kubelet: startupDelay: expected seconds >= 0"),
        ('kubelet: {deleteCompletedPods: "false"}', "deleteCompletedPods: expected true or false"),
        ("nodes: [{name: n, labels: [a], capacity: {cpu: 1}}]", "nodes[0]: labels: expected a map"),
        (
            "nodes: [{name: n, taints: [{key: k, effect: Sometimes}], capacity: {cpu: 1}}]",
            "nodes[0].taints[0]: effect: expected one of NoSchedule, PreferNoSchedule, NoExecute",
        ),
        (
            "queues: [{name: Q_1}]",
            'queues[0] (Q_1): Queue.scheduling.volcano.sh "Q_1" is invalid: metadata.name: Invalid',
        ),
        (
            "workload: [{name: a, labels: {app: has spaces}}]",
            'workload[0] (a): Pod "a" is invalid: metadata.labels: Invalid value: "has spaces"',
        ),
        ("namespaces: [{name: a}, {name: a}]", "namespace a: defined twice"),
        ("workload: [{name: a, at: .nan}]", "workload[0] (a): at: expected seconds >= 0, got nan"),
        ("workload: [{name: a, affinity: {nodeAffinity: 1}}]", "spec.affinity.nodeAffinity"),
        ("{1: a}", "scenario: 1: unknown field"),
        (
            "workload: [{name: a, tolerations: [{key: [1]}]}]",
            "tolerations[0].key: must be a string",
        ),
        ("- just a list", "expected a mapping at the top level"),
        ("name: [unclosed", "not valid YAML"),
    ],
)
def test_bad_files_are_refused_naming_the_file_item_and_field(tmp_path, text, message):
    with pytest.raises(ScenarioError) as caught:
        load_file(write(tmp_path, text))
    assert message in str(caught.value)
    assert str(tmp_path) in str(caught.value)


def test_a_file_that_is_not_utf8_or_cannot_be_read_is_named(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9".encode("latin-1"))
    with pytest.raises(ScenarioError, match=r"latin1.yaml: not UTF-8: byte 9$"):
        load_file(path)
    with pytest.raises(ScenarioError, match=r": cannot be read: Is a directory$"):
        load_file(tmp_path)


def test_builtin_scenarios_resolve_and_unknown_names_are_explained():
    demo, empty = resolve("demo"), resolve("empty")
    assert len(demo.nodes) >= 3 and demo.node_groups and len(demo.queues) >= 2
    assert empty.nodes == [] and empty.arrivals == []
    with pytest.raises(ScenarioError, match="no such scenario"):
        resolve("/nonexistent/file.yaml")


def test_generated_scenarios_are_reproducible():
    one, two = generate(pods=20, seed=3), generate(pods=20, seed=3)
    assert [a.at for a in one.arrivals] == [a.at for a in two.arrivals]
    assert one.pod_count() == 20 and len(one.queues) == 3 and len(one.nodes) == 4
    assert [a.at for a in one.arrivals] == sorted(a.at for a in one.arrivals)
    assert generate(pods=20, seed=4).arrivals[0].at != one.arrivals[0].at


def test_parse_accepts_an_in_memory_mapping():
    assert parse({"name": "x"}).name == "x"
