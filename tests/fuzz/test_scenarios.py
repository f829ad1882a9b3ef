"""Fuzz the simulated cluster's scenario loader: any file, any field of any type.

A scenario either loads, and then every object it makes goes into a simulated cluster through
its API rules without a refusal of the object itself, or it is a ScenarioError that names the
file and the item (``scenario.yaml: workload[1] (train): requests.cpu: ...``). Never another
exception: ``manage.py simcluster`` shows a ScenarioError as one line, anything else as a
traceback.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from scheduler.clock import VirtualClock
from simcluster.api.cluster import Cluster
from simcluster.runtime import Simulation
from simcluster.scenario import load_file, parse
from simcluster.scenario_objects import ScenarioError
from simcluster.store import Store
from tests.fuzz.strategies import DELETE, fuzz_settings, json_values, replaced

BASE: dict[str, Any] = yaml.safe_load(
    """
name: small
kubelet: {startupDelay: 2, deleteCompletedPods: true}
namespaces:
  - {name: team, labels: {scheduling.volcano.sh/queue-allocation-gate: "true"}}
  - {name: default}
queues:
  - {name: q, spec: {capability: {cpu: "4"}, weight: 2}}
nodes:
  - {name: solo, capacity: {cpu: "4", memory: 8Gi}}
  - {namePrefix: w, count: 2, labels: {pool: general}, capacity: {cpu: "8", memory: 16Gi},
     taints: [{key: big, value: "yes", effect: NoSchedule}]}
nodeGroups:
  - name: big
    min: 0
    max: 4
    provisionDelay: 45
    template: {labels: {pool: big}, taints: [{key: big, effect: NoSchedule}],
               capacity: {cpu: "32", memory: 128Gi}}
workload:
  - {at: 10, name: late, namespace: team, requests: {cpu: "1"}, duration: 30, gate: true}
  - at: 0
    name: train
    namespace: team
    queue: q
    replicas: 3
    podGroup: {minMember: 2, minResources: {cpu: "1"}}
    gate: true
    duration: 600
    requests: {cpu: 500m, memory: 1Gi}
    limits: {cpu: "1"}
    nodeSelector: {pool: big}
    tolerations: [{key: big, operator: Exists, effect: NoSchedule}]
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [big]}]}]
    annotations: {team: ml}
    labels: {app: train}
    schedulerName: volcano
    terminationGracePeriodSeconds: 5
"""
)

PATHS: list[tuple[Any, ...]] = [
    ("name",), ("description",), ("kubelet",), ("kubelet", "startupDelay"),
    ("kubelet", "deleteCompletedPods"), ("namespaces",), ("namespaces", 0),
    ("namespaces", 0, "name"), ("namespaces", 0, "labels"),
    ("namespaces", 0, "labels", "scheduling.volcano.sh/queue-allocation-gate"),
    ("queues",), ("queues", 0), ("queues", 0, "name"), ("queues", 0, "spec"),
    ("queues", 0, "spec", "capability"), ("queues", 0, "spec", "capability", "cpu"),
    ("queues", 0, "spec", "weight"), ("nodes",), ("nodes", 0), ("nodes", 0, "name"),
    ("nodes", 0, "capacity"), ("nodes", 0, "capacity", "cpu"), ("nodes", 1, "namePrefix"),
    ("nodes", 1, "count"), ("nodes", 1, "labels"), ("nodes", 1, "labels", "pool"),
    ("nodes", 1, "taints"), ("nodes", 1, "taints", 0), ("nodes", 1, "taints", 0, "effect"),
    ("nodes", 1, "taints", 0, "key"), ("nodeGroups",), ("nodeGroups", 0),
    ("nodeGroups", 0, "name"), ("nodeGroups", 0, "min"), ("nodeGroups", 0, "max"),
    ("nodeGroups", 0, "provisionDelay"), ("nodeGroups", 0, "template"),
    ("nodeGroups", 0, "template", "labels"), ("nodeGroups", 0, "template", "taints"),
    ("nodeGroups", 0, "template", "capacity"), ("nodeGroups", 0, "template", "capacity", "cpu"),
    ("workload",), ("workload", 0), ("workload", 0, "at"), ("workload", 0, "name"),
    ("workload", 0, "namespace"), ("workload", 0, "duration"), ("workload", 0, "gate"),
    ("workload", 1, "replicas"), ("workload", 1, "queue"), ("workload", 1, "podGroup"),
    ("workload", 1, "podGroup", "minMember"), ("workload", 1, "podGroup", "minResources"),
    ("workload", 1, "podGroup", "queue"), ("workload", 1, "requests"),
    ("workload", 1, "requests", "cpu"), ("workload", 1, "limits"),
    ("workload", 1, "nodeSelector"), ("workload", 1, "nodeSelector", "pool"),
    ("workload", 1, "tolerations"), ("workload", 1, "tolerations", 0),
    ("workload", 1, "tolerations", 0, "operator"), ("workload", 1, "affinity"),
    ("workload", 1, "affinity", "nodeAffinity"), ("workload", 1, "annotations"),
    ("workload", 1, "annotations", "team"), ("workload", 1, "labels"),
    ("workload", 1, "labels", "app"), ("workload", 1, "schedulerName"),
    ("workload", 1, "priorityClassName"), ("workload", 1, "terminationGracePeriodSeconds"),
]  # fmt: skip

# What YAML reads besides JSON's values: dates, binary, infinities, NaN, big numbers.
yaml_values = (
    json_values
    | st.dates()
    | st.datetimes()
    | st.binary(max_size=4)
    | st.sampled_from([float("inf"), float("-inf"), float("nan"), 10**30, -1, 0, True])
    | st.text(alphabet="abcXYZ019-._/ ", max_size=70)
)
mutations = st.lists(
    st.tuples(st.sampled_from(PATHS), st.just(DELETE) | yaml_values), min_size=1, max_size=3
)

# The API refusals a loaded scenario may still meet: objects it needs that are not its own.
OUTSIDE_THE_SCENARIO = ('namespaces "', "no PriorityClass with name")


def load_into_a_cluster(scenario) -> list[str]:
    """Install the scenario and let every arrival in, through the API's rules for pods (the
    other objects go straight into the store, as the simulation puts them)."""
    clock = VirtualClock(0.0)
    store = Store(clock.now)
    cluster = Cluster(store, clock.now)
    simulation = Simulation(
        store, clock, scenario=scenario, create_pod=lambda pod: cluster.create_object("pods", pod)
    )
    last = max((a.at for a in scenario.arrivals), default=0.0)
    simulation.step(0.0)
    simulation.step(last + 1.0)
    return simulation.errors


def check(source: str, data: Any, changed: list[tuple[Any, ...]]) -> None:
    try:
        scenario = parse(data, source=source)
    except ScenarioError as exc:
        message = str(exc)
        assert message.startswith(f"{source}: "), message
        places = {_place(path) for path in changed}
        assert any(p in message for p in places) or "defined twice" in message, (places, message)
        return
    errors = load_into_a_cluster(scenario)
    refused = [e for e in errors if not any(o in e for o in OUTSIDE_THE_SCENARIO)]
    assert not refused, refused


def _place(path: tuple[Any, ...]) -> str:
    """Where a message about ``path`` must point: the item (``workload[1]``) or the key."""
    if len(path) >= 2 and isinstance(path[1], int):
        return f"{path[0]}[{path[1]}]"
    return str(path[0]) if path[0] not in ("name", "description") else "scenario"


@fuzz_settings(300, deadline_ms=5000)
@given(mutations)
@example([(("workload", 1, "replicas"), 10**9)])
@example([(("nodes", 1, "count"), 10**9)])
@example([(("workload", 0, "at"), float("nan"))])
@example([(("kubelet", "startupDelay"), "soon")])
@example([(("kubelet", "deleteCompletedPods"), "false")])
@example([(("nodes", 1, "labels"), ["pool", "general"])])
@example([(("workload", 1, "annotations"), "team=ml")])
@example([(("queues", 0, "name"), "Q_1")])
@example([(("workload", 1, "labels", "app"), "has spaces")])
@example([(("nodes", 1, "taints", 0, "effect"), "Sometimes")])
@example([(("nodeGroups", 0, "template", "labels"), [1])])
@example([(("workload", 0, "name"), "train")])
def test_a_scenario_with_fields_of_any_type_loads_or_names_the_item(changes):
    data = copy.deepcopy(BASE)
    changed = [path for path, value in changes if replaced(data, path, value)]
    check("fuzz.yaml", data, changed or [("name",)])


@fuzz_settings(200, deadline_ms=10_000)  # PyYAML takes a second on 5,000 open brackets
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
@example(b"\xff\xfe\x00")
@example(b"[" * 5000)
@example(b"a: &a [*a, *a]")
@example(b"!!python/object:os.system {}")
@example(b"workload: [{name: a, requests: {cpu: " + b"9" * 5000 + b"}}]")
def test_any_file_loads_or_is_a_scenario_error_naming_it(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("scenario") / "fuzz.yaml"
    path.write_bytes(content)
    try:
        scenario = load_file(path)
    except ScenarioError as exc:
        assert str(exc).startswith(f"{path}: "), exc
        return
    load_into_a_cluster(scenario)


def test_a_directory_or_a_missing_file_is_a_scenario_error(tmp_path):
    for path in (tmp_path, tmp_path / "missing.yaml"):
        with pytest.raises(ScenarioError, match=f"^{path}: cannot be read"):
            load_file(path)


def test_the_base_scenario_loads_and_runs():
    scenario = parse(copy.deepcopy(BASE), source="base.yaml")
    assert load_into_a_cluster(scenario) == []
    assert sum(len(a.pods) for a in scenario.arrivals) == 4
