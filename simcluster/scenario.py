"""Scenarios: the cluster (namespaces, nodes, node groups, queues) and a workload of pods and
podgroups arriving over time. Written in YAML, generated from parameters (``generate``), or
replayed from the Alibaba openb trace (``simcluster.trace``).

YAML shape (every field but names optional)::

    name: demo
    kubelet: {startupDelay: 1, deleteCompletedPods: false}
    namespaces: [{name: research, labels: {...}}]
    queues: [{name: q, spec: {capability: {cpu: 4}, weight: 1}}]   # Volcano Queue spec
    nodes: [{name: n1, labels: {}, taints: [], capacity: {cpu: 8, memory: 32Gi}},
            {namePrefix: cpu, count: 3, capacity: {...}}]
    nodeGroups: [{name: big, min: 0, max: 3, provisionDelay: 60,
                  template: {labels: {}, taints: [], capacity: {...}}}]
    workload:
      - {at: 0, name: job, namespace: research, replicas: 3, queue: q,
         podGroup: {minMember: 3}, requests: {cpu: 1}, duration: 600, gate: true, ...}
    faults: {seed: 1, conflict: 0.05, watchGone: 0.5, nodeNotReady: 0.01, ...}   # off if absent

``faults`` takes the keys of ``simcluster.faults.FaultConfig`` (fractions in [0, 1]);
``manage.py simcluster --faults`` replaces it.

A workload item makes ``replicas`` (alias ``count``) pods named ``name-0..N-1`` (or one pod
named ``name``) and, with ``podGroup``, a PodGroup named ``name`` that the pods join.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simcluster.autoscaler.common import ScalingGroup
from simcluster.faults import FaultConfig
from simcluster.scenario_objects import (
    ScenarioError,
    Where,
    api_check,
    build_node,
    build_workload_item,
    check_keys,
    flag,
    make_node,
    need,
    number,
    optional_str,
    resources,
    string_map,
    taints,
)

SCENARIO_DIR = Path(__file__).parent / "scenarios"
BUILTIN = ("demo", "empty")


@dataclass
class Arrival:
    at: float  # seconds from the start of the simulation
    podgroups: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)


@dataclass
class Scenario:
    name: str
    namespaces: list[dict] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    queues: list[dict] = field(default_factory=list)
    node_groups: list[ScalingGroup] = field(default_factory=list)
    arrivals: list[Arrival] = field(default_factory=list)
    startup_delay: float = 1.0
    delete_completed: bool = False
    description: str = ""
    faults: FaultConfig = field(default_factory=FaultConfig)  # off unless the file asks

    def pod_count(self) -> int:
        return sum(len(a.pods) for a in self.arrivals)


def load_file(path: str | Path) -> Scenario:
    """The scenario in ``path``; any file that is not one is a ScenarioError naming the file
    and, past YAML, the item and the field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8: byte {exc.start}") from None
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an integer past 4300 digits
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: not valid YAML: nested too deeply") from None
    return parse(data, source=str(path))


def parse(data: Any, *, source: str = "<scenario>") -> Scenario:
    top = Where(source, "scenario")
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping at the top level")
    check_keys(
        data,
        {
            "name",
            "description",
            "kubelet",
            "namespaces",
            "queues",
            "nodes",
            "nodeGroups",
            "workload",
            "faults",
        },
        top,
    )
    kubelet = data.get("kubelet") or {}
    check_keys(kubelet, {"startupDelay", "deleteCompletedPods"}, top.sub("kubelet"))
    scenario = Scenario(
        name=optional_str(data, "name", top) or Path(source).stem,
        description=optional_str(data, "description", top) or "",
        startup_delay=number(kubelet, "startupDelay", top.sub("kubelet"), 1.0, what="seconds"),
        delete_completed=flag(kubelet, "deleteCompletedPods", top.sub("kubelet")),
    )
    try:
        scenario.faults = FaultConfig.from_dict(data.get("faults"), where=f"{source}: faults")
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    for i, item in enumerate(_list(data, "namespaces", source)):
        scenario.namespaces.append(_namespace(item, Where(source, f"namespaces[{i}]")))
    for i, item in enumerate(_list(data, "queues", source)):
        scenario.queues.append(_queue(item, Where(source, f"queues[{i}]")))
    for i, item in enumerate(_list(data, "nodes", source)):
        scenario.nodes += build_node(item, Where(source, f"nodes[{i}]"))
    for i, item in enumerate(_list(data, "nodeGroups", source)):
        scenario.node_groups.append(_node_group(item, Where(source, f"nodeGroups[{i}]")))
    for i, item in enumerate(_list(data, "workload", source)):
        at, groups, pods = build_workload_item(item, Where(source, f"workload[{i}]"))
        scenario.arrivals.append(Arrival(at, groups, pods))
    scenario.arrivals.sort(key=lambda a: a.at)
    _check_unique(scenario, source)
    return scenario


def _list(data: dict, key: str, source: str) -> list:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ScenarioError(f"{source}: {key}: expected a list")
    return value


def _namespace(item: Any, where: Where) -> dict:
    check_keys(item, {"name", "labels"}, where)
    name = need(item, "name", str, where)
    where = where.named(name)
    labels = string_map(item, "labels", where)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels},
    }
    api_check("namespaces", namespace, where)
    return namespace


def _queue(item: Any, where: Where) -> dict:
    check_keys(item, {"name", "spec"}, where)
    name = need(item, "name", str, where)
    spec = item.get("spec") or {}
    if not isinstance(spec, dict):
        raise ScenarioError(f"{where.named(name)}: spec: expected a map")
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, **spec},
        "status": {"state": "Open"},
    }
    api_check("queues", queue, where.named(name))
    return queue


def _node_group(item: Any, where: Where) -> ScalingGroup:
    check_keys(item, {"name", "min", "max", "provisionDelay", "template"}, where)
    name = need(item, "name", str, where)
    where = where.named(name)
    template = item.get("template") or {}
    check_keys(template, {"labels", "taints", "capacity"}, where.sub("template"))
    here = where.sub("template")
    capacity = resources({"capacity": need(template, "capacity", dict, here)}, "capacity", here)
    try:
        group = ScalingGroup(
            name=name,
            labels=string_map(template, "labels", here),
            taints=taints(template, "taints", here),
            capacity=capacity,
            min_size=int(number(item, "min", where, 0, integer=True)),
            max_size=int(number(item, "max", where, 10, integer=True)),
            provision_delay=number(item, "provisionDelay", where, 30.0, what="seconds"),
        )
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    api_check("nodes", group.template(), here)
    return group


def _check_unique(scenario: Scenario, source: str) -> None:
    seen: set[tuple[str, str, str]] = set()
    objects = (
        [("namespace", n) for n in scenario.namespaces]
        + [("queue", q) for q in scenario.queues]
        + [("node", n) for n in scenario.nodes]
        + [("podgroup", g) for a in scenario.arrivals for g in a.podgroups]
        + [("pod", p) for a in scenario.arrivals for p in a.pods]
    )
    for kind, obj in objects:
        key = (kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if key in seen:
            raise ScenarioError(f"{source}: {kind} {'/'.join(key[1:]).lstrip('/')}: defined twice")
        seen.add(key)
    groups = {g.name for g in scenario.node_groups}
    if len(groups) < len(scenario.node_groups):
        raise ScenarioError(f"{source}: nodeGroups: a name is defined twice")


def generate(
    *,
    nodes: int = 4,
    node_capacity: dict[str, str] | None = None,
    queues: int = 3,
    queue_capability: dict[str, str] | None = None,
    pods: int = 40,
    mean_interarrival: float = 5.0,
    duration_range: tuple[float, float] = (60.0, 600.0),
    request_choices: tuple[dict[str, str], ...] = (
        {"cpu": "500m", "memory": "1Gi"},
        {"cpu": "1", "memory": "2Gi"},
        {"cpu": "2", "memory": "4Gi"},
    ),
    gate: bool = True,
    node_groups: list[ScalingGroup] | None = None,
    seed: int = 0,
) -> Scenario:
    """A random but reproducible scenario: Poisson arrivals spread round-robin over queues."""
    rng = random.Random(seed)
    capacity = {"pods": "110", **(node_capacity or {"cpu": "8", "memory": "32Gi"})}
    queue_names = [f"q{i}" for i in range(queues)]
    scenario = Scenario(
        name=f"generated-{seed}",
        namespaces=[_namespace({"name": "gen"}, Where("<generated>", "namespaces[0]"))],
        nodes=[make_node(f"node-{i}", capacity, {}) for i in range(1, nodes + 1)],
        queues=[
            _queue(
                {
                    "name": q,
                    "spec": {"capability": dict(queue_capability)} if queue_capability else {},
                },
                Where("<generated>", q),
            )
            for q in queue_names
        ],
        node_groups=list(node_groups or []),
    )
    at = 0.0
    for i in range(pods):
        at += rng.expovariate(1.0 / mean_interarrival) if mean_interarrival > 0 else 0.0
        item = {
            "name": f"gen-{i:04d}",
            "namespace": "gen",
            "queue": queue_names[i % queues],
            "requests": rng.choice(request_choices),
            "gate": gate,
            "duration": round(rng.uniform(*duration_range), 1),
        }
        _, _, built = build_workload_item(
            {**item, "at": round(at, 3)}, Where("<generated>", str(i))
        )
        scenario.arrivals.append(Arrival(round(at, 3), [], built))
    return scenario
