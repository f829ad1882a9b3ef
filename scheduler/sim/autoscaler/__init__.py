"""Simulated cluster autoscalers (Cluster-Autoscaler-like and Karpenter-like) and the records
of their scale-ups, kept to measure false scale-ups and wasted node-time."""

from scheduler.sim.autoscaler.cluster_autoscaler import ClusterAutoscaler
from scheduler.sim.autoscaler.common import (
    NODE_GROUP_LABEL,
    SCALE_UP_ANNOTATION,
    NodeGroup,
    ca_is_unschedulable,
    ca_nominated_to_existing_node,
    karpenter_is_provisionable,
)
from scheduler.sim.autoscaler.karpenter import Karpenter
from scheduler.sim.autoscaler.records import Ledger, ScaleDown, ScaleUp, TriggeringPod

__all__ = [
    "NODE_GROUP_LABEL",
    "SCALE_UP_ANNOTATION",
    "ClusterAutoscaler",
    "Karpenter",
    "Ledger",
    "NodeGroup",
    "ScaleDown",
    "ScaleUp",
    "TriggeringPod",
    "ca_is_unschedulable",
    "ca_nominated_to_existing_node",
    "karpenter_is_provisionable",
]
