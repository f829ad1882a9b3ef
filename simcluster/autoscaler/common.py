"""What both simulated autoscalers share: the pod predicates from DESIGN.md (exactly), node
groups with a template node, and a capacity snapshot to simulate placements on.

Constraint matching (nodeSelector, required node affinity, taints/tolerations) is
``scheduler.api.node_matching``; resources are checked here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.admission.node_groups import NodeGroup as AdmissionNodeGroup
from scheduler.admission.node_groups import group_node
from scheduler.api.labels import NODE_GROUP_LABEL
from scheduler.api.node_matching import PodConstraints, node_accepts, pod_constraints
from scheduler.api.quantity import parse_resource_list
from simcluster.podutil import (
    Resources,
    add,
    condition,
    fits,
    is_finished,
    meta,
    node_allocatable,
    owned_by,
    pod_requests,
)

# --- predicates (DESIGN.md, "What the autoscalers read") -------------------------------------


def ca_is_unschedulable(pod: dict) -> bool:
    """Cluster Autoscaler ``isUnschedulable``: not bound, not deleting, and
    ``PodScheduled=False`` with reason ``Unschedulable``."""
    if (pod.get("spec") or {}).get("nodeName") or meta(pod).get("deletionTimestamp"):
        return False
    cond = condition(pod, "PodScheduled")
    return bool(cond) and cond.get("status") == "False" and cond.get("reason") == "Unschedulable"


def ca_nominated_to_existing_node(pod: dict, node_names: set[str]) -> bool:
    """CA leaves a pod whose ``nominatedNodeName`` names an existing node to that node."""
    return (pod.get("status") or {}).get("nominatedNodeName") in node_names


def karpenter_is_provisionable(pod: dict) -> bool:
    """Karpenter ``IsProvisionable``: ``PodScheduled`` with reason ``Unschedulable`` (status not
    checked), not bound, not nominated (preempting), not owned by a DaemonSet (``apps/v1``) or
    a Node (``v1``); owner references are matched on kind and apiVersion, as Karpenter does.

    Unlike CA, a deleting pod is not excluded: the predicate does not look at it.
    """
    cond = condition(pod, "PodScheduled")
    return (
        bool(cond)
        and cond.get("reason") == "Unschedulable"
        and not (pod.get("spec") or {}).get("nodeName")
        and not (pod.get("status") or {}).get("nominatedNodeName")
        and not owned_by(pod, "DaemonSet", "apps/v1")
        and not owned_by(pod, "Node", "v1")
    )


# --- node groups -----------------------------------------------------------------------------


@dataclass
class ScalingGroup:
    """A scalable set of identical nodes (a CA node group; for Karpenter, one instance shape)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict] = field(default_factory=list)
    capacity: dict[str, object] = field(default_factory=dict)
    min_size: int = 0
    max_size: int = 10
    provision_delay: float = 30.0

    def __post_init__(self) -> None:
        if not 0 <= self.min_size <= self.max_size:
            raise ValueError(
                f"node group {self.name}: need 0 <= min ({self.min_size}) <= max ({self.max_size})"
            )
        self.allocatable: Resources = parse_resource_list(
            {"pods": "110", **self.capacity},
            obj=f"node group {self.name}",
            field="template.capacity",
        )

    def make_node(self, name: str, provisioner: str) -> dict:
        return group_node(
            name,
            self.name,
            labels=self.labels,
            taints=self.taints,
            capacity=self.capacity,
            provisioner=provisioner,
        )

    def template(self) -> dict:
        return self.make_node(f"template-{self.name}", "template")

    def described(self) -> dict:
        """This group as the node-capacity check reads it (``dump_node_groups``)."""
        return {
            "name": self.name,
            "max": self.max_size,
            "labels": self.labels,
            "taints": self.taints,
            "capacity": self.capacity,
        }

    def for_admission(self) -> AdmissionNodeGroup:
        return AdmissionNodeGroup(self.name, self.template(), self.max_size)


def node_group_of(node: dict) -> str | None:
    return (meta(node).get("labels") or {}).get(NODE_GROUP_LABEL)


# --- capacity snapshot -----------------------------------------------------------------------


@dataclass
class SimNode:
    node: dict
    free: Resources
    upcoming: bool = False

    @property
    def name(self) -> str:
        return meta(self.node)["name"]


def constraints_of(pod: dict) -> PodConstraints | None:
    try:
        return pod_constraints(pod)
    except ValueError:
        return None  # A malformed pod fits nowhere; the API layer should have refused it.


def can_host(constraints: PodConstraints | None, request: Resources, sim: SimNode) -> bool:
    if constraints is None or not fits(request, sim.free):
        return False
    return node_accepts(constraints, sim.node)[0]


class PlacementSnapshot:
    """Free capacity of existing and upcoming nodes, for "would this pod fit?" simulations."""

    def __init__(self, nodes: list[dict], pods: list[dict], upcoming: list[dict] = ()) -> None:
        self.nodes = [SimNode(n, node_allocatable(n)) for n in nodes]
        self.nodes += [SimNode(n, node_allocatable(n), upcoming=True) for n in upcoming]
        by_name = {s.name: s for s in self.nodes}
        for pod in pods:
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            # Bound pods hold their node; nominated pods hold their nominated node (as CA does).
            target = spec.get("nodeName") or status.get("nominatedNodeName")
            if target in by_name and not is_finished(pod):
                add(by_name[target].free, pod_requests(pod), -1)

    def place(self, pod: dict) -> SimNode | None:
        """First fit; the chosen node's free capacity is consumed."""
        constraints, request = constraints_of(pod), pod_requests(pod)
        for sim in self.nodes:
            if can_host(constraints, request, sim):
                add(sim.free, request, -1)
                return sim
        return None


def group_fits(group: ScalingGroup, pod: dict) -> bool:
    """Could the pod run on an empty node of this group at all?"""
    sim = SimNode(group.template(), dict(group.allocatable))
    return can_host(constraints_of(pod), pod_requests(pod), sim)
