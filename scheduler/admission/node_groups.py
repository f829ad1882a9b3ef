"""Autoscaler node groups: the node shapes a scale-up can add, for "fits after scale-up".

A real cluster does not tell a scheduler which nodes its autoscaler may add, so the operator
describes them in a file (``SLUICE_ADMISSION_NODE_GROUPS``); the simulated cluster writes the
same file for its own autoscaler (``simcluster --node-groups-file``). The format is the
``nodeGroups`` section of a simulated-cluster scenario::

    nodeGroups:
    - name: big
      max: 3                     # the group's maximum size
      template:
        labels: {pool: big}
        taints: []
        capacity: {cpu: "16", memory: 64Gi}

A group's current size is read from the nodes carrying its ``sim.sluice.io/node-group`` label.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scheduler.admission.monitor import CapacitySnapshot, NodeUsage, node_usage
from scheduler.api.labels import HOSTNAME_LABEL, NODE_GROUP_LABEL, PROVISIONER_LABEL
from scheduler.api.quantity import QuantityError, parse_resource_list

DEFAULT_PODS = "110"  # kubelet's default maxPods


class NodeGroupError(ValueError):
    """A node-groups file Sluice cannot use; the message names the file and the field."""


def group_node(
    name: str,
    group: str,
    *,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, Any]],
    capacity: Mapping[str, Any],
    provisioner: str,
) -> dict[str, Any]:
    """A node of ``group`` as an autoscaler creates it (the template has the same shape)."""
    node_labels = {
        **labels,
        HOSTNAME_LABEL: name,
        NODE_GROUP_LABEL: group,
        PROVISIONER_LABEL: provisioner,
    }
    resources = {"pods": DEFAULT_PODS, **{k: str(v) for k, v in capacity.items()}}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": {"taints": copy.deepcopy(list(taints))} if taints else {},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


@dataclass(frozen=True)
class NodeGroup:
    """An autoscaler node group: a template node (labels, taints, allocatable) and its bounds."""

    name: str
    template: Mapping[str, Any]  # a node dict; metadata.name is replaced per new node
    max_size: int
    current_size: int = 0

    def new_nodes(self, limit: int) -> list[NodeUsage]:
        """Up to ``limit`` empty nodes this group may still add."""
        count = max(0, min(self.max_size - self.current_size, limit))
        return [self._node(i) for i in range(count)]

    def _node(self, index: int) -> NodeUsage:
        meta = dict(self.template.get("metadata") or {})
        meta["name"] = f"{self.name}-new-{index}"
        return node_usage({**self.template, "metadata": meta})

    def sized(self, size: int) -> NodeGroup:
        return NodeGroup(self.name, self.template, self.max_size, size)


def load_node_groups(path: str | Path) -> list[NodeGroup]:
    """The groups described in ``path``; NodeGroupError names the file and field at fault."""
    source = str(path)
    try:
        document = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise NodeGroupError(f"{source}: {exc}") from None
    if not isinstance(document, Mapping):
        raise NodeGroupError(f"{source}: expected a mapping with nodeGroups")
    items = document.get("nodeGroups") or []
    if not isinstance(items, list):
        raise NodeGroupError(f"{source}: nodeGroups: expected a list")
    return [_group(item, f"{source}: nodeGroups[{i}]") for i, item in enumerate(items)]


def dump_node_groups(groups: Iterable[Mapping[str, Any]]) -> str:
    """The file ``load_node_groups`` reads, from ``{name, max, labels, taints, capacity}``."""
    entries = [
        {
            "name": g["name"],
            "max": g["max"],
            "template": {
                "labels": dict(g.get("labels") or {}),
                "taints": list(g.get("taints") or []),
                "capacity": {k: str(v) for k, v in (g.get("capacity") or {}).items()},
            },
        }
        for g in groups
    ]
    return yaml.safe_dump({"nodeGroups": entries}, sort_keys=False)


def _group(item: Any, where: str) -> NodeGroup:
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
        raise NodeGroupError(f"{where}.name: required")
    name = item["name"]
    where = f"{where} ({name})"
    maximum = item.get("max", 10)
    if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 0:
        raise NodeGroupError(f"{where}.max: expected an integer >= 0, got {maximum!r}")
    template = item.get("template") or {}
    if not isinstance(template, Mapping):
        raise NodeGroupError(f"{where}.template: expected a mapping")
    capacity = template.get("capacity")
    if not isinstance(capacity, Mapping) or not capacity:
        raise NodeGroupError(f"{where}.template.capacity: required (e.g. {{cpu: '8'}})")
    try:
        parse_resource_list(capacity, obj=where, field="template.capacity")
    except QuantityError as exc:
        raise NodeGroupError(str(exc)) from None
    labels, taints = template.get("labels") or {}, template.get("taints") or []
    if not isinstance(labels, Mapping) or not isinstance(taints, list):
        raise NodeGroupError(f"{where}.template: labels must be a mapping and taints a list")
    node = group_node(
        f"template-{name}",
        name,
        labels={str(k): str(v) for k, v in labels.items()},
        taints=taints,
        capacity=capacity,
        provisioner="template",
    )
    return NodeGroup(name, node, maximum)


def sized_for(snapshot: CapacitySnapshot, groups: Iterable[NodeGroup]) -> list[NodeGroup]:
    """``groups`` with their current sizes read from the snapshot's node labels."""
    sizes: dict[str, int] = {}
    for node in snapshot.nodes:
        group = node.labels.get(NODE_GROUP_LABEL)
        if group is not None:
            sizes[group] = sizes.get(group, 0) + 1
    return [g.sized(sizes.get(g.name, 0)) for g in groups]
